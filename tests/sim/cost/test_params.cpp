#include <gtest/gtest.h>

#include "sim/cost/params.h"
#include "test_support.h"

namespace starfish {
namespace {

// A shard of `tp` x `pp` at `stage` with `v` virtual stages, evenly laid out.
Shard shard_of(int tp, int pp, int stage, int v) {
  Shard s;
  s.tp = tp;
  s.pp = pp;
  s.stage = stage;
  s.virtual_stages = v;
  return s;
}

// GPT with learned positions, LayerNorm, biases, tied head: 12 L h^2 + 13 L h + (V + s) h + 2 h.
int64_t gpt_closed_form(const Model& m) {
  const int64_t L = m.layers, h = m.hidden, V = m.vocab, s = m.seq_len;
  return 12 * L * h * h + 13 * L * h + (V + s) * h + 2 * h;
}

TEST(Params, GptMatchesClosedFormExactly) {
  for (const Model& m : {testing::gpt(96, 12288, 96, 2048, 50257), testing::gpt(12, 768, 12, 1024, 50257),
                         testing::gpt(24, 2304, 24, 2048, 51200)}) {
    EXPECT_EQ(count_parameters(m).total, gpt_closed_form(m)) << m.layers;
  }
}

TEST(Params, Gpt3Is175BillionWithinOnePercent) {
  const double n = static_cast<double>(count_parameters(testing::gpt(96, 12288, 96, 2048, 50257)).total);
  EXPECT_NEAR(n / 175e9, 1.0, 0.01);
}

TEST(Params, Llama2SevenBillionExactly) {
  // 32 x (4 h^2 + 3 h f + 2 h) + 2 V h + h (untied head, RMSNorm, no biases): 6,738,415,616.
  EXPECT_EQ(count_parameters(testing::llama2_7b()).total, 6'738'415'616);
}

TEST(Params, GroupedQueryAttentionShrinksKeyValueProjections) {
  Model m = testing::llama2_7b();
  const int64_t mha = count_parameters(m).per_layer;
  m.kv_heads = 8;  // kv dim 1024 instead of 4096
  EXPECT_EQ(mha - count_parameters(m).per_layer, 2LL * 4096 * (4096 - 1024));
}

TEST(Params, TensorParallelShardsSumToTheWholeLayer) {
  const Model m = testing::gpt(4, 1024, 16, 512, 1000);
  const auto whole = parameter_tensors(m);
  const auto shard = parameter_tensors(m, shard_of(4, 1, 0, 1));
  ASSERT_EQ(whole.size(), shard.size());
  for (size_t i = 0; i < whole.size(); ++i) {
    EXPECT_EQ(shard[i].name, whole[i].name);
    EXPECT_EQ(shard[i].elements, whole[i].tp_split ? whole[i].elements / 4 : whole[i].elements) << whole[i].name;
  }
}

TEST(Params, PipelineStagesCoverEveryLayerOnceAndCopyTheTiedHead) {
  const Model m = testing::gpt(8, 256, 4, 128, 1000);
  int64_t sum = 0;
  std::vector<int> seen;
  for (int stage = 0; stage < 4; ++stage) {
    const Shard s = shard_of(1, 4, stage, 2);
    sum += shard_parameters(m, s);
    for (int l : stage_layers(m, s)) seen.push_back(l);
  }
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  // Interleaved v=2: stage 0 holds chunks 0 and 4, i.e. layers 0 and 4.
  EXPECT_EQ(stage_layers(m, shard_of(1, 4, 0, 2)), (std::vector<int>{0, 4}));
  // The last stage holds its own copy of the tied word embedding.
  EXPECT_EQ(sum, count_parameters(m).total + int64_t{m.vocab} * m.hidden);
}

TEST(Params, UnevenStagesHoldTheirOwnLayerRanges) {
  // 16 layers over PP2 x v2 as 6 + 10: each stage's layers split evenly over its two chunks, the
  // chunks in model order: stage 0 chunk 0 = 0-2, stage 1 chunk 0 = 3-7, stage 0 chunk 1 =
  // 8-10, stage 1 chunk 1 = 11-15.
  Model m = testing::gpt(16, 256, 4, 128, 1000);
  m.tied_embeddings = false;
  Plan p;
  p.pp = 2;
  p.virtual_stages = 2;
  p.stage_layers.per_stage = {6, 10};
  EXPECT_EQ(stage_layers(m, plan_shard(p, 0)), (std::vector<int>{0, 1, 2, 8, 9, 10}));
  EXPECT_EQ(stage_layers(m, plan_shard(p, 1)), (std::vector<int>{3, 4, 5, 6, 7, 11, 12, 13, 14, 15}));
  // Untied: the stages' parameters add up to the model's, and each holds its own layers'.
  const ParamCount n = count_parameters(m);
  const int64_t s0 = shard_parameters(m, plan_shard(p, 0)), s1 = shard_parameters(m, plan_shard(p, 1));
  EXPECT_EQ(s0 + s1, n.total);
  EXPECT_EQ(s0, n.word_embedding + n.position_embedding + 6 * n.per_layer);
  EXPECT_EQ(s1, 10 * n.per_layer + n.final_norm + n.output_head);
}

// Each layer variant adds or removes exactly its tensors (HF's Qwen2, Qwen3, Gemma 2, Falcon,
// BLOOM and OPT layouts).
TEST(Params, LayerVariantsAddExactlyTheirTensors) {
  const Model base = testing::llama2_7b();  // h 4096, 32 heads of 128, RMSNorm, no biases
  const int64_t layer = count_parameters(base).per_layer, total = count_parameters(base).total;
  Model qwen2 = base;
  qwen2.qkv_bias = true;  // q, k, v biases: 3 x 4096
  EXPECT_EQ(count_parameters(qwen2).per_layer - layer, 3 * 4096);
  Model qwen3 = base;
  qwen3.qk_norm = true;  // one head-wide RMSNorm weight each for q and k
  EXPECT_EQ(count_parameters(qwen3).per_layer - layer, 2 * 128);
  qwen3.norm = Norm::layernorm;  // LayerNorm has a bias too: 2 weights, 2 biases on each of 4 norms
  Model ln = base;
  ln.norm = Norm::layernorm;
  EXPECT_EQ(count_parameters(qwen3).per_layer - count_parameters(ln).per_layer, 4 * 128);
  Model gemma2 = base;
  gemma2.post_norms = true;  // two more hidden-wide norms
  EXPECT_EQ(count_parameters(gemma2).per_layer - layer, 2 * 4096);
  Model falcon = base;
  falcon.shared_input_norm = true;  // one norm fewer
  EXPECT_EQ(layer - count_parameters(falcon).per_layer, 4096);
  Model bloom = base;
  bloom.embedding_norm = true;
  EXPECT_EQ(count_parameters(bloom).total - total, 4096);
  EXPECT_EQ(parameter_tensors(bloom)[1].name, "embed.norm.weight");  // on the first stage, after the lookup
  Model opt = testing::gpt(2, 64, 4, 16, 100);
  const int64_t gpt_total = count_parameters(opt).total;
  opt.max_positions = 18;  // 16 + OPT's offset rows
  EXPECT_EQ(count_parameters(opt).total - gpt_total, 2 * 64);
  EXPECT_EQ(parameter_tensors(opt)[1].elements, 18 * 64);
}

TEST(Params, TensorsComeInOrderOfFirstUse) {
  const auto t = parameter_tensors(testing::gpt(2, 64, 4, 16, 100));
  EXPECT_EQ(t.front().name, "embed.word.weight");
  EXPECT_EQ(t[2].name, "layers.0.attn_norm.weight");
  EXPECT_EQ(t.back().name, "final_norm.bias");
}

}  // namespace
}  // namespace starfish

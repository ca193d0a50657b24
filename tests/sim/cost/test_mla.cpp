// Multi-head latent attention (Model::Mla, DeepSeek-V2/V3) against hand-computed cases: its
// tensors and their TP split, FLOPs, GEMM shapes, attention core, activations, the CP ring's bytes.
#include <gtest/gtest.h>

#include <string>

#include "sim/cost/activations.h"
#include "sim/cost/context_parallel.h"
#include "sim/cost/flops.h"
#include "sim/cost/op_time.h"
#include "sim/cost/params.h"
#include "test_support.h"

namespace starfish {
namespace {

// A small DeepSeek-like layer: hidden 1024, 8 heads; query latent 256, KV latent 128 plus a
// 32-wide RoPE key; per head 64 + 32 for queries and keys, 64 for values; 2048 tokens.
Model small_mla() {
  Model m = testing::llama2_7b();  // SwiGLU, RMSNorm, RoPE, untied, no biases, no dropout
  m.layers = 2;
  m.hidden = 1024;
  m.heads = m.kv_heads = 8;
  m.ffn_hidden = 2048;
  m.seq_len = 2048;
  m.vocab = 1000;
  m.mla = Mla{256, 128, 64, 32, 64};
  return m;
}

double op_forward_s(const std::vector<LayerOp>& ops, const std::string& name) {
  for (const LayerOp& op : ops)
    if (name == op.name) return op.forward_s;
  ADD_FAILURE() << name << " missing";
  return 0;
}

TEST(Mla, TensorsAndTheirTensorParallelSplit) {
  const Model m = small_mla();
  const int64_t h = 1024;
  const int64_t down = h * 256 + h * (128 + 32), norms = 256 + 128;
  const int64_t up = 256 * 8 * 96 + 128 * 8 * (64 + 64), out = 8 * 64 * h;
  const ParamCount c = count_parameters(m);
  EXPECT_EQ(c.per_layer, down + norms + up + out + 2 * h + 3 * h * 2048);
  // TP 2: the down projections and their norms whole on each rank, the up and out projections halved.
  Plan p;
  p.tp = 2;
  int64_t attention = 0;
  for (const ParamTensor& t : parameter_tensors(m, plan_shard(p, 0)))
    if (t.layer == 0 && (t.role == ParamRole::attention_qkv || t.role == ParamRole::attention_out ||
                         t.name.find("q_norm") != std::string::npos || t.name.find("kv_norm") != std::string::npos))
      attention += t.elements;
  EXPECT_EQ(attention, down + norms + (up + out) / 2);
}

TEST(Mla, FlopsCountTheLatentProjectionsAndTheTwoHeadWidths) {
  const Model m = small_mla();
  const double T = 2048, h = 1024, s = 2048;
  const LayerForwardFlops f = layer_forward_flops(m, 1);
  EXPECT_DOUBLE_EQ(f.qkv, 2 * T * (h * (256 + 128 + 32) + 256 * 8 * 96 + 128 * 8 * 128));
  EXPECT_DOUBLE_EQ(f.scores, 2 * T * s * 8 * 96);   // query/key width 64 + 32
  EXPECT_DOUBLE_EQ(f.context, 2 * T * s * 8 * 64);  // value width 64
  EXPECT_DOUBLE_EQ(f.attn_out, 2 * T * 8 * 64 * h);
}

TEST(Mla, GemmsRunAtTheirShapesAndAttentionAtBothWidths) {
  // TP 2 with SP: the down projections on each rank's 1024 tokens, the up projections on all
  // 2048 tokens for 4 of the 8 heads; flash attention's causal forward 0.5 x 2 s^2 (96 + 64) per head.
  const Cluster c = testing::dgx(1);
  const GpuSpec& gpu = c.node.gpu;
  const Model m = small_mla();
  LayerShape shape;
  shape.tp = 2;
  shape.sequence_parallel = true;
  shape.attention = Attention::flash;
  const std::vector<LayerOp> ops = layer_ops(gpu, DType::bf16, m, shape);
  EXPECT_DOUBLE_EQ(op_forward_s(ops, "MLA down-projection GEMM"), matmul_time_s(gpu, DType::bf16, 2 * 1024.0 * 1024 * 416));
  EXPECT_DOUBLE_EQ(op_forward_s(ops, "MLA up-projection GEMM"),
                   matmul_time_s(gpu, DType::bf16, 2 * 2048.0 * (256 * 8 * 96 + 128 * 8 * 128) / 2));
  const double each = 0.5 * 2 * 2048.0 * 2048 * (96 + 64);
  EXPECT_NEAR(op_forward_s(ops, "flash attention") / (each * 4 / (312e12 * gpu.matmul_efficiency.at(each))), 1.0, 1e-12);
  EXPECT_DOUBLE_EQ(op_forward_s(ops, "attention output GEMM"), matmul_time_s(gpu, DType::bf16, 2 * 2048.0 * 8 * 64 * 1024 / 2));
}

TEST(Mla, ActivationsKeepTheLatentsQKVAndContext) {
  // No recompute, TP 1, flash, 2-byte activations, 2048 tokens: norms' and GEMMs' inputs 4 x h,
  // the latents twice (norm input: 256 + 128; up-projection input: 256 + 128 + 32), Q K V
  // (768 + 768 + 512), the context (512), the SwiGLU MLP's 3 x 2048, the softmax statistics.
  const Model m = small_mla();
  const double T = 2048, B = 2;
  const double expected = B * T * (4 * 1024 + 384 + 416 + 768 + 768 + 512 + 512 + 3 * 2048) + 4.0 * 8 * T;
  EXPECT_DOUBLE_EQ(layer_activation_bytes(m, 1, ActivationOptions{1, false, Recompute::none, 2, Attention::flash}), expected);
}

TEST(Mla, TheUpProjectionAndLayernormModulesRebuildWhatTheyDiscard) {
  // Megatron-core's mla_up_proj recompute module discards Q, K, V (768 + 768 + 512 wide, 2048
  // tokens, 2 bytes) and redoes the up-projection GEMM in backward.
  const Model m = small_mla();
  ActivationOptions o{1, false, Recompute::selective, 2, Attention::flash};
  const double kept = layer_activation_bytes(m, 1, o);
  o.recompute_modules = recompute_module::core_attn | recompute_module::mla_up_proj;
  EXPECT_DOUBLE_EQ(kept - layer_activation_bytes(m, 1, o), 2.0 * 2048 * (768 + 768 + 512));
  LayerShape shape{1, 1, false, Attention::flash};
  shape.recompute_modules = recompute_module::mla_up_proj;
  const GpuSpec& g = testing::dgx(1).node.gpu;
  EXPECT_DOUBLE_EQ(layer_time(g, DType::bf16, m, shape, Recompute::selective).recompute_s,
                   op_forward_s(layer_ops(g, DType::bf16, m, shape), "MLA up-projection GEMM"));
  // MLA's input norm is its own module (Megatron-core's MLA layer spec): the layernorm module
  // discards its output, the down projections' input (2048 x 1024 x 2 bytes), and redoes it.
  o.recompute_modules = recompute_module::core_attn | recompute_module::layernorm;
  EXPECT_DOUBLE_EQ(kept - layer_activation_bytes(m, 1, o), 2.0 * 2048 * 1024);
  shape.recompute_modules = recompute_module::layernorm;
  EXPECT_DOUBLE_EQ(layer_time(g, DType::bf16, m, shape, Recompute::selective).recompute_s,
                   op_forward_s(layer_ops(g, DType::bf16, m, shape), "input norm"));
}

TEST(Mla, TheRingPassesEveryHeadsKeysAndValues) {
  // CP 2, TP 2: 1024 tokens x (8 x 96 + 8 x 64) / 2 x 2 bytes.
  Plan p;
  p.tp = 2;
  p.cp = 2;
  EXPECT_DOUBLE_EQ(cp_kv_block_bytes(small_mla(), p, 2), 1024.0 * (768 + 512) / 2 * 2);
}

}  // namespace
}  // namespace starfish

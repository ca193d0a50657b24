// Uneven pipeline stages: how a plan's layers spread over its stages and chunks, and the errors
// for layouts that do not fit.
#include <gtest/gtest.h>

#include "sim/spec/pipeline_layout.h"

namespace starfish {
namespace {

std::vector<int> counts(int layers, int pp, int v, const StageLayout& s) {
  std::vector<int> out;
  for (int st = 0; st < pp; ++st) out.push_back(stage_layer_count(layers, pp, v, s, st));
  return out;
}

TEST(PipelineLayout, Llama3With126LayersOverSixteenStagesHasLighterEnds) {
  // Llama 3 405B (Dubey et al. 2024, sec. 3.3.2): one layer fewer on the first and last stage.
  EXPECT_EQ(check_stage_layout(126, 16, 1, StageLayout{}).field, "plan.pipeline_parallel");
  const StageLayout s{7, 7, {}};
  EXPECT_EQ(check_stage_layout(126, 16, 1, s).field, "");
  std::vector<int> want(16, 8);
  want.front() = want.back() = 7;
  EXPECT_EQ(counts(126, 16, 1, s), want);
  EXPECT_EQ(max_stage_layers(126, 16, 1, s), 8);
  EXPECT_EQ(virtual_stage_layer_range(126, 16, 1, s, 1, 0).first, 7);
  EXPECT_EQ(virtual_stage_layer_range(126, 16, 1, s, 15, 0).first, 119);
  EXPECT_EQ(stage_layout_text(126, 16, 1, s), "7/8x14/7");
  // The search's proposal for a PP that does not divide the layers is that same layout.
  EXPECT_EQ(balanced_stage_layout(126, 16), s);
  EXPECT_EQ(balanced_stage_layout(80, 6), (StageLayout{12, 12, {}}));  // 12 + 4 x 14 + 12
  EXPECT_TRUE(balanced_stage_layout(96, 8).even());                     // it divides
  EXPECT_TRUE(balanced_stage_layout(5, 4).even());                      // no stage may be empty
}

TEST(PipelineLayout, OnlyAFirstOrLastStageMaySetItsOwnCount) {
  EXPECT_EQ(counts(10, 4, 1, StageLayout{1, 0, {}}), (std::vector<int>{1, 3, 3, 3}));
  EXPECT_EQ(counts(10, 4, 1, StageLayout{0, 4, {}}), (std::vector<int>{2, 2, 2, 4}));
}

TEST(PipelineLayout, InterleavedChunksSplitEachStageEvenly) {
  const StageLayout s{0, 0, {6, 10}};
  EXPECT_EQ(check_stage_layout(16, 2, 2, s).field, "");
  EXPECT_EQ(virtual_stage_layer_range(16, 2, 2, s, 0, 0).first, 0);
  EXPECT_EQ(virtual_stage_layer_range(16, 2, 2, s, 0, 0).count, 3);
  EXPECT_EQ(virtual_stage_layer_range(16, 2, 2, s, 1, 0).first, 3);
  EXPECT_EQ(virtual_stage_layer_range(16, 2, 2, s, 1, 0).count, 5);
  EXPECT_EQ(virtual_stage_layer_range(16, 2, 2, s, 0, 1).first, 8);
  EXPECT_EQ(virtual_stage_layer_range(16, 2, 2, s, 1, 1).first, 11);
  // 7 layers do not split over 2 virtual stages.
  const LayoutProblem odd = check_stage_layout(16, 2, 2, StageLayout{0, 0, {7, 9}});
  EXPECT_EQ(odd.field, "plan.stage_layers");
  EXPECT_EQ(odd.message, "7 layers on a stage do not divide over its 2 virtual stages");
}

TEST(PipelineLayout, LayoutsThatDoNotFitSayWhy) {
  EXPECT_EQ(check_stage_layout(16, 2, 1, StageLayout{0, 0, {6, 9}}).message,
            "the stages hold 15 layers in all, not the model's 16");
  EXPECT_EQ(check_stage_layout(16, 3, 1, StageLayout{0, 0, {6, 10}}).message,
            "lists 2 stages but pipeline_parallel is 3");
  EXPECT_EQ(check_stage_layout(16, 2, 1, StageLayout{0, 0, {0, 16}}).message,
            "every stage needs at least one layer, got 0");
  EXPECT_EQ(check_stage_layout(16, 4, 1, StageLayout{3, 0, {}}).message,
            "leaves 13 of the 16 layers, which do not divide evenly over the other 3 stages");
  EXPECT_EQ(check_stage_layout(16, 4, 1, StageLayout{8, 7, {}}).message,
            "leaves 1 of the 16 layers for the other 2 stages, which need at least one each");
  EXPECT_EQ(check_stage_layout(16, 1, 1, StageLayout{16, 0, {}}).message, "uneven stages need pipeline_parallel >= 2");
  EXPECT_EQ(check_stage_layout(16, 2, 1, StageLayout{8, 0, {8, 8}}).field, "plan.stage_layers");
  EXPECT_EQ(check_stage_layout(16, 2, 1, StageLayout{10, 6, {}}).field, "");  // no middle stage
}

TEST(PipelineLayout, EmbeddingAndLossSlotsLightenTheFirstAndLastVirtualStage) {
  // Megatron-Bridge's Llama 3.1 405B on H100 (TP8 CP2 PP8 VP8, account_for_embedding/loss_in_
  // pipeline_split): 126 layers + 2 slots = 128 over 64 virtual stages, 2 each, but 1 in the
  // model's first (stage 0, chunk 0: the embedding's) and last (stage 7, chunk 7: the loss's).
  StageLayout s;
  s.embedding_slot = s.loss_slot = true;
  EXPECT_FALSE(s.even());
  EXPECT_EQ(check_stage_layout(126, 8, 8, StageLayout{}).field, "plan.virtual_stages");
  EXPECT_EQ(check_stage_layout(126, 8, 8, s).field, "");
  std::vector<int> want(8, 16);
  want.front() = want.back() = 15;
  EXPECT_EQ(counts(126, 8, 8, s), want);
  EXPECT_EQ(virtual_stage_layer_range(126, 8, 8, s, 0, 0).count, 1);
  EXPECT_EQ(virtual_stage_layer_range(126, 8, 8, s, 1, 0).first, 1);
  EXPECT_EQ(virtual_stage_layer_range(126, 8, 8, s, 1, 0).count, 2);
  EXPECT_EQ(virtual_stage_layer_range(126, 8, 8, s, 0, 1).first, 15);  // 1 + 7 x 2
  EXPECT_EQ(virtual_stage_layer_range(126, 8, 8, s, 7, 7).first, 125);
  EXPECT_EQ(virtual_stage_layer_range(126, 8, 8, s, 7, 7).count, 1);
  EXPECT_EQ(max_virtual_stage_layers(126, 8, 8, s), 2);
  EXPECT_EQ(max_virtual_stage_layers(126, 16, 1, StageLayout{7, 7, {}}), 8);
  EXPECT_EQ(stage_layout_text(126, 8, 8, s), "15/16x6/15");
  EXPECT_EQ(slot_stage_layout(126, 8, 8), s);
  // Qwen3-235B (TP2 PP8 VP4 EP32): 94 + 2 = 96 over 32 virtual stages of 3.
  EXPECT_EQ(counts(94, 8, 4, s), (std::vector<int>{11, 12, 12, 12, 12, 12, 12, 11}));
  // The embedding's slot alone: 15 + 1 over 2 x 2 virtual stages of 4, 3 in the first.
  StageLayout e;
  e.embedding_slot = true;
  EXPECT_EQ(counts(15, 2, 2, e), (std::vector<int>{7, 8}));
  EXPECT_EQ(virtual_stage_layer_range(15, 2, 2, e, 1, 1).first, 11);
}

TEST(PipelineLayout, SlotLayoutsThatDoNotFitSayWhy) {
  StageLayout s;
  s.embedding_slot = s.loss_slot = true;
  const LayoutProblem odd = check_stage_layout(126, 8, 3, s);
  EXPECT_EQ(odd.field, "plan.embedding_in_pipeline_split");
  EXPECT_EQ(odd.message, "126 layers + 2 slots (embedding, loss) = 128 do not divide over pipeline_parallel 8 x "
                         "virtual_stages 3");
  // 128 slots over 128 virtual stages would leave the first and last without a layer.
  EXPECT_EQ(check_stage_layout(126, 8, 16, s).message,
            "the first or last virtual stage would hold no layer (128 slots over 128 virtual stages); Starfish's "
            "stages each run at least one");
  EXPECT_TRUE(slot_stage_layout(126, 8, 16).even());
  EXPECT_TRUE(slot_stage_layout(126, 1, 1).even());
  StageLayout l;
  l.loss_slot = true;
  l.first = 7;
  EXPECT_EQ(check_stage_layout(126, 8, 1, l).field, "plan.loss_in_pipeline_split");
  EXPECT_EQ(check_stage_layout(126, 8, 1, l).message,
            "Megatron-core counts the embedding and the loss as layers only for even stages; drop "
            "first_stage_layers / last_stage_layers / stage_layers");
}

}  // namespace
}  // namespace starfish

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

}  // namespace
}  // namespace starfish

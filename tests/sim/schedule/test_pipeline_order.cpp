#include <gtest/gtest.h>

#include <set>
#include <tuple>

#include "sim/schedule/pipeline_order.h"

namespace starfish::schedule {
namespace {

std::string render(const std::vector<PipelineOp>& ops) {
  std::string s;
  for (const auto& op : ops) {
    if (!s.empty()) s += ' ';
    s += (op.forward ? 'F' : 'B') + std::to_string(op.micro_batch);
    if (op.virtual_stage) s += "." + std::to_string(op.virtual_stage);
  }
  return s;
}

TEST(PipelineOrder, OneFOneBMatchesNarayananFigureFour) {
  // p = 4, m = 8: stage 0 warms up with 3 forwards, the last stage alternates from the start.
  EXPECT_EQ(render(stage_order(Schedule::one_f_one_b, 4, 0, 8, 1)),
            "F0 F1 F2 F3 B0 F4 B1 F5 B2 F6 B3 F7 B4 B5 B6 B7");
  EXPECT_EQ(render(stage_order(Schedule::one_f_one_b, 4, 3, 8, 1)),
            "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 F7 B7");
  // Fewer micro-batches than stages: warm-up is capped.
  EXPECT_EQ(render(stage_order(Schedule::one_f_one_b, 4, 0, 2, 1)), "F0 F1 B0 B1");
}

TEST(PipelineOrder, GpipeRunsAllForwardsFirst) {
  EXPECT_EQ(render(stage_order(Schedule::gpipe, 2, 1, 3, 1)), "F0 F1 F2 B0 B1 B2");
}

TEST(PipelineOrder, InterleavedFollowsMegatronChunkOrder) {
  // p = 2, v = 2, m = 4: stage 0 warms up with (2-0-1)*2 + (2-1)*2 = 4 chunk-forwards.
  EXPECT_EQ(render(stage_order(Schedule::interleaved, 2, 0, 4, 2)),
            "F0 F1 F0.1 F1.1 F2 B0.1 F3 B1.1 F2.1 B0 F3.1 B1 B2.1 B3.1 B2 B3");
}

TEST(PipelineOrder, EveryOpOnceForwardBeforeBackward) {
  for (Schedule sch : {Schedule::gpipe, Schedule::one_f_one_b, Schedule::interleaved})
    for (int p : {1, 2, 4, 8})
      for (int s = 0; s < p; ++s) {
        const int v = sch == Schedule::interleaved ? 3 : 1;
        const int m = 2 * p;
        const auto ops = stage_order(sch, p, s, m, v);
        ASSERT_EQ(ops.size(), static_cast<size_t>(2 * m * v));
        std::set<std::tuple<bool, int, int>> seen;
        for (const auto& op : ops) {
          EXPECT_TRUE(seen.insert({op.forward, op.micro_batch, op.virtual_stage}).second);
          if (!op.forward) {
            EXPECT_TRUE(seen.count({true, op.micro_batch, op.virtual_stage}));
          }
        }
      }
}

}  // namespace
}  // namespace starfish::schedule

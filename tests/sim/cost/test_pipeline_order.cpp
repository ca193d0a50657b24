#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <tuple>

#include "sim/cost/activations.h"
#include "sim/cost/pipeline_order.h"
#include "sim/cost/pipeline_slots.h"
#include "sim/spec/pipeline_layout.h"
#include "support/models.h"

namespace starfish {
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

TEST(PipelineOrder, TheClosedFormsCountWhatTheOrderHolds) {
  // What the analytic tier's memory assumes (sim/cost/pipeline_slots.h), counted on the order
  // the simulator runs: the forwards before the first backward, the most virtual stages held at
  // once, and the most micro-batches of virtual stage 0 the first stage holds (the embedding's).
  for (Schedule sch : {Schedule::gpipe, Schedule::one_f_one_b, Schedule::interleaved})
    for (int p : {1, 2, 3, 4, 8})
      for (int m : {1, 2, 3, 8, 16, 24})
        for (int v : {1, 2, 3, 4}) {
          if ((sch == Schedule::interleaved) != (v > 1) || (sch == Schedule::interleaved && m % p != 0)) continue;
          for (int s = 0; s < p; ++s) {
            const auto ops = stage_order(sch, p, s, m, v);
            int64_t warmup = 0, held = 0, most = 0, first_held = 0, first_most = 0;
            while (warmup < static_cast<int64_t>(ops.size()) && ops[static_cast<size_t>(warmup)].forward) ++warmup;
            for (const auto& op : ops) {
              held += op.forward ? 1 : -1;
              if (op.virtual_stage == 0) first_held += op.forward ? 1 : -1;
              most = std::max(most, held);
              first_most = std::max(first_most, first_held);
            }
            SCOPED_TRACE(::testing::Message() << to_string(sch) << " p " << p << " s " << s << " m " << m << " v " << v);
            // The first backward follows the warm-up's forwards and the first steady one.
            EXPECT_EQ(std::min<int64_t>(warmup_forwards(sch, p, s, m, v) + 1, int64_t{m} * v), warmup);
            EXPECT_DOUBLE_EQ(peak_in_flight_micro_batches(sch, p, s, m, v), static_cast<double>(most) / v);
            if (s == 0) EXPECT_EQ(first_virtual_stage_in_flight(sch, p, m, v), first_most);
          }
        }
}

TEST(PipelineOrder, PeakHeldLayersWalksTheOrderWithEachVirtualStagesSize) {
  // p = 2, v = 2, last stage, m = 4: F0.0 F1.0 F0.1 B0.1 F1.1 B1.1 F2.0 B0.0 F3.0 B1.0 F2.1 ...
  // Virtual stages of 1 and 3 layers: held 1 2 5 2 5 2 3 2 3 2 5 ..., at most 5 (the even share
  // of 1.5 micro-batches of 4 layers is 6; each held one counted as the largest, 9). Of 3 and 1:
  // 3 6 7 6 7 6 9 ..., at most 9. Many micro-batches walk the same first ops.
  auto sizes = [](int first, int second) { return [=](int c) { return c == 0 ? first : second; }; };
  for (const int64_t m : {4, 400}) {
    EXPECT_DOUBLE_EQ(peak_held_layers(Schedule::interleaved, 2, 1, m, 2, sizes(1, 3)), 5) << m;
    EXPECT_DOUBLE_EQ(peak_held_layers(Schedule::interleaved, 2, 1, m, 2, sizes(3, 1)), 9) << m;
  }
  EXPECT_DOUBLE_EQ(peak_held_layers(Schedule::interleaved, 2, 1, 2, 2, sizes(1, 3)), 5);  // F0.0 F1.0 F0.1 B0.1 F1.1 ...
}

TEST(PipelineOrder, TheActivationsHoldTheLayersTheOrderHoldsUnderSlots) {
  // With Megatron-core's embedding and loss slots a stage's virtual stages differ by a layer, and
  // which of them are held at once depends on the order: the analytic tier walks it
  // (peak_held_layers) and counts exactly the layers it holds at its most. It once took their
  // mean (the last stage, which holds its lighter loss virtual stage once and the others twice,
  // was under by up to a layer), then each held one as the largest (up to a layer over each:
  // Llama 3 405B TP8 PP16 v4 with the slots, 82.8 GiB estimated, 77.8 simulated).
  for (int p : {2, 3, 4})
    for (int v : {2, 3, 4}) {
      const int layers = 2 * p * v - 2;  // two layers a virtual stage, less the two slots
      const Model m = testing::gpt(layers, 256, 4, 256, 8);
      Plan plan;
      plan.framework = Framework::megatron_core;
      plan.pp = p;
      plan.schedule = Schedule::interleaved;
      plan.virtual_stages = v;
      plan.stage_layers.embedding_slot = true;
      plan.stage_layers.loss_slot = true;
      plan.recompute = Recompute::full;
      const double per_layer = plan_layer_activations(m, plan, 2).kept;
      for (const int mb : {p, 2 * p, 4 * p})
        for (int s = 0; s < p; ++s) {
          int held = 0, most = 0;
          for (const PipelineOp& op : stage_order(Schedule::interleaved, p, s, mb, v)) {
            const int n = virtual_stage_layer_count(layers, p, v, plan.stage_layers, s, op.virtual_stage);
            held += op.forward ? n : -n;
            most = std::max(most, held);
          }
          const StageActivations a = peak_stage_activations(m, plan, mb, 2, s);
          const double counted = a.layers_bytes / per_layer;
          EXPECT_NEAR(counted, most, 1e-9 * most) << "p " << p << " v " << v << " m " << mb << " stage " << s;
        }
    }
}

}  // namespace
}  // namespace starfish

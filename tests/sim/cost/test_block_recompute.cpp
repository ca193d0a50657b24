// Block recomputation (plan.recompute_layers: Megatron's --recompute-method block) against hand
// computations: which layers recompute, and that a plan recomputing N of each virtual stage's
// layers costs the none and full plans' layers in that mix -- time, activations and FLOPs.
#include <gtest/gtest.h>

#include <vector>

#include "sim/cost/activations.h"
#include "sim/cost/estimate.h"
#include "sim/cost/flops.h"
#include "sim/spec/job.h"
#include "sim/spec/pipeline_layout.h"
#include "test_support.h"

namespace starfish {
namespace {

// Megatron's block method recomputes the first N layers of each model chunk
// (transformer_block.py: `layer_idx < recompute_num_layers`, per TransformerBlock).
TEST(BlockRecompute, TheFirstLayersOfEachVirtualStageRecompute) {
  Plan p;
  p.pp = 2;
  p.virtual_stages = 2;
  p.schedule = Schedule::interleaved;
  p.recompute = Recompute::full;
  p.recompute_layers = 2;
  // 16 layers: virtual stages of 4 in model order s0v0 0-3, s1v0 4-7, s0v1 8-11, s1v1 12-15.
  const std::vector<bool> rc = recomputing_layers(16, p);
  const std::vector<bool> expected{true, true, false, false, true, true, false, false,
                                   true, true, false, false, true, true, false, false};
  EXPECT_EQ(rc, expected);
  EXPECT_EQ(stage_recomputing_layers_where(16, p, 0, [](int) { return true; }), 4);
  EXPECT_EQ(stage_recomputing_layers_where(16, p, 1, [](int l) { return l >= 12; }), 2);
  p.recompute_layers = 0;  // uniform: every layer
  EXPECT_EQ(stage_recomputing_layers_where(16, p, 1, [](int) { return true; }), 8);
  p.recompute = Recompute::none;
  EXPECT_EQ(stage_recomputing_layers_where(16, p, 1, [](int) { return true; }), 0);
}

struct Costs {
  Estimate estimate;
  StageActivations activations;
  IterationFlops flops;
};

// 8 GPT layers on TP 8 (one pipeline stage), batch 16, micro-batch 1.
Costs costs_of(Recompute recompute, int recompute_layers) {
  const Model m = testing::gpt(8, 2048, 16, 2048, 50257);
  Training t;
  t.global_batch = 16;
  Plan p;
  p.tp = 8;
  p.recompute = recompute;
  p.recompute_layers = recompute_layers;
  const Job job = make_job(m, testing::dgx(1), t, p);
  return Costs{estimate(job), peak_stage_activations(job.model, job.plan, job.micro_batches(), 2, 0),
               plan_iteration_flops(job.model, t.global_batch, job.plan)};
}

// On one stage the slot is linear in its layers: 3 of 8 recomputing layers cost the plan without
// recomputation plus 3/8 of what full recomputation adds, in compute, TP collectives and FLOPs;
// the 5 others keep all their activations.
TEST(BlockRecompute, ThreeOfEightLayersCostThreeEighthsOfFullRecomputation) {
  const Costs none = costs_of(Recompute::none, 0), full = costs_of(Recompute::full, 0), block = costs_of(Recompute::full, 3);
  const double share = 3.0 / 8;
  EXPECT_NEAR(block.estimate.time.compute_s,
              none.estimate.time.compute_s + share * (full.estimate.time.compute_s - none.estimate.time.compute_s), 1e-12);
  EXPECT_NEAR(block.estimate.time.tp_comm_s,
              none.estimate.time.tp_comm_s + share * (full.estimate.time.tp_comm_s - none.estimate.time.tp_comm_s), 1e-12);
  EXPECT_GT(full.estimate.time.tp_comm_s, none.estimate.time.tp_comm_s);
  EXPECT_DOUBLE_EQ(block.flops.model, none.flops.model);
  EXPECT_NEAR(block.flops.hardware, none.flops.hardware + share * (full.flops.hardware - none.flops.hardware),
              1e-9 * full.flops.hardware);
  // Activations: 3 layers keep their input (full recomputation's), 5 keep everything; the layer
  // being back-propagated rebuilds its activations beside them as under full recomputation.
  const double kept_full = none.activations.layers_bytes / 8, kept_input = full.activations.layers_bytes / 8;
  EXPECT_NEAR(block.activations.layers_bytes, 3 * kept_input + 5 * kept_full, 1e-6);
  EXPECT_DOUBLE_EQ(block.activations.recompute_working_bytes, full.activations.recompute_working_bytes);
  EXPECT_GT(block.estimate.gpu.activations_bytes, full.estimate.gpu.activations_bytes);
  EXPECT_LT(block.estimate.gpu.activations_bytes, none.estimate.gpu.activations_bytes);
}

// N at least the virtual stage's layers is full recomputation, to the byte and the second.
TEST(BlockRecompute, AsManyLayersAsTheStageHoldsIsFullRecomputation) {
  const Costs full = costs_of(Recompute::full, 0);
  for (int n : {8, 9}) {
    const Costs block = costs_of(Recompute::full, n);
    EXPECT_DOUBLE_EQ(block.estimate.time.iteration_s, full.estimate.time.iteration_s) << n;
    EXPECT_DOUBLE_EQ(block.estimate.gpu.activations_bytes, full.estimate.gpu.activations_bytes) << n;
    EXPECT_DOUBLE_EQ(block.flops.hardware, full.flops.hardware) << n;
  }
}

// The fewest recomputing layers that fit: on a GPU with room for full recomputation but not for
// none, the bisection's answer fits and one layer fewer does not.
TEST(BlockRecompute, TheFewestLayersThatFitAreFound) {
  const Model m = testing::gpt(8, 2048, 16, 2048, 50257);
  Training t;
  t.global_batch = 16;
  Plan p;
  p.tp = 8;
  p.recompute = Recompute::full;
  Cluster c = testing::dgx(1);
  const Estimate full = estimate(make_job(m, c, t, p));
  p.recompute = Recompute::none;
  const Estimate none = estimate(make_job(m, c, t, p));
  // Memory so that the usable capacity lies halfway between the two peaks.
  const double usable_share = full.gpu.capacity_bytes / static_cast<double>(c.node.gpu.memory_bytes);
  c.node.gpu.memory_bytes = static_cast<int64_t>((full.gpu.total() + none.gpu.total()) / 2 / usable_share);
  EXPECT_FALSE(estimate(make_job(m, c, t, p)).fits);
  p.recompute = Recompute::full;
  const Job job = make_job(m, c, t, p);
  ASSERT_TRUE(estimate(job).fits);
  const int n = fewest_fitting_recompute_layers(job);
  ASSERT_GE(n, 1);
  ASSERT_LE(n, 7);
  Job block = job;
  block.plan.recompute_layers = n;
  EXPECT_TRUE(estimate(block).fits) << n;
  EXPECT_LT(estimate(block).time.iteration_s, estimate(job).time.iteration_s);
  if (n > 1) {
    block.plan.recompute_layers = n - 1;
    EXPECT_FALSE(estimate(block).fits) << n;
  }
  // Not a question for a plan that already recomputes by block, nor for DeepSpeed's.
  EXPECT_EQ(fewest_fitting_recompute_layers(block), 0);
  Job deepspeed = job;
  deepspeed.plan.framework = Framework::deepspeed;
  EXPECT_EQ(fewest_fitting_recompute_layers(deepspeed), 0);
}

}  // namespace
}  // namespace starfish

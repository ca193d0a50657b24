#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "sim/cost/collectives.h"
#include "sim/cost/estimate.h"
#include "sim/spec/units.h"
#include "sim/cost/op_time.h"
#include "sim/cost/activations.h"
#include "sim/cost/params.h"
#include "test_support.h"

namespace starfish {
namespace {

Job job_of(Model m, Cluster c, int64_t batch, Plan p) {
  Training t;
  t.global_batch = batch;
  t.dtype = DType::bf16;
  return make_job(std::move(m), std::move(c), t, p);
}

TEST(Estimate, SingleGpuIterationIsComputePlusOptimizer) {
  Cluster c = testing::dgx(1);
  c.node.gpus = 1;
  const Model m = testing::gpt(4, 1024, 16, 1024, 1000);
  const Estimate e = estimate(job_of(m, c, 4, Plan{}));
  const LayerTime lt = layer_time(c.node.gpu, DType::bf16, m, plan_layer_shape(Plan{}), Recompute::none);
  const double per_mb = 4 * (lt.forward_s + lt.backward_s) + output_layer_time_s(c.node.gpu, DType::bf16, m, 1, 1, 52 /* Megatron loss */);
  // Micro-batches 2 to 4 add their bf16 weight gradients into the buffer: 3 x 2 bytes per parameter.
  const double accumulate = 3 * 2.0 * e.params_per_gpu / (c.node.gpu.hbm_bandwidth_Bps * c.node.gpu.hbm_efficiency);
  EXPECT_DOUBLE_EQ(e.time.compute_s, 4 * per_mb + 3 * accumulate);
  EXPECT_DOUBLE_EQ(e.time.dp_comm_s + e.time.tp_comm_s + e.time.pp_comm_s + e.time.bubble_s + e.time.offload_s, 0);
  EXPECT_DOUBLE_EQ(e.time.iteration_s, e.time.compute_s + e.time.optimizer_s);
  EXPECT_TRUE(e.fits);
}

// Hand-computed pipeline of `e`'s plan: each stage's slot per micro-batch is its layers'
// forward + backward, the output layer on the last stage, its gradient accumulation and its
// sends. Under 1F1B stage k finishes after the earlier stages' forwards of micro-batch 0, its own
// m slots, its wait for the first gradient (the later stages' slots less its warm-up forwards)
// and the earlier stages' backwards of the last micro-batch; the slowest of these is the
// iteration, and the bubble is what it adds to the m slots of the slowest stage.
struct HandPipeline {
  double slowest_layers = 0, slowest_accumulate_s = 0, bubble_s = 0;
};
HandPipeline hand_pipeline(const Model& m, const Plan& p, const Estimate& e, const Cluster& c) {
  const LayerTime lt = layer_time(c.node.gpu, DType::bf16, m, plan_layer_shape(p), Recompute::none);
  const double mb = static_cast<double>(e.micro_batches);
  const double pp_comm = e.time.pp_comm_s / mb;
  const double out = output_layer_time_s(c.node.gpu, DType::bf16, m, 1, 1, 52 /* Megatron loss */);
  std::vector<double> slot, fwd;
  HandPipeline h;
  double slowest = -1;
  for (int s = 0; s < p.pp; ++s) {
    const double layers = static_cast<double>(stage_layers(m, plan_shard(p, s)).size());
    const double acc = grad_accumulate_time_s(c.node.gpu, static_cast<double>(shard_parameters(m, plan_shard(p, s))), 2);
    const bool last = s == p.pp - 1;
    slot.push_back(layers * (lt.forward_s + lt.backward_s) + (last ? out : 0) + acc + pp_comm);
    fwd.push_back(layers * lt.forward_s + (last ? out / 3 : 0) + pp_comm / 2);
    if (slot.back() > slowest) {
      slowest = slot.back();
      h.slowest_layers = layers;
      h.slowest_accumulate_s = acc;
    }
  }
  double iteration = 0;
  for (int k = 0; k < p.pp; ++k) {
    double before_f = 0, before_b = 0, after = 0;
    for (int s = 0; s < k; ++s) before_f += fwd[s], before_b += slot[s] - fwd[s];
    for (int s = k + 1; s < p.pp; ++s) after += slot[s];
    const double wait = std::max(0.0, after - (p.pp - k - 1) * fwd[k]);
    iteration = std::max(iteration, before_f + mb * slot[k] + wait + before_b);
  }
  h.bubble_s = (iteration - mb * slowest) / p.virtual_stages;
  return h;
}

TEST(Estimate, PipelineBubbleIsTheOtherStagesSlots) {
  const Model m = testing::gpt(16, 1024, 16, 1024, 1000);
  Plan p;
  p.pp = 4;
  const Estimate e = estimate(job_of(m, testing::dgx(1), 32, p));
  EXPECT_EQ(e.micro_batches, 16);
  EXPECT_NEAR(e.time.bubble_s, hand_pipeline(m, p, e, testing::dgx(1)).bubble_s, 1e-12);
  p.schedule = Schedule::interleaved;
  p.virtual_stages = 2;
  const Estimate i = estimate(job_of(m, testing::dgx(1), 32, p));
  EXPECT_NEAR(i.time.bubble_s, hand_pipeline(m, p, i, testing::dgx(1)).bubble_s, 1e-12);
  // Equal stages but for the output layer and the embedding's parameters: close to (p - 1) / v
  // slots (Narayanan et al. 2021).
  const double slot = (e.time.compute_s + e.time.pp_comm_s) / 16;
  EXPECT_NEAR(e.time.bubble_s / (3 * slot), 1.0, 0.02);
  EXPECT_NEAR(i.time.bubble_s / (1.5 * slot), 1.0, 0.02);
}

TEST(Estimate, DeepPipelinesTakeTheSameCriticalPathAsTheStageByStageSum) {
  // Beyond 4 stages the estimate evaluates only the first, one middle and the last stage (the
  // middle ones being equal): the same bubble as the hand loop over every stage. 30 layers over
  // PP6 evenly, and over PP7 as 2 + 5 x 5 + 3.
  const Model m = testing::gpt(30, 1024, 16, 1024, 50000);
  Cluster c = testing::dgx(1);
  Plan even;
  even.pp = 6;
  c.node.gpus = 6;
  const Estimate e = estimate(job_of(m, c, 24, even));
  EXPECT_NEAR(e.time.bubble_s, hand_pipeline(m, even, e, c).bubble_s, 1e-12);
  Plan uneven;
  uneven.pp = 7;
  uneven.stage_layers = StageLayout{2, 3, {}};
  c.node.gpus = 7;
  const Estimate u = estimate(job_of(m, c, 24, uneven));
  EXPECT_NEAR(u.time.bubble_s, hand_pipeline(m, uneven, u, c).bubble_s, 1e-12);
}

TEST(Estimate, UnevenStagesArePacedByTheHeaviestAndHoldTheirOwnLayers) {
  // 14 layers over PP4 as 2 + 5 + 5 + 2 (Megatron-core's first/last stage layers): the middle
  // stages hold 5 layers and pace the pipeline; the light ends only add their slots to the bubble.
  const Model m = testing::gpt(14, 1024, 16, 1024, 1000);
  Plan p;
  p.pp = 4;
  p.stage_layers.first = 2;
  p.stage_layers.last = 2;
  const Cluster c = testing::dgx(1);
  const Estimate e = estimate(job_of(m, c, 32, p));
  const HandPipeline h = hand_pipeline(m, p, e, c);
  EXPECT_EQ(h.slowest_layers, 5);
  const LayerTime lt = layer_time(c.node.gpu, DType::bf16, m, plan_layer_shape(p), Recompute::none);
  EXPECT_NEAR(e.time.compute_s, 16 * 5 * (lt.forward_s + lt.backward_s) + 15 * h.slowest_accumulate_s, 1e-12);
  EXPECT_NEAR(e.time.bubble_s, h.bubble_s, 1e-12);
  // Activations in flight under 1F1B: p - s micro-batches of the stage's layers. Stage 0: 4 x 2
  // layers; stage 1: 3 x 5 layers, the peak.
  const double per_layer = layer_activation_bytes(m, 1, ActivationOptions{});
  EXPECT_DOUBLE_EQ(peak_stage_activations(m, p, 16, 2, 0).layers_bytes, 8 * per_layer);
  EXPECT_DOUBLE_EQ(peak_stage_activations(m, p, 16, 2, 1).layers_bytes, 15 * per_layer);
  EXPECT_DOUBLE_EQ(peak_stage_activations(m, p, 16, 2, 3).layers_bytes, 2 * per_layer);
  EXPECT_EQ(e.peak_stage, 1);
  EXPECT_DOUBLE_EQ(e.gpu.activations_bytes, peak_stage_activations(m, p, 16, 2, 1).total());
  EXPECT_DOUBLE_EQ(e.params_per_gpu, static_cast<double>(shard_parameters(m, plan_shard(p, 1))));
}

TEST(Estimate, TooBigModelSaysWhichTierOverflows) {
  const Estimate e = estimate(job_of(testing::gpt(96, 12288, 96, 2048, 50257), testing::dgx(1), 8, Plan{}));
  EXPECT_FALSE(e.fits);
  // Megatron keeps bf16 models' gradients in an fp32 main-grad buffer: 4 bytes to the params' 2.
  EXPECT_DOUBLE_EQ(e.gpu.grads_bytes, 2 * e.gpu.params_bytes);
  // The caching allocator's reserve: 15% of what it holds (reserved = allocated / 0.85).
  const double allocated = e.gpu.total() - e.gpu.allocator_bytes - e.gpu.communicator_bytes;
  EXPECT_NEAR(e.gpu.allocator_bytes, allocated / 0.85 - allocated, 1e-6 * allocated);
  EXPECT_EQ(e.why_not.rfind("GPU memory: needs " + units::human_bytes(e.gpu.total()) + " of 80.0 GiB", 0), 0u) << e.why_not;
  EXPECT_NE(e.why_not.find("allocator reserve"), std::string::npos) << e.why_not;
}

TEST(Estimate, ZeroThreeWithCpuOffloadFitsWhereDataParallelDoesNot) {
  const Model m = testing::gpt(40, 4096, 32, 1024, 50257);  // ~8B
  Plan p;
  EXPECT_FALSE(estimate(job_of(m, testing::dgx(1), 8, p)).fits);
  // DeepSpeed's ZeRO-3 with offload_optimizer: the grad partitions go to the CPU with it.
  p.framework = Framework::deepspeed;
  p.zero_stage = 3;
  p.offload.grads = Tier::cpu;
  p.offload.optimizer = Tier::cpu;
  const Estimate e = estimate(job_of(m, testing::dgx(1), 8, p));
  EXPECT_TRUE(e.fits) << e.why_not;
  EXPECT_GT(e.cpu.optimizer_bytes, 0);
  EXPECT_GT(e.time.offload_s, 0);
}

TEST(Estimate, ZeroTwoReduceScattersEveryMicroBatch) {
  // 8 GPUs of data parallelism, 4 micro-batches each, bf16 under Megatron: fp32 main grads.
  // ZeRO-1 (the distributed optimizer) reduce-scatters the fp32 gradients once and all-gathers
  // the bf16 params; ZeRO-2 (Megatron-core's FSDP, optim_grads) reduce-scatters after each of
  // the 4 backward passes, then all-gathers the updated params once: 3 reduce-scatters more.
  const Model m = testing::gpt(8, 1024, 16, 1024, 50257);
  const Cluster c = testing::dgx(1);
  Plan p;
  p.zero_stage = 1;
  const Estimate one = estimate(job_of(m, c, 32, p));
  ASSERT_EQ(one.micro_batches, 4);
  p.zero_stage = 2;
  p.framework = Framework::megatron_core;
  const Estimate two = estimate(job_of(m, c, 32, p));
  const double n = one.params_per_gpu;
  const LinkParams link = link_for_group(c, 8, 1);
  const double rs = collective_time_s(CollectiveKind::reduce_scatter, CollectiveAlgorithm::ring, 8, 4 * n, link);
  const double ag = collective_time_s(CollectiveKind::all_gather, CollectiveAlgorithm::ring, 8, 2 * n, link);
  EXPECT_GT(rs, ag);
  EXPECT_NEAR(one.time.dp_comm_s, rs + ag, 1e-12);
  EXPECT_NEAR(two.time.dp_comm_s, 4 * rs + ag, 1e-12);
  // ZeRO-0 all-reduces the fp32 gradients: a reduce-scatter and an all-gather of 4 bytes each.
  p.zero_stage = 0;
  p.framework = Framework::megatron_lm;
  const Estimate zero = estimate(job_of(m, c, 32, p));
  EXPECT_NEAR(zero.time.dp_comm_s, collective_time_s(CollectiveKind::all_reduce, CollectiveAlgorithm::ring, 8, 4 * n, link), 1e-12);
}

}  // namespace
}  // namespace starfish

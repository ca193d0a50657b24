#include <gtest/gtest.h>

#include "sim/cost/estimate.h"
#include "sim/spec/units.h"
#include "sim/cost/op_time.h"
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
  const LayerTime lt = layer_time(c.node.gpu, DType::bf16, m, 1, 1, false, Recompute::none);
  const double per_mb = 4 * (lt.forward_s + lt.backward_s) + output_layer_time_s(c.node.gpu, DType::bf16, m, 1, 1, 52 /* Megatron loss */);
  // Micro-batches 2 to 4 add their bf16 weight gradients into the buffer: 3 x 2 bytes per parameter.
  const double accumulate = 3 * 2.0 * e.params_per_gpu / (c.node.gpu.hbm_bandwidth_Bps * c.node.gpu.hbm_efficiency);
  EXPECT_DOUBLE_EQ(e.time.compute_s, 4 * per_mb + 3 * accumulate);
  EXPECT_DOUBLE_EQ(e.time.dp_comm_s + e.time.tp_comm_s + e.time.pp_comm_s + e.time.bubble_s + e.time.offload_s, 0);
  EXPECT_DOUBLE_EQ(e.time.iteration_s, e.time.compute_s + e.time.optimizer_s);
  EXPECT_TRUE(e.fits);
}

TEST(Estimate, PipelineBubbleIsPMinusOneOverVMicroBatches) {
  const Model m = testing::gpt(16, 1024, 16, 1024, 1000);
  Plan p;
  p.pp = 4;
  const Estimate e = estimate(job_of(m, testing::dgx(1), 32, p));
  EXPECT_EQ(e.micro_batches, 16);
  // A micro-batch slot of the stage, gradient accumulation included (the first micro-batch has none).
  auto slot = [](const Estimate& x) {
    const double accumulate = grad_accumulate_time_s(testing::dgx(1).node.gpu, x.params_per_gpu, 2);
    return (x.time.compute_s + accumulate + x.time.pp_comm_s) / 16;
  };
  EXPECT_NEAR(e.time.bubble_s, 3 * slot(e), 1e-12);
  p.schedule = Schedule::interleaved;
  p.virtual_stages = 2;
  const Estimate i = estimate(job_of(m, testing::dgx(1), 32, p));
  EXPECT_NEAR(i.time.bubble_s, 1.5 * slot(i), 1e-12);
}

TEST(Estimate, TooBigModelSaysWhichTierOverflows) {
  const Estimate e = estimate(job_of(testing::gpt(96, 12288, 96, 2048, 50257), testing::dgx(1), 8, Plan{}));
  EXPECT_FALSE(e.fits);
  // Megatron keeps bf16 models' gradients in an fp32 main-grad buffer: 4 bytes to the params' 2.
  EXPECT_DOUBLE_EQ(e.gpu.grads_bytes, 2 * e.gpu.params_bytes);
  // The caching allocator's reserve: 15% of what it holds (reserved = allocated / 0.85).
  const double allocated = e.gpu.total() - e.gpu.allocator_bytes;
  EXPECT_NEAR(e.gpu.allocator_bytes, allocated / 0.85 - allocated, 1e-6 * allocated);
  EXPECT_EQ(e.why_not.rfind("GPU memory: needs " + units::human_bytes(e.gpu.total()) + " of 80.0 GiB", 0), 0u) << e.why_not;
  EXPECT_NE(e.why_not.find("allocator reserve"), std::string::npos) << e.why_not;
}

TEST(Estimate, ZeroThreeWithCpuOffloadFitsWhereDataParallelDoesNot) {
  const Model m = testing::gpt(40, 4096, 32, 1024, 50257);  // ~8B
  Plan p;
  EXPECT_FALSE(estimate(job_of(m, testing::dgx(1), 8, p)).fits);
  p.zero_stage = 3;
  p.offload.optimizer = Tier::cpu;
  const Estimate e = estimate(job_of(m, testing::dgx(1), 8, p));
  EXPECT_TRUE(e.fits) << e.why_not;
  EXPECT_GT(e.cpu.optimizer_bytes, 0);
  EXPECT_GT(e.time.offload_s, 0);
}

TEST(Estimate, ZeroTwoReduceScattersEveryMicroBatch) {
  // 8 GPUs of data parallelism, 4 micro-batches each. ZeRO-1 reduces once (a ring all-reduce is a
  // reduce-scatter plus an all-gather of the same size); ZeRO-2 reduce-scatters after each of
  // the 4 backward passes, then all-gathers the updated params once: 3 reduce-scatters more.
  const Model m = testing::gpt(8, 1024, 16, 1024, 50257);
  Plan p;
  p.zero_stage = 1;
  const Estimate one = estimate(job_of(m, testing::dgx(1), 32, p));
  ASSERT_EQ(one.micro_batches, 4);
  p.zero_stage = 2;
  const Estimate two = estimate(job_of(m, testing::dgx(1), 32, p));
  EXPECT_GT(one.time.dp_comm_s, 0);
  EXPECT_NEAR(two.time.dp_comm_s - one.time.dp_comm_s, 3 * one.time.dp_comm_s / 2, 1e-12);
}

}  // namespace
}  // namespace starfish

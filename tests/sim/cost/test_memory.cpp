#include <gtest/gtest.h>

#include "sim/cost/memory.h"

namespace starfish {
namespace {

Training mixed_adam() {
  Training t;
  t.dtype = DType::fp16;
  t.optimizer = Optimizer::adam;
  return t;
}

TEST(Memory, MixedPrecisionAdamIsSixteenBytesAndChunkedFourteen) {
  EXPECT_DOUBLE_EQ(state_bytes_per_param(mixed_adam(), false).total(), 16);
  EXPECT_DOUBLE_EQ(state_bytes_per_param(mixed_adam(), true).total(), 14);
  Training fp32 = mixed_adam();
  fp32.dtype = DType::fp32;
  EXPECT_DOUBLE_EQ(state_bytes_per_param(fp32, false).total(), 16);  // param, grad, m, v
  EXPECT_DOUBLE_EQ(state_bytes_per_param(fp32, true).total(), 16);   // no spare copy to reuse
}

// Rajbhandari et al. 2020, Figure 1: Psi = 7.5B, Nd = 64, K = 12.
TEST(Memory, ZeroStagesReproduceTheZeroPaperFigureOne) {
  const double psi = 7.5e9;
  const double expected_gb[] = {120, 31.4, 16.6, 1.9};
  for (int stage = 0; stage <= 3; ++stage) {
    Plan p;
    p.zero_stage = stage;
    const ModelStates s = model_states(mixed_adam(), p, 64, psi, 0, 0);
    const double states = s.params.gpu + s.grads.gpu + s.optimizer.gpu;
    EXPECT_NEAR(states / 1e9, expected_gb[stage], 0.05) << "stage " << stage;
  }
}

TEST(Memory, OffloadMovesEachStateToItsTier) {
  Plan p;
  p.offload.optimizer = Tier::cpu;
  p.offload.grads = Tier::cpu;
  const ModelStates s = model_states(mixed_adam(), p, 1, 1e9, 1e7, 0);
  EXPECT_DOUBLE_EQ(s.params.gpu, 2e9);
  EXPECT_DOUBLE_EQ(s.grads.cpu, 2e9);
  EXPECT_DOUBLE_EQ(s.optimizer.cpu, 12e9);
  EXPECT_DOUBLE_EQ(s.optimizer.gpu, 0);
  EXPECT_DOUBLE_EQ(s.gpu_working_bytes, 0);  // params stay resident
  p.offload.params = Tier::nvme;
  const ModelStates n = model_states(mixed_adam(), p, 1, 1e9, 1e7, 0);
  EXPECT_DOUBLE_EQ(n.params.nvme, 2e9);
  EXPECT_DOUBLE_EQ(n.gpu_working_bytes, 2 * 1e7 * 4);  // two layers of params + grads
}

TEST(Memory, ChunkedGradsLiveInTheParamChunks) {
  Plan p;
  p.chunk_elements = 64LL << 20;
  p.offload.params = Tier::cpu;
  p.offload.optimizer = Tier::cpu;
  const ModelStates s = model_states(mixed_adam(), p, 1, 1e9, 1e7, 2.0 * (64LL << 20));
  EXPECT_DOUBLE_EQ(s.params.cpu, 2e9);
  EXPECT_DOUBLE_EQ(s.grads.cpu + s.grads.gpu + s.grads.nvme, 0);
  EXPECT_DOUBLE_EQ(s.gpu_working_bytes, 2 * 2.0 * (64LL << 20));  // two chunks
}

}  // namespace
}  // namespace starfish

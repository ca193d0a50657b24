#include <gtest/gtest.h>

#include "sim/cost/memory.h"

#include <stdexcept>

#include "sim/cost/chunk_layout.h"

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
    const ModelStates s = model_states(mixed_adam(), p, 64, psi, 0, nullptr);
    const double states = s.params.gpu + s.grads.gpu + s.optimizer.gpu;
    EXPECT_NEAR(states / 1e9, expected_gb[stage], 0.05) << "stage " << stage;
  }
}

TEST(Memory, OffloadMovesEachStateToItsTier) {
  Plan p;
  p.offload.optimizer = Tier::cpu;
  p.offload.grads = Tier::cpu;
  const ModelStates s = model_states(mixed_adam(), p, 1, 1e9, 1e7, nullptr);
  EXPECT_DOUBLE_EQ(s.params.gpu, 2e9);
  EXPECT_DOUBLE_EQ(s.grads.cpu, 2e9);
  EXPECT_DOUBLE_EQ(s.optimizer.cpu, 12e9);
  EXPECT_DOUBLE_EQ(s.optimizer.gpu, 0);
  EXPECT_DOUBLE_EQ(s.gpu_working_bytes, 0);  // params stay resident
  p.offload.params = Tier::nvme;
  const ModelStates n = model_states(mixed_adam(), p, 1, 1e9, 1e7, nullptr);
  EXPECT_DOUBLE_EQ(n.params.nvme, 2e9);
  EXPECT_DOUBLE_EQ(n.gpu_working_bytes, 2 * 1e7 * 4);  // two layers of params + grads
}

TEST(Memory, ChunkedGradsLiveInTheParamChunks) {
  Plan p;
  p.chunk_elements = 64LL << 20;
  p.offload.params = Tier::cpu;
  p.offload.optimizer = Tier::cpu;
  // The layout's kept chunks (padding included), not the shard's parameter count, are what the
  // rank holds; the GPU keeps room for the busiest moment's chunks.
  ChunkFootprint chunks;
  chunks.kept_param_elements = 16 * (64LL << 20);
  chunks.moment_bytes = 2 * 2 * (64LL << 20);
  const ModelStates s = model_states(mixed_adam(), p, 1, 1e9, 1e7, &chunks);
  EXPECT_DOUBLE_EQ(s.params.cpu, 2.0 * 16 * (64LL << 20));
  EXPECT_DOUBLE_EQ(s.optimizer.cpu, 12.0 * 16 * (64LL << 20));
  EXPECT_DOUBLE_EQ(s.grads.cpu + s.grads.gpu + s.grads.nvme, 0);
  EXPECT_DOUBLE_EQ(s.gpu_working_bytes, 2.0 * 2 * (64LL << 20));  // two chunks
  EXPECT_THROW(model_states(mixed_adam(), p, 1, 1e9, 1e7, nullptr), std::logic_error);
}

TEST(Memory, ChunkedStatesPoolTheGpuMarginTheHostAndNvme) {
  // 100 B of params and 600 B of optimizer states on a GPU of 1000 with 700 taken by activations
  // and 100 by the busiest moment's chunks: params fill 100 of the 200 left, states the other
  // 100; the host (450, less room for one moment's chunks, 50) takes 400, NVMe the last 100.
  ModelStates in;
  in.params.gpu = 100;
  in.optimizer.cpu = 600;
  in.gpu_working_bytes = 100;  // the caller's copy of chunks.moment_bytes; here they differ
  ChunkFootprint chunks;
  chunks.moment_bytes = 50;
  const ModelStates s = place_chunked_states(in, chunks, 700, TierBytes{1000, 450, 1000});
  EXPECT_DOUBLE_EQ(s.params.gpu, 100);
  EXPECT_DOUBLE_EQ(s.optimizer.gpu, 100);
  EXPECT_DOUBLE_EQ(s.optimizer.cpu, 400);
  EXPECT_DOUBLE_EQ(s.optimizer.nvme, 100);
  EXPECT_DOUBLE_EQ(s.total_gpu(), 1000 - 700);
  // Nowhere to go: the rest is reported on the host, over its capacity.
  const ModelStates over = place_chunked_states(in, chunks, 700, TierBytes{1000, 450, 0});
  EXPECT_DOUBLE_EQ(over.optimizer.cpu, 400 + 100);
}

// A CPU embedding (sim/cost/cpu_embedding.h) stays on the host beside the chunks: its fp32 param,
// grad and moments (4 + 4 + 8 bytes per parameter) count there and take the host's room first.
TEST(Memory, ACpuEmbeddingStaysOnTheHostAndTakesItsRoomFirst) {
  Plan p;
  p.chunk_elements = 64LL << 20;
  p.offload.optimizer = Tier::cpu;
  ChunkFootprint chunks;
  chunks.kept_param_elements = 100;
  chunks.moment_bytes = 50;
  chunks.cpu_embedding_elements = 10;
  chunks.cpu_embedding_host_bytes = 160;
  const ModelStates s = model_states(mixed_adam(), p, 1, 1e9, 1e7, &chunks);
  EXPECT_DOUBLE_EQ(s.params.gpu, 2.0 * 100);
  EXPECT_DOUBLE_EQ(s.params.cpu, 4.0 * 10);
  EXPECT_DOUBLE_EQ(s.grads.cpu, 4.0 * 10);
  EXPECT_DOUBLE_EQ(s.optimizer.cpu, 12.0 * 100 + 8 * 10);
  // GPU 1000 with 700 taken (every chunk resident, one rank: no room kept for a moment): the 200 B
  // of param chunks and 100 of the states fill the 300 left; the host (1500, less 50 for a
  // moment's chunks and the embedding's 160) takes the other 1100 of the chunks' states.
  const ModelStates placed = place_chunked_states(s, chunks, 700, TierBytes{1000, 1500, 0});
  EXPECT_DOUBLE_EQ(placed.params.gpu, 200);
  EXPECT_DOUBLE_EQ(placed.params.cpu, 40);
  EXPECT_DOUBLE_EQ(placed.grads.cpu, 40);
  EXPECT_DOUBLE_EQ(placed.optimizer.gpu, 100);
  EXPECT_DOUBLE_EQ(placed.optimizer.cpu, 1100 + 80);
  // A host of 1000: the embedding's 160 first, then 790 of the states; the rest is reported on the
  // host, over its capacity.
  const ModelStates over = place_chunked_states(s, chunks, 700, TierBytes{1000, 1000, 0});
  EXPECT_DOUBLE_EQ(over.optimizer.cpu, 1100 + 80);
  EXPECT_GT(over.params.cpu + over.grads.cpu + over.optimizer.cpu, 1000.0);
}

}  // namespace
}  // namespace starfish

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

// torchtitan's pipelined FSDP (torch.distributed.pipelining) syncs a stage's gradients on its
// last backward only; until then FSDP2 keeps each unsharded gradient in the reduce dtype (fp32
// under FSDP's defaults): the stage's whole gradient, 4 bytes a parameter, on top of its shard.
// Not with one micro-batch (its backward is the last), without PP, or under other frameworks.
TEST(Memory, PipelinedFsdpAccumulatesTheStagesWholeGradientUnsharded) {
  Training t = mixed_adam();
  t.dtype = DType::bf16;
  t.global_batch = 64;
  Plan p;
  p.framework = Framework::fsdp;
  p.zero_stage = 3;
  p.pp = 4;
  p.dp = 8;
  p.micro_batch = 2;  // 64 / (2 x 8) = 4 micro-batches
  const double n = 1e9;
  Plan flat = p;
  flat.pp = 1;
  const double sharded = model_states(t, flat, 8, n, 1e7, nullptr).grads.gpu;
  EXPECT_DOUBLE_EQ(model_states(t, p, 8, n, 1e7, nullptr).grads.gpu, sharded + 4 * n);
  Plan one = p;
  one.micro_batch = 8;  // one micro-batch
  EXPECT_DOUBLE_EQ(model_states(t, one, 8, n, 1e7, nullptr).grads.gpu, sharded);
  Plan ds = p;
  ds.framework = Framework::megatron_core;
  EXPECT_DOUBLE_EQ(model_states(t, ds, 8, n, 1e7, nullptr).grads.gpu, model_states(t, [&] {
                     Plan f = ds;
                     f.pp = 1;
                     return f;
                   }(), 8, n, 1e7, nullptr).grads.gpu);
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
  // rank holds; the GPU keeps room for the ZeRO working set.
  ChunkFootprint chunks;
  chunks.kept_param_elements = 16 * (64LL << 20);
  chunks.working_bytes = 2 * 2 * (64LL << 20);
  const ModelStates s = model_states(mixed_adam(), p, 1, 1e9, 1e7, &chunks);
  EXPECT_DOUBLE_EQ(s.params.cpu, 2.0 * 16 * (64LL << 20));
  EXPECT_DOUBLE_EQ(s.optimizer.cpu, 12.0 * 16 * (64LL << 20));
  EXPECT_DOUBLE_EQ(s.grads.cpu + s.grads.gpu + s.grads.nvme, 0);
  EXPECT_DOUBLE_EQ(s.gpu_working_bytes, 2.0 * 2 * (64LL << 20));  // two chunks
  EXPECT_THROW(model_states(mixed_adam(), p, 1, 1e9, 1e7, nullptr), std::logic_error);
}

// Four optimizer-state units of 150 B, each with 25 B of param chunks, on a GPU of 1000 with
// 650 taken by activations and buffers and 100 by the ZeRO working set: the params take 100 of
// the 350 left, one whole unit the 150 margin. The three stepped off the GPU keep their param
// chunks' 75 B on the host (450), which, unable to hold them all, keeps one unit's 150 free for
// staging: one unit there, two on NVMe.
ChunkFootprint four_units(int64_t working_bytes) {
  ChunkFootprint chunks;
  chunks.units.assign(4, StateUnit{150, 25});
  chunks.working_bytes = working_bytes;
  return chunks;
}

ModelStates four_units_states() {
  ModelStates in;
  in.params.gpu = 100;
  in.optimizer.cpu = 600;
  in.gpu_working_bytes = 100;
  return in;
}

TEST(Memory, ChunkedStatesTakeTheGpuMarginInWholeUnitsThenTheHostAndNvme) {
  const ModelStates s = place_chunked_states(four_units_states(), four_units(100), 650, TierBytes{1000, 450, 1000});
  EXPECT_DOUBLE_EQ(s.params.gpu, 100);
  EXPECT_DOUBLE_EQ(s.params.cpu, 75);
  EXPECT_DOUBLE_EQ(s.optimizer.gpu, 150);
  EXPECT_DOUBLE_EQ(s.optimizer.cpu, 150);
  EXPECT_DOUBLE_EQ(s.optimizer.nvme, 300);
  EXPECT_DOUBLE_EQ(s.total_gpu(), 1000 - 650);
  EXPECT_DOUBLE_EQ(s.chunk_shares.optimizer_off_gpu, 0.75);
  EXPECT_DOUBLE_EQ(s.chunk_shares.optimizer_nvme, 0.5);
  EXPECT_DOUBLE_EQ(s.chunk_shares.params_spilled, 0);
  // Nowhere to go: the rest is reported on the host, over its capacity.
  const ModelStates over = place_chunked_states(four_units_states(), four_units(100), 650, TierBytes{1000, 450, 0});
  EXPECT_DOUBLE_EQ(over.optimizer.cpu, 150 + 300);
  EXPECT_GT(over.params.cpu + over.optimizer.cpu, 450);
}

// A margin short of a whole unit holds none (the time model steps every unit on the host), but
// the GPU figure counts the margin as filled: the runtime's trace may leave it a unit's room.
TEST(Memory, AMarginShortOfAUnitStepsEveryUnitOnTheHostButCountsTheMarginFilled) {
  const ModelStates s = place_chunked_states(four_units_states(), four_units(100), 660, TierBytes{1000, 1000, 0});
  EXPECT_DOUBLE_EQ(s.optimizer.gpu, 140);
  EXPECT_DOUBLE_EQ(s.optimizer.cpu, 600);
  EXPECT_DOUBLE_EQ(s.params.cpu, 100);  // every unit's param chunk comes to the host for its step
  EXPECT_DOUBLE_EQ(s.chunk_shares.optimizer_off_gpu, 1);
  EXPECT_DOUBLE_EQ(s.total_gpu(), 1000 - 660);
}

// Param chunks and the working set beyond the GPU's chunk room spill to the host and are fetched
// at each use; the GPU still holds each step's chunks.
TEST(Memory, ParamChunksBeyondTheGpuRoomSpillToTheHost) {
  ChunkFootprint chunks = four_units(100);
  chunks.step_bytes = 200;
  const ModelStates s = place_chunked_states(four_units_states(), chunks, 820, TierBytes{1000, 1000, 0});
  // 180 for chunks: the working set's 100 leaves 80 of the 100 B of params; 20 spill.
  EXPECT_DOUBLE_EQ(s.params.gpu, 80);
  EXPECT_DOUBLE_EQ(s.chunk_shares.params_spilled, 0.2);
  EXPECT_DOUBLE_EQ(s.params.cpu, 100);  // the spilled 20, or every unit's 25 stepped there: more
  EXPECT_DOUBLE_EQ(s.gpu_working_bytes, 120);  // a step's 200 of chunks, 80 of them kept
  EXPECT_GT(s.total_gpu() + 820, 1000.0);  // so the plan does not fit
}

// A CPU embedding (sim/cost/cpu_embedding.h) stays on the host beside the chunks: its fp32 param,
// grad and moments (4 + 4 + 8 bytes per parameter) count there and take the host's room first.
TEST(Memory, ACpuEmbeddingStaysOnTheHostAndTakesItsRoomFirst) {
  Plan p;
  p.chunk_elements = 64LL << 20;
  p.offload.optimizer = Tier::cpu;
  ChunkFootprint chunks;
  chunks.kept_param_elements = 100;
  chunks.units.assign(4, StateUnit{300, 50});
  chunks.cpu_embedding_elements = 10;
  chunks.cpu_embedding_host_bytes = 160;
  const ModelStates s = model_states(mixed_adam(), p, 1, 1e9, 1e7, &chunks);
  EXPECT_DOUBLE_EQ(s.params.gpu, 2.0 * 100);
  EXPECT_DOUBLE_EQ(s.params.cpu, 4.0 * 10);
  EXPECT_DOUBLE_EQ(s.grads.cpu, 4.0 * 10);
  EXPECT_DOUBLE_EQ(s.optimizer.cpu, 12.0 * 100 + 8 * 10);
  // GPU 1000 with 700 taken (every chunk resident, one rank: no working set): the 200 B of param
  // chunks leave a margin of 100, short of a unit: all four step on the host, which (1700, less
  // the embedding's 160 and the stepped units' 200 of param chunks) holds their 1200.
  const ModelStates placed = place_chunked_states(s, chunks, 700, TierBytes{1000, 1700, 0});
  EXPECT_DOUBLE_EQ(placed.params.gpu, 200);
  EXPECT_DOUBLE_EQ(placed.params.cpu, 200 + 40);
  EXPECT_DOUBLE_EQ(placed.grads.cpu, 40);
  EXPECT_DOUBLE_EQ(placed.optimizer.gpu, 100);
  EXPECT_DOUBLE_EQ(placed.optimizer.cpu, 1200 + 80);
  // A host of 1000: the embedding's 160 and the param chunks' 200 first, then one unit and its
  // staging room; the rest is reported on the host, over its capacity.
  const ModelStates over = place_chunked_states(s, chunks, 700, TierBytes{1000, 1000, 0});
  EXPECT_DOUBLE_EQ(over.optimizer.cpu, 1200 + 80);
  EXPECT_GT(over.params.cpu + over.grads.cpu + over.optimizer.cpu, 1000.0);
}

}  // namespace
}  // namespace starfish

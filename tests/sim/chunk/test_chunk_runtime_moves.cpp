// Exact move sequences of the chunk runtime on a hand-built model: three layers of one
// 100-element tensor, chunks of 100 elements (one per layer), bf16 + Adam, so a param chunk is
// 200 bytes and its optimizer states (master, momentum, variance) 3 x 400 bytes.
#include <gtest/gtest.h>

#include "sim/chunk/iteration_driver.h"
#include "sim/chunk/reference_backend.h"
#include "sim/spec/error.h"
#include "tests/sim/chunk/hand_model.h"

namespace starfish {
namespace {

ChunkLayout three_chunks() {
  return ChunkLayout::build(test::one_tensor_layers(3, 100), LayoutOptions{100, DType::bf16, Optimizer::adam, 1});
}

RuntimeOptions budget(int64_t gpu, int64_t cpu, int64_t nvme = 0) {
  RuntimeOptions o;
  o.budget = {gpu, cpu, nvme};
  return o;
}

std::vector<Move> moves_of_iteration(const std::vector<Move>& all, size_t from) {
  return std::vector<Move>(all.begin() + static_cast<long>(from), all.end());
}

Move mv(Moment t, int chunk, Tier from, Tier to, int64_t bytes, MoveReason why) {
  return Move{0, t, chunk, "copy", from, to, bytes, why};
}

constexpr Tier G = Tier::gpu, C = Tier::cpu, N = Tier::nvme;

// GPU of 400 bytes = two param chunks, no non-model memory; moments are
// F0 F1 F2 B2 B1 B0 O0 O1 O2 (0..8). Worked out in the comments.
TEST(ChunkRuntimeMoves, WarmUpIsLruAndLaterIterationsEvictFarthestNextUseAndPrefetch) {
  const ChunkLayout layout = three_chunks();
  ReferenceBackend backend(400, 100000);
  ChunkRuntime rt(layout, budget(400, 100000), backend);
  IterationDriver driver(rt, false);
  FixedNonModel hooks(0);

  driver.run_iteration(hooks);
  const std::vector<Move> warmup = {
      mv(0, 0, C, G, 200, MoveReason::access),     // F0: everything starts on the CPU
      mv(1, 1, C, G, 200, MoveReason::access),     // F1
      mv(2, 0, G, C, 200, MoveReason::eviction),   // F2: full; LRU picks chunk 0
      mv(2, 2, C, G, 200, MoveReason::access),
      mv(5, 2, G, C, 200, MoveReason::eviction),   // B0: chunk 2 (used at B2) is older than 1 (B1)
      mv(5, 0, C, G, 200, MoveReason::access),
      mv(6, 0, G, C, 200, MoveReason::optimizer),  // O0: states are on the CPU, so is the step
      mv(7, 1, G, C, 200, MoveReason::optimizer),  // O1 (chunk 2 is on the CPU already)
  };
  EXPECT_EQ(rt.moves(), warmup);
  // Placement: 600 bytes of params fill more than the 400-byte GPU: no margin, states stay.
  EXPECT_EQ(rt.placement().gpu_margin_bytes, 0);
  for (int c = 0; c < 3; ++c) EXPECT_EQ(rt.placement().tier[c], C);

  const size_t before = rt.moves().size();
  driver.run_iteration(hooks);
  const std::vector<Move> steady = {
      mv(0, 0, C, G, 200, MoveReason::access),     // F0
      mv(0, 1, C, G, 200, MoveReason::prefetch),   // for F1, fits
      mv(1, 0, G, C, 200, MoveReason::eviction),   // for F2: chunk 0 next at B0 (5), 1 at B1 (4)
      mv(1, 2, C, G, 200, MoveReason::prefetch),
      mv(4, 2, G, C, 200, MoveReason::eviction),   // for B0: chunk 2 next at O2 (8), 1 at O1 (7)
      mv(4, 0, C, G, 200, MoveReason::prefetch),
      mv(6, 0, G, C, 200, MoveReason::optimizer),
      mv(7, 1, G, C, 200, MoveReason::optimizer),
  };
  EXPECT_EQ(moves_of_iteration(rt.moves(), before), steady);
  // The backend saw the same bytes: 4 + 4 moves each way, 200 bytes each.
  EXPECT_EQ(backend.copied(C, G), 8 * 200);
  EXPECT_EQ(backend.copied(G, C), 8 * 200);
  EXPECT_EQ(backend.bytes_for(MoveReason::prefetch), 3 * 200);
  EXPECT_EQ(backend.peak(G), 400);
}

}  // namespace
}  // namespace starfish

namespace starfish {
namespace {

TEST(ChunkRuntimeMoves, SmallCpuPushesOptimizerStatesToNvmeAndStagesTheirSteps) {
  // CPU 3200: 600 for params, 2600 left < 3600 of states, so one 1200-byte unit of staging is
  // kept: unit 0 fits the CPU (1400 left), units 1 and 2 go to NVMe.
  const ChunkLayout layout = three_chunks();
  ReferenceBackend backend(400, 3200, 1 << 20);
  ChunkRuntime rt(layout, budget(400, 3200, 1 << 20), backend);
  IterationDriver driver(rt, false);
  FixedNonModel hooks(0);
  driver.run_iteration(hooks);
  EXPECT_EQ(rt.placement().tier[0], C);
  EXPECT_EQ(rt.placement().tier[1], N);
  EXPECT_EQ(rt.placement().tier[2], N);
  const int64_t read = backend.copied(N, C), written = backend.copied(C, N);
  driver.run_iteration(hooks);
  // Each NVMe unit is read for its step and written back: 2 units x 1200 bytes each way.
  EXPECT_EQ(backend.copied(N, C) - read, 2 * 1200);
  EXPECT_EQ(backend.copied(C, N) - written, 2 * 1200);
  EXPECT_EQ(rt.in_use(N), 2 * 1200);
  EXPECT_LE(backend.peak(C), 3200);
}

TEST(ChunkRuntimeMoves, OptimizerStatesGoToTheGpuAsFarAsTheMarginAllows) {
  // GPU 1900 - 600 of params = 1300 margin: unit 0 (1200) fits, unit 1 does not.
  const ChunkLayout layout = three_chunks();
  ReferenceBackend backend(1900, 100000);
  ChunkRuntime rt(layout, budget(1900, 100000), backend);
  IterationDriver driver(rt, false);
  FixedNonModel hooks(0);
  driver.run_iteration(hooks);
  EXPECT_EQ(rt.placement().gpu_margin_bytes, 1300);
  EXPECT_EQ(rt.placement().tier[0], G);
  EXPECT_EQ(rt.placement().tier[1], C);
  // The placement moves after the warm-up: master, momentum, variance of chunk 0 (ids 3, 6, 9).
  const std::vector<Move> tail(rt.moves().end() - 3, rt.moves().end());
  EXPECT_EQ(tail, (std::vector<Move>{mv(9, 3, C, G, 400, MoveReason::placement), mv(9, 6, C, G, 400, MoveReason::placement),
                                     mv(9, 9, C, G, 400, MoveReason::placement)}));
  const size_t before = rt.moves().size();
  driver.run_iteration(hooks);
  // Everything fits: params come once (access, then prefetch) and chunk 0 is stepped on the GPU.
  EXPECT_EQ(moves_of_iteration(rt.moves(), before),
            (std::vector<Move>{mv(0, 0, C, G, 200, MoveReason::access), mv(0, 1, C, G, 200, MoveReason::prefetch),
                               mv(1, 2, C, G, 200, MoveReason::prefetch), mv(7, 1, G, C, 200, MoveReason::optimizer),
                               mv(8, 2, G, C, 200, MoveReason::optimizer)}));
}

TEST(ChunkRuntimeMoves, StatesTheHostCannotHoldStartOnTheGpuAndStayThere) {
  // CPU 3000 - 600 of params = 2400: units 1 and 2; unit 0 (1200) starts on the GPU, whose
  // warm-up room is 1900 - 400 (two chunks for a moment) = 1500. After the warm-up the margin
  // is 1900 - 600 = 1300, so unit 0 stays: no placement move, its step runs on the GPU.
  const ChunkLayout layout = three_chunks();
  ReferenceBackend backend(1900, 3000);
  ChunkRuntime rt(layout, budget(1900, 3000), backend);
  EXPECT_EQ(rt.placement().tier[0], G);
  EXPECT_EQ(rt.placement().tier[1], C);
  EXPECT_EQ(rt.placement().tier[2], C);
  EXPECT_EQ(rt.in_use(G), 1200);
  EXPECT_EQ(rt.in_use(C), 600 + 2400);
  IterationDriver driver(rt, false);
  FixedNonModel hooks(0);
  driver.run_iteration(hooks);
  EXPECT_EQ(rt.placement().gpu_margin_bytes, 1300);
  EXPECT_EQ(rt.placement().tier[0], G);
  EXPECT_EQ(backend.bytes_for(MoveReason::placement), 0);
  driver.run_iteration(hooks);
  EXPECT_LE(backend.peak(G), 1900);
  EXPECT_LE(backend.peak(C), 3000);
}

TEST(ChunkRuntimeMoves, StatesThatFitNeitherHostNorTheWarmUpGpuRoomFailNamingBoth) {
  const ChunkLayout layout = three_chunks();
  ReferenceBackend backend;
  try {
    ChunkRuntime rt(layout, budget(1500, 3000), backend);
    FAIL() << "expected SpecError";
  } catch (const SpecError& e) {
    EXPECT_STREQ(e.what(), "chunk placement: optimizer states need 3600 bytes but the GPU room of the warm-up (1100 "
                           "bytes), the CPU (3000 bytes, 600 of them for param chunks) and NVMe (0 bytes) cannot hold "
                           "them");
  }
}

TEST(ChunkRuntimeMoves, GpuBudgetBelowTwoChunksFailsNamingTheMinimum) {
  const ChunkLayout layout = three_chunks();
  ReferenceBackend backend;
  try {
    ChunkRuntime rt(layout, budget(399, 100000), backend);
    FAIL() << "expected SpecError";
  } catch (const SpecError& e) {
    EXPECT_STREQ(e.what(), "chunk runtime: the GPU budget of 399 bytes cannot hold two chunks (200 + 200 bytes); "
                           "the minimum is 400 bytes");
  }
}

TEST(ChunkRuntimeMoves, MomentThatCannotFitFailsNamingTheMinimum) {
  // One layer of two 100-element tensors spans two chunks: 400 bytes + 100 of activations.
  std::vector<ParamTensor> ts = test::one_tensor_layers(2, 100);
  ts[1].layer = 0;
  const ChunkLayout layout = ChunkLayout::build(ts, LayoutOptions{100, DType::bf16, Optimizer::adam, 1});
  ReferenceBackend backend;
  ChunkRuntime rt(layout, budget(400, 100000), backend);
  IterationDriver driver(rt, false);
  FixedNonModel hooks(100);
  try {
    driver.run_iteration(hooks);
    FAIL() << "expected SpecError";
  } catch (const SpecError& e) {
    EXPECT_STREQ(e.what(), "chunk runtime: GPU budget too small at moment 0 ('forward layer 0'): its chunks need 400 "
                           "bytes and the non-model memory 100 bytes, but the GPU budget is 400 bytes; the minimum is "
                           "500 bytes");
  }
}

TEST(ChunkRuntimeMoves, ADifferentMomentSequenceAfterTheWarmUpThrows) {
  const ChunkLayout layout = three_chunks();
  ReferenceBackend backend;
  ChunkRuntime rt(layout, budget(400, 100000), backend);
  IterationDriver driver(rt, false);
  FixedNonModel hooks(0);
  driver.run_iteration(hooks);
  rt.begin_iteration();
  rt.enter_moment({Phase::forward, 0}, 0);
  rt.access({0});
  rt.release({0}, TensorState::hold_after_fwd);
  rt.end_moment();
  try {
    rt.enter_moment({Phase::forward, 2}, 0);
    FAIL() << "expected std::logic_error";
  } catch (const std::logic_error& e) {
    EXPECT_STREQ(e.what(), "memory tracer: moment sequence differs from the warm-up: iteration 1 moment 1 is 'forward "
                           "layer 2' but the warm-up recorded 'forward layer 1'");
  }
}

TEST(ChunkRuntimeMoves, TensorsTellTheExecutorWhereTheyLive) {
  std::vector<ParamTensor> ts = test::one_tensor_layers(3, 60);  // 60 + 60 > 100: best fit puts
  const ChunkLayout layout = ChunkLayout::build(ts, LayoutOptions{100, DType::bf16, Optimizer::adam, 1});
  ReferenceBackend backend;
  ChunkRuntime rt(layout, budget(1 << 20, 1 << 20), backend);
  EXPECT_EQ(rt.where(2).chunk, 2);  // each 60-element tensor in its own chunk (40 left in each)
  EXPECT_EQ(rt.where(2).offset_elements, 0);
  EXPECT_TRUE(rt.on(0, C));
  EXPECT_EQ(rt.buffer(0).bytes, 200);
  EXPECT_EQ(rt.chunk_state(0), ChunkState::free);  // before the first iteration tensors are FREE
}

}  // namespace
}  // namespace starfish

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

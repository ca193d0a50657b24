// ZeRO-DP over chunks: per rank, each all-gather and reduce-scatter moves exactly (W-1)/W of
// its group's bytes, and an iteration gathers every group twice (forward, backward) and
// reduces it once. 8 layers of one 100-element tensor, chunks of 100: 8 param chunks of 200 B.
#include <gtest/gtest.h>

#include "sim/chunk/iteration_driver.h"
#include "sim/chunk/reference_backend.h"
#include "tests/sim/chunk/hand_model.h"

namespace starfish {
namespace {

struct RankRun {
  std::vector<Move> moves;  // of the second iteration
  int64_t gather = 0, reduce = 0, peak_gpu = 0;
};

RankRun run_rank(int world, int rank, ZeroMode mode) {
  const ChunkLayout layout =
      ChunkLayout::build(test::one_tensor_layers(8, 100), LayoutOptions{100, DType::bf16, Optimizer::adam, world});
  ReferenceBackend backend;
  RuntimeOptions o;
  o.budget = {1 << 20, 1 << 20, 0};
  o.zero = mode;
  o.dp_ranks.clear();
  for (int r = 0; r < world; ++r) o.dp_ranks.push_back(r);
  o.dp_index = rank;
  ChunkRuntime rt(layout, o, backend);
  IterationDriver driver(rt, false);
  FixedNonModel hooks(0);
  driver.run_iteration(hooks);
  const size_t before = rt.moves().size();
  const int64_t g0 = rt.moved_bytes(MoveReason::zero_gather), r0 = rt.moved_bytes(MoveReason::zero_reduce);
  driver.run_iteration(hooks);
  RankRun out;
  out.moves.assign(rt.moves().begin() + static_cast<long>(before), rt.moves().end());
  out.gather = rt.moved_bytes(MoveReason::zero_gather) - g0;
  out.reduce = rt.moved_bytes(MoveReason::zero_reduce) - r0;
  out.peak_gpu = backend.peak(Tier::gpu);
  EXPECT_EQ(backend.collective_total(CollectiveKind::all_gather) + backend.collective_total(CollectiveKind::broadcast),
            rt.moved_bytes(MoveReason::zero_gather));
  return out;
}

class ZeroVolumes : public ::testing::TestWithParam<int> {};

TEST_P(ZeroVolumes, AllGatherAndReduceScatterMoveWMinusOneOverWOfTheGroup) {
  const int W = GetParam();
  const int64_t group_bytes = W * 200, groups = 8 / W;
  for (int rank = 0; rank < W; ++rank) {
    const RankRun run = run_rank(W, rank, ZeroMode::sharded);
    int gathers = 0, reduces = 0;
    for (const Move& m : run.moves) {
      if (m.op == "all-gather") {
        ++gathers;
        EXPECT_EQ(m.bytes, group_bytes * (W - 1) / W);
      }
      if (m.op == "reduce-scatter") {
        ++reduces;
        EXPECT_EQ(m.bytes, group_bytes * (W - 1) / W);
      }
    }
    EXPECT_EQ(gathers, W > 1 ? 2 * groups : 0) << "rank " << rank;
    EXPECT_EQ(reduces, W > 1 ? groups : 0) << "rank " << rank;
    EXPECT_EQ(run.gather, W > 1 ? 2 * groups * group_bytes * (W - 1) / W : 0);
    EXPECT_EQ(run.reduce, W > 1 ? groups * group_bytes * (W - 1) / W : 0);
  }
}

TEST_P(ZeroVolumes, BroadcastReduceVariantMovesTheSameBytesPerRankWithLessMemory) {
  const int W = GetParam();
  int64_t total_gather = 0;
  for (int rank = 0; rank < W; ++rank) {
    const RankRun saving = run_rank(W, rank, ZeroMode::sharded_memory_saving);
    const RankRun full = run_rank(W, rank, ZeroMode::sharded);
    // Each rank receives the 8 - 8/W chunks it does not own, forward and backward, and sends
    // their grads to their owners once.
    EXPECT_EQ(saving.gather, 2 * (8 - 8 / W) * 200);
    EXPECT_EQ(saving.reduce, (8 - 8 / W) * 200);
    EXPECT_EQ(saving.gather, full.gather);
    // With W = 2 a group holds one remote chunk either way; beyond, the variant keeps one
    // remote chunk where the group all-gather materialises W - 1 of them.
    if (W <= 2)
      EXPECT_EQ(saving.peak_gpu, full.peak_gpu);
    else
      EXPECT_LT(saving.peak_gpu, full.peak_gpu);
    total_gather += saving.gather;
  }
  EXPECT_EQ(total_gather, W * 2 * (8 - 8 / W) * 200);
}

INSTANTIATE_TEST_SUITE_P(Ranks, ZeroVolumes, ::testing::Values(1, 2, 4, 8));

TEST(ZeroGroups, OwnerIsChunkModuloWorldAndOnlyOwnersKeepStates) {
  const ZeroGroups z(8, {10, 11, 12, 13}, 2, ZeroMode::sharded);
  EXPECT_EQ(z.group_of(5), 1);
  EXPECT_EQ(z.owner(5), 1);
  EXPECT_TRUE(z.keeps(6));
  EXPECT_FALSE(z.keeps(5));
  EXPECT_EQ(z.group(5).root, 1);
  EXPECT_EQ(z.group().ranks, (std::vector<int>{10, 11, 12, 13}));
}

}  // namespace
}  // namespace starfish

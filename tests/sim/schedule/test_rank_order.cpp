// One rank order for every part (Job::global_rank, Megatron's TP-then-DP-then-PP): the static
// builder's groups, the chunk runtime's data-parallel group and the executor's ranks all come
// from it.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>

#include "sim/chunk/runtime_config.h"
#include "sim/spec/spec_io.h"
#include "support/models.h"

namespace starfish {
namespace {

Job job_on_dgx(int tp, int pp, Plan p = {}) {
  const Cluster c = load_cluster(std::string(STARFISH_SOURCE_DIR) + "/hwprofiles/dgx-a100-80gb.yaml");
  Training t;
  t.global_batch = 16;
  p.tp = tp;
  p.pp = pp;
  return make_job(testing::gpt(8, 1024, 16, 1024, 50257), c, t, p);
}

TEST(RankOrder, TensorParallelInnermostThenDataThenPipeline) {
  const Job j = job_on_dgx(2, 2);  // 8 GPUs: TP 2 x DP 2 x PP 2
  ASSERT_EQ(j.dp(), 2);
  EXPECT_EQ(j.global_rank(0, 0, 0), 0);
  EXPECT_EQ(j.global_rank(1, 0, 0), 1);
  EXPECT_EQ(j.global_rank(0, 1, 0), 2);
  EXPECT_EQ(j.global_rank(0, 0, 1), 4);
  EXPECT_EQ(j.global_rank(1, 1, 1), 7);
  std::set<int> seen;
  for (int s = 0; s < 2; ++s)
    for (int t = 0; t < 2; ++t)
      for (int d = 0; d < 2; ++d) seen.insert(j.global_rank(t, d, s));
  EXPECT_EQ(seen.size(), 8u) << "every GPU has one place";
  EXPECT_EQ(*seen.rbegin(), 7);
}

TEST(RankOrder, DataParallelGroupsOfEveryTpRankAndStage) {
  const Job j = job_on_dgx(2, 2);
  EXPECT_EQ(j.dp_group_ranks(0, 0), (std::vector<int>{0, 2}));
  EXPECT_EQ(j.dp_group_ranks(1, 0), (std::vector<int>{1, 3}));
  EXPECT_EQ(j.dp_group_ranks(0, 1), (std::vector<int>{4, 6}));
  EXPECT_EQ(j.dp_group_ranks(1, 1), (std::vector<int>{5, 7}));
}

// The chunk runtime's DP group was once written apart ({tp * d}): the same as the Job's for TP
// rank 0 of stage 0 only. That is the only group it is used for -- a chunk plan has one stage
// (make_job), the simulator's chunked iteration runs TP rank 0, and starfish-run refuses
// tp > 1 -- so it was no bug; now it is the Job's, for every rank the runtime stands for.
TEST(RankOrder, TheChunkRuntimesGroupIsTheJobs) {
  Plan p;
  p.chunk_elements = 1 << 20;
  p.framework = Framework::starfish;  // the chunk runtime is Starfish's
  p.micro_batch = 2;
  const Job j = job_on_dgx(1, 1, p);  // DP 8: the executor runs data parallelism only
  ASSERT_EQ(j.dp(), 8);
  for (int d = 0; d < j.dp(); ++d) {
    const ChunkPlan cp = chunk_plan(j, d);
    EXPECT_EQ(cp.options.dp_ranks, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
    EXPECT_EQ(cp.options.dp_ranks[static_cast<size_t>(cp.options.dp_index)], j.global_rank(0, d, 0));
  }
}

}  // namespace
}  // namespace starfish

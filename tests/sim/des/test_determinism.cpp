#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "sim/des/engine.h"
#include "tests/sim/des/des_clusters.h"

namespace starfish::des {
namespace {

using testing::dgx_a100;

// A small deterministic generator, so the DAG is the same on every platform.
struct Lcg {
  uint64_t s;
  uint32_t next() {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<uint32_t>(s >> 33);
  }
  int below(int n) { return static_cast<int>(next() % static_cast<uint32_t>(n)); }
  double unit() { return next() / 4294967296.0; }
};

// Adds a random DAG of every kind of task on one node's devices; returns its task ids.
std::vector<TaskId> add_random_dag(Engine& e, int node, uint64_t seed, int count) {
  const Topology& topo = e.topology();
  const int G = topo.gpus_per_node(), base = node * G;
  Lcg rng{seed};
  const GroupId all = e.group({base, base + 1, base + 2, base + 3, base + 4, base + 5, base + 6, base + 7});
  const GroupId half = e.group({base + 4, base + 5, base + 6, base + 7});
  std::vector<TaskId> ids;
  for (int i = 0; i < count; ++i) {
    const int g = base + rng.below(G);
    TaskId t = 0;
    switch (rng.below(8)) {
      case 0:
      case 1: t = e.compute(g, 1e-4 * (1 + rng.below(50)), {0, "k"}); break;
      case 2: t = e.copy(g, rng.below(2) ? CopyDir::H2D : CopyDir::D2H, 1e6 * (1 + rng.below(200)), {0, "cp"}); break;
      case 3: t = e.transfer(topo.gpu(g), topo.gpu(base + rng.below(G)), 1e6 * (1 + rng.below(500)), {0, "x"}); break;
      case 4:
        t = e.collective(static_cast<CollectiveKind>(rng.below(6)), rng.below(2) ? all : half,
                         1e6 * (1 + rng.below(400)), {0, "coll"});
        break;
      case 5: t = rng.below(2) ? e.nvme_read(node, 1e7 * (1 + rng.below(9)), {0, "rd"})
                               : e.nvme_write(node, 1e7 * (1 + rng.below(9)), {0, "wr"});
        break;
      case 6: t = e.delay(1e-4 * rng.below(10), {0, "d"}); break;
      default: {
        CollectiveOptions opt;
        opt.merge_steps = false;
        t = e.collective(CollectiveKind::all_reduce, half, 1e6 * (1 + rng.below(100)), {0, "ar-steps"}, opt);
      }
    }
    // Up to three dependencies on earlier tasks of this DAG.
    for (int d = rng.below(4); d > 0 && !ids.empty(); --d) e.depends(t, ids[rng.below(static_cast<int>(ids.size()))]);
    ids.push_back(t);
  }
  return ids;
}

TEST(Determinism, TheSameDagGivesBitIdenticalTimes) {
  const Topology topo(dgx_a100(2));
  Engine a(topo), b(topo);
  const std::vector<TaskId> ia = add_random_dag(a, 0, 42, 600);
  const std::vector<TaskId> ib = add_random_dag(b, 0, 42, 600);
  const Results& ra = a.run();
  const Results& rb = b.run();
  EXPECT_GT(ra.makespan_s, 0.0);
  EXPECT_EQ(ra.start_s, rb.start_s);
  EXPECT_EQ(ra.end_s, rb.end_s);
  EXPECT_EQ(ra.link_bytes, rb.link_bytes);
  EXPECT_EQ(ra.link_busy_s, rb.link_busy_s);
  EXPECT_EQ(ra.resource_busy_s, rb.resource_busy_s);
}

TEST(Determinism, UnrelatedTasksInterleavedDoNotChangeATasksTimes) {
  const Topology topo(dgx_a100(2));
  Engine alone(topo);
  const std::vector<TaskId> base = add_random_dag(alone, 0, 7, 500);
  const Results& ra = alone.run();

  // The same DAG, built in chunks with an unrelated DAG on node 1 added in between, so every
  // task of the first DAG gets another id.
  Engine mixed(topo);
  std::vector<TaskId> first;
  {
    // Rebuild the first DAG by replaying the same generator in one go, then add node 1's DAG
    // before and after: ids shift by the tasks added before.
    add_random_dag(mixed, 1, 99, 300);
    first = add_random_dag(mixed, 0, 7, 500);
    add_random_dag(mixed, 1, 123, 300);
  }
  const Results& rm = mixed.run();
  ASSERT_EQ(first.size(), base.size());
  for (size_t i = 0; i < base.size(); ++i) {
    EXPECT_EQ(rm.start_s[first[i]], ra.start_s[base[i]]) << i;
    EXPECT_EQ(rm.end_s[first[i]], ra.end_s[base[i]]) << i;
  }
}

}  // namespace
}  // namespace starfish::des

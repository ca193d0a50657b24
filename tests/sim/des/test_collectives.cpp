#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "sim/des/engine.h"
#include "sim/spec/error.h"
#include "tests/sim/des/des_clusters.h"

namespace starfish::des {
namespace {

using testing::dgx_a100;

std::vector<int> iota(int from, int n) {
  std::vector<int> v(n);
  std::iota(v.begin(), v.end(), from);
  return v;
}

double run_one(const Topology& topo, CollectiveKind kind, const std::vector<int>& gpus, double bytes,
               CollectiveOptions opt = {}) {
  Engine e(topo);
  const TaskId t = e.collective(kind, e.group(gpus), bytes, {0, "c"}, opt);
  return e.run().end_s[t];
}

TEST(Collectives, RingAllReduceOnNvswitchMatchesTheAlphaBetaFormula) {
  const Cluster c = dgx_a100();
  const Topology topo(c);
  const double bw = c.node.nvlink->achieved_Bps(), lat = c.node.nvlink->latency_s;
  for (int n : {2, 4, 8}) {
    for (double B : {1e6, 256e6, 4e9}) {
      const double expect = 2.0 * (n - 1) / n * B / bw + 2 * (n - 1) * lat;
      for (bool merged : {true, false}) {
        CollectiveOptions opt;
        opt.merge_steps = merged;
        const double got = run_one(topo, CollectiveKind::all_reduce, iota(0, n), B, opt);
        EXPECT_NEAR(got, expect, 0.01 * expect) << n << " " << B << " " << merged;
        EXPECT_NEAR(got, expect, 1e-9 * expect) << n << " " << B << " " << merged;  // exact but rounding
      }
    }
  }
}

TEST(Collectives, GatherScatterAndAllToAllTakeNMinusOneSteps) {
  const Cluster c = dgx_a100();
  const Topology topo(c);
  const double bw = c.node.nvlink->achieved_Bps(), lat = c.node.nvlink->latency_s, B = 96e6;
  const int n = 8;
  const double expect = (n - 1.0) / n * B / bw + (n - 1) * lat;
  for (CollectiveKind k : {CollectiveKind::all_gather, CollectiveKind::reduce_scatter, CollectiveKind::all_to_all}) {
    for (bool merged : {true, false}) {
      CollectiveOptions opt;
      opt.merge_steps = merged;
      EXPECT_NEAR(run_one(topo, k, iota(0, n), B, opt), expect, 1e-9 * expect) << to_string(k) << merged;
    }
  }
}

// A task of `repeats` back-to-back collectives (a framework's consecutive TP collectives) takes
// what as many separate ones would: each repeat's bytes and its ring's step latencies, merged or
// step by step, over the ring and the hierarchical algorithm. Fewer than one is an error.
TEST(Collectives, RepeatsCostAsManyCollectivesBackToBack) {
  const Cluster c = dgx_a100(2);
  const Topology topo(c);
  const double bw = c.node.nvlink->achieved_Bps(), lat = c.node.nvlink->latency_s, B = 64e6;
  const int n = 8;
  for (bool merged : {true, false}) {
    CollectiveOptions opt;
    opt.merge_steps = merged;
    opt.repeats = 3;
    const double expect = 3 * (2.0 * (n - 1) / n * B / bw + 2 * (n - 1) * lat);
    EXPECT_NEAR(run_one(topo, CollectiveKind::all_reduce, iota(0, n), 3 * B, opt), expect, 1e-9 * expect) << merged;
  }
  // Every other kind: three repeats of 3B take three times one of B (a broadcast's pipeline
  // chunks chosen for one repeat's bytes).
  for (CollectiveKind k : {CollectiveKind::all_gather, CollectiveKind::reduce_scatter, CollectiveKind::all_to_all,
                           CollectiveKind::broadcast, CollectiveKind::reduce}) {
    for (bool merged : {true, false}) {
      CollectiveOptions opt;
      opt.merge_steps = merged;
      const double single = run_one(topo, k, iota(0, n), B, opt);
      opt.repeats = 3;
      EXPECT_NEAR(run_one(topo, k, iota(0, n), 3 * B, opt), 3 * single, 1e-9 * single) << to_string(k) << merged;
    }
  }
  CollectiveOptions h;
  h.algo = CollectiveAlgo::Hierarchical;
  const double one = run_one(topo, CollectiveKind::all_reduce, iota(0, 16), B, h);
  h.repeats = 2;
  EXPECT_NEAR(run_one(topo, CollectiveKind::all_reduce, iota(0, 16), 2 * B, h), 2 * one, 1e-9 * one);
  Engine e(topo);
  CollectiveOptions none;
  none.repeats = 0;
  try {
    e.collective(CollectiveKind::all_reduce, e.group(iota(0, n)), B, {0, "tp"}, none);
    FAIL();
  } catch (const SpecError& ex) {
    EXPECT_STREQ(ex.what(), "all-reduce 'tp': all-reduce: repeats must be >= 1, got 0");
  }
}

TEST(Collectives, BroadcastIsAPipelinedChain) {
  const Cluster c = dgx_a100();
  const Topology topo(c);
  const double bw = c.node.nvlink->achieved_Bps(), lat = c.node.nvlink->latency_s, B = 64e6;
  const int n = 8;
  for (int k : {1, 4, 16}) {
    CollectiveOptions opt;
    opt.pipeline_chunks = k;
    const double expect = (k + n - 2) * (B / k / bw + lat);
    EXPECT_NEAR(run_one(topo, CollectiveKind::broadcast, iota(0, n), B, opt), expect, 1e-9 * expect) << k;
    EXPECT_NEAR(run_one(topo, CollectiveKind::reduce, iota(0, n), B, opt), expect, 1e-9 * expect) << k;
  }
  // Automatic chunking is the best k of the same formula.
  const int k = best_pipeline_chunks(n, B, bw, lat);
  EXPECT_GT(k, 1);
  const double best = (k + n - 2) * (B / k / bw + lat);
  EXPECT_NEAR(run_one(topo, CollectiveKind::broadcast, iota(0, n), B), best, 1e-9 * best);
}

TEST(Collectives, ARingAcrossNodesRunsAtTheNicsPace) {
  const Cluster c = dgx_a100(2);
  const Topology topo(c);
  const int n = 16;
  const double B = 1e9;
  // The ring crosses nodes at GPU 7 -> 8 and GPU 15 -> 0 over NICs of 200 Gb/s (the PCIe hops to
  // them are 25.2 GB/s); every step waits for the slowest member route's latency.
  const double nic = c.node.nic->achieved_Bps();
  const double lat = 2 * c.node.pcie.latency_s + c.node.nic->latency_s;
  const double expect = 2.0 * (n - 1) / n * B / nic + 2 * (n - 1) * lat;
  EXPECT_NEAR(run_one(topo, CollectiveKind::all_reduce, iota(0, n), B), expect, 1e-9 * expect);
}

TEST(Collectives, HierarchicalAllReduceUsesEveryRail) {
  // NCCL's ring over all 32 GPUs of 4 DGX A100s in 8 channels, one per rail: at each of the
  // ring's 2 (n - 1) steps every GPU sends a channel's chunk (1 / (n L) of the buffer) to 7 GPUs of
  // its node over NVLink and one to the next node's GPU of its rail, all at once; the slower of
  // the two paces the step, which waits the slowest route's latency (a send between nodes).
  const Cluster c = dgx_a100(4);
  const Topology topo(c);
  const int L = 8, n = L * 4;
  const double B = 1e9, nv = c.node.nvlink->achieved_Bps();
  const double nic = std::min(c.node.nic->achieved_Bps(), c.node.pcie.bandwidth_Bps());
  const double net_lat = 2 * c.node.pcie.latency_s + c.node.nic->latency_s;
  const double chunk = B / (static_cast<double>(n) * L);
  const double step = std::max((L - 1) * chunk / nv, chunk / nic) + net_lat;
  CollectiveOptions h;
  h.algo = CollectiveAlgo::Hierarchical;
  const double got = run_one(topo, CollectiveKind::all_reduce, iota(0, n), B, h);
  EXPECT_NEAR(got, 2 * (n - 1) * step, 1e-9 * got);
  // A ring through one NIC a node carries every byte across the nodes there: 8x slower at the NICs.
  EXPECT_LT(got, run_one(topo, CollectiveKind::all_reduce, iota(0, n), B) / 4);
  // Reduce-scatter: the first half of it.
  const double rs = run_one(topo, CollectiveKind::reduce_scatter, iota(0, n), B, h);
  EXPECT_NEAR(rs, (n - 1) * step, 1e-9 * rs);
}

TEST(Collectives, HierarchicalOverOneNodeOrOneGpuANodeIsTheRing) {
  // No rails to spread over: a group on one node, or of one GPU on each of several nodes.
  const Cluster c = dgx_a100(4);
  const Topology topo(c);
  CollectiveOptions h;
  h.algo = CollectiveAlgo::Hierarchical;
  for (const std::vector<int>& g : {iota(0, 8), std::vector<int>{0, 8, 16, 24}})
    for (CollectiveKind k : {CollectiveKind::all_reduce, CollectiveKind::reduce_scatter, CollectiveKind::all_gather})
      EXPECT_DOUBLE_EQ(run_one(topo, k, g, 1e9, h), run_one(topo, k, g, 1e9)) << g.size() << " " << to_string(k);
}

TEST(Collectives, ConcurrentCollectivesShareLinks) {
  const Cluster c = dgx_a100();
  const Topology topo(c);
  Engine e(topo);
  const double bw = c.node.nvlink->achieved_Bps(), lat = c.node.nvlink->latency_s, B = 400e6;
  // Two all-gathers over the same 4 GPUs at once: each ring link carries both, at half rate.
  const GroupId g = e.group({0, 1, 2, 3});
  const TaskId a = e.collective(CollectiveKind::all_gather, g, B, {0, "a"});
  const TaskId b = e.collective(CollectiveKind::all_gather, g, B, {0, "b"});
  // Another group on other GPUs is unaffected.
  const TaskId other = e.collective(CollectiveKind::all_gather, e.group({4, 5, 6, 7}), B, {0, "o"});
  const Results& r = e.run();
  const double alone = 3.0 / 4 * B / bw + 3 * lat;
  EXPECT_NEAR(r.end_s[a], 3.0 / 4 * B / (bw / 2) + 3 * lat, 1e-9 * r.end_s[a]);
  EXPECT_NEAR(r.end_s[b], 3.0 / 4 * B / (bw / 2) + 3 * lat, 1e-9 * r.end_s[b]);
  EXPECT_NEAR(r.end_s[other], alone, 1e-9 * alone);
}

TEST(Collectives, OnAMeshEveryMemberDrivesItsLinksToTheOthers) {
  // RCCL's rings over MI300X's xGMI mesh use all 7 links of each GPU in an 8-GPU all-reduce
  // (a group of k uses its k-1 links among the members): each step's bytes spread evenly over
  // them. Hand-computed: a link carries 448 GB/s x 0.70 / 7 = 44.8 GB/s; 8 GPUs get 7 links,
  // 313.6 GB/s; 4 GPUs 3 links, 134.4 GB/s; latency 5 us per step.
  const Topology topo(testing::mi300x());
  const double B = 1e9, lat = 5e-6;
  const double all8 = 14 * (lat + B / 8 / 313.6e9);  // 5.6504e-3 s
  const double four = 6 * (lat + B / 4 / 134.4e9);    // 1.1191e-2 s
  for (bool merged : {true, false}) {
    CollectiveOptions opt;
    opt.merge_steps = merged;
    EXPECT_NEAR(run_one(topo, CollectiveKind::all_reduce, iota(0, 8), B, opt), all8, 1e-9 * all8) << merged;
    EXPECT_NEAR(run_one(topo, CollectiveKind::all_reduce, {1, 3, 5, 7}, B, opt), four, 1e-9 * four) << merged;
    const double gather = 7 * (lat + B / 8 / 313.6e9);
    EXPECT_NEAR(run_one(topo, CollectiveKind::all_gather, iota(0, 8), B, opt), gather, 1e-9 * gather) << merged;
  }
  EXPECT_NEAR(5.6504e-3 / all8, 1.0, 1e-4);
  // All-to-all: each peer's 1/8 goes straight over its own link, all at once.
  const double a2a = 7 * lat + B / 8 / 44.8e9;
  EXPECT_NEAR(run_one(topo, CollectiveKind::all_to_all, iota(0, 8), B), a2a, 1e-9 * a2a);
  // A send to one peer: one link.
  Engine e(topo);
  const TaskId send = e.transfer(topo.gpu(0), topo.gpu(5), B, {0, "send"});
  EXPECT_NEAR(e.run().end_s[send], lat + B / 44.8e9, 1e-9 * B / 44.8e9);
}

TEST(Collectives, ARingOfDirectLinksRunsBothWaysWhenTheGroupIsTheWholeRing) {
  // nvlink.topology: ring, 8 GPUs, each direction of each neighbour link at half the GPU's
  // 100 GB/s. The whole ring runs both ways round (the GPU's full rate, as the analytic tier
  // gives it); 4 neighbours of it run one way (half), and each step waits for the longest
  // member route's latency: the ring's way home from GPU 5 to 2, forwarded over 3 links.
  Cluster c = testing::pcie_box(8, 2);
  c.node.nvlink = NvlinkSpec{100e9, 3e-6, NvlinkTopology::ring};
  const Topology topo(c);
  const double B = 1e9;
  const double whole = 14 * (3e-6 + B / 8 / 100e9), part = 6 * (3 * 3e-6 + B / 4 / 50e9);
  EXPECT_NEAR(run_one(topo, CollectiveKind::all_reduce, iota(0, 8), B), whole, 1e-9 * whole);
  EXPECT_NEAR(run_one(topo, CollectiveKind::all_reduce, iota(2, 4), B), part, 1e-9 * part);
}

TEST(Collectives, AGroupOfOneTakesNoTime) {
  const Topology topo(dgx_a100());
  EXPECT_EQ(run_one(topo, CollectiveKind::all_reduce, {5}, 1e9), 0.0);
}

TEST(Collectives, BadGroupsAndAlgorithmsGiveClearErrors) {
  const Topology topo(dgx_a100(2));
  Engine e(topo);
  try {
    e.group({0, 1, 1});
    FAIL();
  } catch (const SpecError& ex) {
    EXPECT_STREQ(ex.what(), "GPU 1 appears twice in a GPU group");
  }
  try {
    e.group({0, 16});
    FAIL();
  } catch (const SpecError& ex) {
    EXPECT_STREQ(ex.what(), "GPU 16 does not exist (the cluster has 16 GPUs)");
  }
  CollectiveOptions h;
  h.algo = CollectiveAlgo::Hierarchical;
  try {
    e.collective(CollectiveKind::all_reduce, e.group({0, 1, 8}), 1e6, {0, "uneven"}, h);
    FAIL();
  } catch (const SpecError& ex) {
    EXPECT_STREQ(ex.what(),
                 "all-reduce 'uneven': hierarchical all-reduce: the group must have the same number of GPUs on each "
                 "node (node 0 has 2, node 1 has 1)");
  }
  try {
    e.collective(CollectiveKind::broadcast, e.group({0, 8}), 1e6, {0, "b"}, h);
    FAIL();
  } catch (const SpecError& ex) {
    EXPECT_STREQ(ex.what(),
                 "broadcast 'b': the hierarchical algorithm supports all-reduce, reduce-scatter and all-gather, not "
                 "broadcast; use the ring");
  }
  try {
    e.collective(CollectiveKind::all_gather, 99, 1e6, {0, "nogroup"});
    FAIL();
  } catch (const SpecError& ex) {
    EXPECT_STREQ(ex.what(), "all-gather 'nogroup': GPU group 99 does not exist");
  }
}

}  // namespace
}  // namespace starfish::des

#include <gtest/gtest.h>

#include <vector>

#include "sim/des/engine.h"
#include "tests/sim/des/des_clusters.h"

namespace starfish::des {
namespace {

using testing::dgx_a100;
using testing::pcie_box;

constexpr double kRel = 1e-12;

TEST(FlowSharing, TwoFlowsOnOneLinkEachGetHalf) {
  const Cluster c = dgx_a100();
  const Topology topo(c);
  Engine e(topo);
  const double bytes = 600e6, bw = c.node.nvlink->achieved_Bps(), lat = c.node.nvlink->latency_s;
  // Both leave GPU 0 over its one NVLink port: they share GPU0 -> NVSwitch.
  const TaskId a = e.transfer(topo.gpu(0), topo.gpu(1), bytes, {0, "a"});
  const TaskId b = e.transfer(topo.gpu(0), topo.gpu(2), bytes, {0, "b"});
  const Results& r = e.run();
  EXPECT_NEAR(r.end_s[a], 2 * bytes / bw + lat, kRel * r.end_s[a]);
  EXPECT_NEAR(r.end_s[b], 2 * bytes / bw + lat, kRel * r.end_s[b]);
  EXPECT_EQ(r.link_bytes[topo.find_link(topo.gpu(0), topo.nvswitch(0))], 2 * bytes);
}

TEST(FlowSharing, AFlowSharingPartOfItsRouteGetsTheMaxMinRate) {
  const Cluster c = dgx_a100();
  const Topology topo(c);
  Engine e(topo);
  const double X = 300e6, bw = c.node.nvlink->achieved_Bps(), lat = c.node.nvlink->latency_s;
  // Three flows into GPU 1 share NVSwitch -> GPU1 (bw/3 each). Flow d shares only GPU2 ->
  // NVSwitch with one of them: max-min gives it what that one leaves, 2bw/3 (not bw/2), until
  // the three end at 3X/bw; then it runs alone at bw.
  const TaskId a = e.transfer(topo.gpu(0), topo.gpu(1), X, {0, "a"});
  const TaskId b = e.transfer(topo.gpu(2), topo.gpu(1), X, {0, "b"});
  const TaskId c3 = e.transfer(topo.gpu(3), topo.gpu(1), X, {0, "c"});
  const TaskId d = e.transfer(topo.gpu(2), topo.gpu(4), 4 * X, {0, "d"});
  const TaskId d_small = e.transfer(topo.gpu(5), topo.gpu(6), X, {0, "alone"});
  const Results& r = e.run();
  for (TaskId t : {a, b, c3}) EXPECT_NEAR(r.end_s[t], 3 * X / bw + lat, kRel * r.end_s[t]);
  // 2X sent by 3X/bw at 2bw/3, the other 2X at bw.
  EXPECT_NEAR(r.end_s[d], 3 * X / bw + 2 * X / bw + lat, kRel * r.end_s[d]);
  EXPECT_NEAR(r.end_s[d_small], X / bw + lat, kRel * r.end_s[d_small]);
}

TEST(FlowSharing, AShortFlowEndingSpeedsUpTheOther) {
  const Cluster c = dgx_a100();
  const Topology topo(c);
  Engine e(topo);
  const double X = 150e6, bw = c.node.nvlink->achieved_Bps(), lat = c.node.nvlink->latency_s;
  const TaskId small = e.transfer(topo.gpu(0), topo.gpu(1), X, {0, "small"});
  const TaskId big = e.transfer(topo.gpu(0), topo.gpu(2), 3 * X, {0, "big"});
  const Results& r = e.run();
  EXPECT_NEAR(r.end_s[small], 2 * X / bw + lat, kRel * r.end_s[small]);
  EXPECT_NEAR(r.end_s[big], 2 * X / bw + 2 * X / bw + lat, kRel * r.end_s[big]);  // X at bw/2, 2X at bw
}

TEST(FlowSharing, GpusBehindOnePcieSwitchShareItsUplinkToTheHost) {
  const Cluster c = dgx_a100();
  const Topology topo(c);
  Engine e(topo);
  const double bytes = 512e6, pcie = c.node.pcie.bandwidth_Bps(), lat = c.node.pcie.latency_s;
  const TaskId g0 = e.copy(0, CopyDir::D2H, bytes, {0, "g0"});
  const TaskId g1 = e.copy(1, CopyDir::D2H, bytes, {0, "g1"});  // same switch as GPU 0
  const TaskId g2 = e.copy(2, CopyDir::D2H, bytes, {0, "g2"});  // its own switch
  const Results& r = e.run();
  EXPECT_NEAR(r.end_s[g0], bytes / (pcie / 2) + lat, kRel * r.end_s[g0]);
  EXPECT_NEAR(r.end_s[g1], bytes / (pcie / 2) + lat, kRel * r.end_s[g1]);
  EXPECT_NEAR(r.end_s[g2], bytes / pcie + lat, kRel * r.end_s[g2]);
}

TEST(FlowSharing, PeerToPeerWithoutNvlinkSharesTheHostPath) {
  const Cluster c = pcie_box(4, 2);
  const Topology topo(c);
  Engine e(topo);
  const double bytes = 100e6, pcie = c.node.pcie.bandwidth_Bps(), lat = c.node.pcie.latency_s;
  // 0 -> 2 and 1 -> 3 both cross switch0 -> host and host -> switch1.
  const TaskId a = e.transfer(topo.gpu(0), topo.gpu(2), bytes, {0, "a"});
  const TaskId b = e.transfer(topo.gpu(1), topo.gpu(3), bytes, {0, "b"});
  const Results& r = e.run();
  EXPECT_NEAR(r.end_s[a], 2 * bytes / pcie + 2 * lat, kRel * r.end_s[a]);
  EXPECT_NEAR(r.end_s[b], 2 * bytes / pcie + 2 * lat, kRel * r.end_s[b]);
}

TEST(FlowSharing, HalvingOneLinkSlowsOnlyTheTasksOnIt) {
  const Cluster c = dgx_a100(2);
  const Topology topo(c);
  Engine e(topo);
  const GroupId tp = e.group({4, 5, 6, 7});
  const GroupId dp = e.group({3, 11});
  std::vector<TaskId> on_link, others;
  TaskId prev0 = kNone;
  for (int i = 0; i < 4; ++i) {
    const TaskId k = e.compute(0, 1e-3, {0, "k0"});
    const TaskId off = e.copy(0, CopyDir::D2H, 64e6, {0, "offload0"});  // crosses GPU0 -> switch0
    e.depends(off, k);
    if (prev0 != kNone) e.depends(k, prev0);
    prev0 = k;
    on_link.push_back(off);
    // In the same flow component (the host memory link) but not on GPU0's link.
    others.push_back(e.copy(2, CopyDir::D2H, 64e6, {0, "offload2"}));
    others.push_back(e.collective(CollectiveKind::all_reduce, tp, 80e6, {0, "tp"}));
    others.push_back(e.collective(CollectiveKind::all_reduce, dp, 30e6, {0, "dp"}));
    others.push_back(e.compute(6, 2e-4 * (i + 1), {0, "k6"}));
    others.push_back(e.transfer(topo.gpu(9), topo.gpu(10), 10e6, {0, "p2p"}));
  }
  const Results before = e.run();
  const LinkId l = topo.find_link(topo.gpu(0), topo.pcie_switch(0, 0));
  e.set_link_bandwidth(l, topo.link(l).bandwidth_Bps / 2);
  const Results& after = e.run();
  for (TaskId t : on_link) EXPECT_GT(after.end_s[t], before.end_s[t]) << t;
  for (TaskId t : others) {
    EXPECT_EQ(after.start_s[t], before.start_s[t]) << t;
    EXPECT_EQ(after.end_s[t], before.end_s[t]) << t;
  }
}

}  // namespace
}  // namespace starfish::des

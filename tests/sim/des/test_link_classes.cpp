#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "sim/des/engine.h"
#include "tests/sim/des/des_clusters.h"

namespace starfish::des {
namespace {

using testing::dgx_a100;

// A ring all-reduce over GPU 0 of each of 64 nodes: every member's route is GPU -> PCIe switch
// -> NIC -> fabric -> NIC -> PCIe switch -> GPU, six links, 384 in all, each crossed by the ring
// alone: the four PCIe links of a route have one capacity, the two network links another, so
// the ring is two link classes.
struct Ring {
  explicit Ring(int nodes) : topo(dgx_a100(nodes)), e(topo) {
    std::vector<int> gpus;
    for (int k = 0; k < nodes; ++k) gpus.push_back(k * 8);
    ring = e.collective(CollectiveKind::all_reduce, e.group(gpus), bytes, {0, "ar"});
  }
  Topology topo;
  Engine e;
  double bytes = 1e9;
  TaskId ring = 0;
};

TEST(LinkClasses, ARingOverManyNodesRunsAsTwoLinkClassesAtTheBottlenecksRate) {
  Ring r(64);
  const Results& res = r.e.run();
  EXPECT_EQ(r.e.link_classes(), 2u);
  const Cluster& c = r.topo.cluster();
  const double n = 64, bw = std::min(c.node.pcie.bandwidth_Bps(), c.node.nic->achieved_Bps());
  const double route_s = 2 * c.node.pcie.latency_s + c.node.nic->latency_s;
  const double expect = 2 * (n - 1) / n * r.bytes / bw + 2 * (n - 1) * route_s;
  EXPECT_NEAR(res.end_s[r.ring], expect, 1e-12 * expect);
}

TEST(LinkClasses, EveryLinkOfAClassReportsTheClassesBytes) {
  Ring r(16);
  const Results& res = r.e.run();
  const DeviceId fabric = static_cast<DeviceId>(r.topo.vertex_count() - 1);
  for (int k = 0; k < 16; ++k) {
    SCOPED_TRACE(k);
    EXPECT_DOUBLE_EQ(res.link_bytes[r.topo.find_link(r.topo.nic(k, 0), fabric)], 2.0 * 15 / 16 * r.bytes);
    EXPECT_DOUBLE_EQ(res.link_bytes[r.topo.find_link(fabric, r.topo.nic(k, 0))], 2.0 * 15 / 16 * r.bytes);
    EXPECT_EQ(res.link_bytes[r.topo.find_link(r.topo.nic(k, 1), fabric)], 0.0);  // GPU 2's NIC: unused
  }
}

TEST(LinkClasses, TrafficOnOneReplicasNicSplitsItsLinksIntoClassesOfTheirOwn) {
  Ring r(64);
  // A transfer from node 0's GPU 0 to node 1's GPU 0 shares node 0's uplink and node 1's
  // downlink with the ring: those links now differ from the other replicas' and are simulated
  // on their own, and the shared links slow both down.
  const TaskId x = r.e.transfer(r.topo.gpu(0), r.topo.gpu(8), r.bytes, {0, "pp"});
  const Results& res = r.e.run();
  EXPECT_GT(r.e.link_classes(), 2u);
  const Cluster& c = r.topo.cluster();
  const double bw = std::min(c.node.pcie.bandwidth_Bps(), c.node.nic->achieved_Bps());
  EXPECT_GT(res.end_s[x], r.bytes / bw);  // not the link to itself
  Ring alone(64);
  EXPECT_GT(res.end_s[r.ring], alone.e.run().end_s[alone.ring]);
}

TEST(LinkClasses, ATopologyOf131072GpusStoresOneNodeAndNamesLinksOnDemand) {
  const Topology t(dgx_a100(16384));
  EXPECT_EQ(t.total_gpus(), 131072);
  const LinkInfo last = t.link(static_cast<LinkId>(t.link_count() - 1));
  EXPECT_EQ(last.name, "fabric->n16383.nic7");
  EXPECT_EQ(last.kind, LinkKind::Network);
  EXPECT_EQ(t.vertex(t.gpu(131071)).name, "n16383.gpu7");
  EXPECT_EQ(t.gpu_index(t.gpu(131071)), 131071);
  EXPECT_EQ(t.gpu_index(t.nic(3, 0)), -1);
}

}  // namespace
}  // namespace starfish::des

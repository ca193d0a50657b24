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

TEST(LinkClasses, ASlowNicOnOneReplicaIsSimulatedOnItsOwnAndPacesTheRing) {
  // The ring is planned by shape (one node's footprint on 64 nodes); halving node 5's NIC uplink
  // breaks the symmetry there: that node stands for itself and its link is the bottleneck.
  Ring r(64);
  const DeviceId fabric = static_cast<DeviceId>(r.topo.vertex_count() - 1);
  const Cluster& c = r.topo.cluster();
  const double bw = std::min(c.node.pcie.bandwidth_Bps(), c.node.nic->achieved_Bps());
  r.e.set_link_bandwidth(r.topo.find_link(r.topo.nic(5, 0), fabric), bw / 2);
  const Results& res = r.e.run();
  EXPECT_EQ(r.e.link_classes(), 3u);  // PCIe legs, network legs, the slow uplink
  const double n = 64, route_s = 2 * c.node.pcie.latency_s + c.node.nic->latency_s;
  const double expect = 2 * (n - 1) / n * r.bytes / (bw / 2) + 2 * (n - 1) * route_s;
  EXPECT_NEAR(res.end_s[r.ring], expect, 1e-12 * expect);
  EXPECT_DOUBLE_EQ(res.link_bytes[r.topo.find_link(r.topo.nic(5, 0), fabric)], 2.0 * 63 / 64 * r.bytes);
  EXPECT_DOUBLE_EQ(res.link_bytes[r.topo.find_link(r.topo.nic(40, 0), fabric)], 2.0 * 63 / 64 * r.bytes);
  EXPECT_EQ(res.used_links.size(), 64u * 6);  // every member's six links, listed
}

// A stamped pattern (one node's footprint on many nodes) gives the flow network exactly what
// listing its links does: the same classes, rates, end times and bytes on every link.
TEST(LinkClasses, AStampedPatternRunsBitForBitLikeItsListedLinks) {
  constexpr uint32_t per_node = 4, nodes = 10;
  auto capacity = [](LinkId l) { return 1e9 * (1 + l % per_node); };
  const std::vector<LinkUse> ring_foot = {{0, 1}, {2, 2}}, other_foot = {{2, 1}, {3, 1}};
  const std::vector<int> ring_nodes = {1, 3, 4, 5, 7, 8}, other_nodes = {3, 4, 7};
  const std::vector<LinkUse> explicit_uses = {{5 * per_node + 0, 1}, {9 * per_node + 1, 1}};  // touches node 5
  auto listed = [&](const std::vector<LinkUse>& foot, const std::vector<int>& on) {
    std::vector<LinkUse> out;
    for (int n : on)
      for (const LinkUse& u : foot) out.push_back(LinkUse{n * per_node + u.link, u.weight});
    return out;
  };
  struct Outcome {
    std::vector<double> end_s, bytes;
    size_t classes;
  };
  auto run = [&](bool stamped) {
    FlowNetwork net(per_node * nodes, per_node, capacity);
    const PatternId a = stamped ? net.add_stamped_pattern(ring_foot, ring_nodes) : net.add_pattern(listed(ring_foot, ring_nodes));
    const PatternId b = stamped ? net.add_stamped_pattern(other_foot, other_nodes) : net.add_pattern(listed(other_foot, other_nodes));
    const PatternId x = net.add_pattern(explicit_uses);
    net.reset();
    Outcome o;
    o.end_s.assign(3, 0);
    const FlowId fa = net.start(a, 3e9, 0, 0), fb = net.start(b, 1e9, 1, 0), fx = net.start(x, 2e9, 2, 0);
    for (const FlowNetwork::Change& ch : net.recompute(0)) {
      const int which = ch.flow == fa ? 0 : ch.flow == fb ? 1 : 2;
      o.end_s[which] = ch.end_s;
    }
    EXPECT_NE(fx, fa);
    for (LinkId l = 0; l < per_node * nodes; ++l) o.bytes.push_back(net.link_bytes(l));
    o.classes = net.link_class_count();
    std::vector<LinkId> used = net.used_links();
    std::sort(used.begin(), used.end());
    std::vector<LinkId> expect_used;
    for (LinkId l = 0; l < per_node * nodes; ++l)
      if (o.bytes[l] > 0) expect_used.push_back(l);
    EXPECT_EQ(used, expect_used);
    return o;
  };
  const Outcome s = run(true), l = run(false);
  EXPECT_EQ(s.end_s, l.end_s);
  EXPECT_EQ(s.bytes, l.bytes);
  EXPECT_EQ(s.classes, l.classes);
  EXPECT_GT(s.bytes[8 * per_node + 2], 0.0);  // node 8: represented by node 1, reports its bytes
  EXPECT_EQ(s.bytes[8 * per_node + 2], s.bytes[1 * per_node + 2]);
  EXPECT_NE(s.bytes[3 * per_node + 2], s.bytes[1 * per_node + 2]);  // node 3 also carries the other
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

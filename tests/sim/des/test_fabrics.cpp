// Fabrics at scale (issue 15): an oversubscribed fat tree, rail-optimised leaves, and an NVLink
// domain larger than a node, each routed by the same engine and checked against a hand-computed
// time or route.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "sim/des/engine.h"
#include "sim/spec/spec_io.h"
#include "support/error_of.h"
#include "tests/sim/des/des_clusters.h"

namespace starfish::des {
namespace {

using testing::dgx_a100;

// The time of a merged ring phase: `steps` steps of fraction * bytes at `rate_Bps`, each step
// followed by one route latency (collective.h).
double phase_s(int steps, double fraction, double bytes, double rate_Bps, double latency_s) {
  return steps * fraction * bytes / rate_Bps + steps * latency_s;
}

Cluster fat_tree(int nodes, double oversubscription, bool rails = false) {
  Cluster c = dgx_a100(nodes);
  c.fabric.rail_optimized = rails;
  c.fabric.tiers = {FabricTier{2, oversubscription, 0}};
  return c;
}

// Hierarchical all-reduce over all 32 GPUs of 4 DGX A100 nodes, leaves of 2 nodes: NCCL's ring
// over all ranks in 8 channels, one per rail (collective.cpp). At each of its 62 steps every GPU
// sends 1/256 of the buffer to the next node's GPU of its rail (and 7 such chunks over NVLink);
// node 1's 8 rail sends to node 2 cross leaf 0's uplink (2 nodes x 8 NICs x NIC rate /
// oversubscription), shared 8 ways. At oversubscription 16 that is one NIC's rate for 8 members:
// each moves at 1/8 of a NIC, against a full NIC (or PCIe) on a non-blocking fabric.
TEST(Fabrics, AnOversubscribedLeafUplinkSetsTheAllReducesInterNodeRate) {
  for (double os : {1.0, 16.0}) {
    SCOPED_TRACE(os);
    const Topology topo(fat_tree(4, os));
    Engine e(topo);
    std::vector<int> all(32);
    for (int g = 0; g < 32; ++g) all[g] = g;
    const double bytes = 8e9;
    CollectiveOptions o;
    o.algo = CollectiveAlgo::Hierarchical;
    const TaskId ar = e.collective(CollectiveKind::all_reduce, e.group(all), bytes, {0, "ar"}, o);
    const Results& r = e.run();
    const NodeSpec& n = topo.cluster().node;
    const double nic = n.nic->achieved_Bps(), pcie = n.pcie.bandwidth_Bps(), nvl = n.nvlink->achieved_Bps();
    const double uplink = 2 * 8 * nic / os;
    // Per step, the slowest link: a GPU's 7 NVLink chunks, or its rail's NIC, PCIe or uplink share.
    const double rate = std::min({nvl / 7, nic, pcie, uplink / 8});
    const LinkId up = topo.find_link(static_cast<DeviceId>(topo.vertex_count() - 2), topo.fabric_core());
    // Every step waits the slowest route's latency: a send between the leaves, through the core.
    std::vector<LinkId> route;
    const double lat = topo.append_route(topo.gpu(8), topo.gpu(16), route);
    EXPECT_NEAR(r.end_s[ar], phase_s(62, 1.0 / 256, bytes, rate, lat), 1e-9 * r.end_s[ar]);
    // Leaf 0's uplink carries node 1's 8 rail sends in every step.
    const DeviceId leaf0 = static_cast<DeviceId>(topo.vertex_count() - 2);  // after the core: leaves 0, 1
    ASSERT_EQ(topo.vertex(leaf0).name, "t0.sw0");
    EXPECT_EQ(topo.link(up).bandwidth_Bps, uplink);
    EXPECT_DOUBLE_EQ(r.link_bytes[up], 8 * 62 * bytes / 256);
  }
}

TEST(Fabrics, SameRailTrafficUnderOneLeafStaysOnItsRailsLeaf) {
  Cluster c = dgx_a100(8);
  c.fabric.rail_optimized = true;
  c.fabric.tiers = {FabricTier{4, 1, 0}, FabricTier{8, 64, 0}};  // a crushed tier 1: never reached by rail traffic
  const Topology topo(c);
  // GPU 3 of node 0 to GPU 3 of node 2: NIC 3 -> rail 3's leaf -> NIC 3, no switch link above.
  const Route same = topo.route(topo.gpu(3), topo.gpu(2 * 8 + 3));
  for (LinkId l : same.links) EXPECT_TRUE(topo.is_node_link(l)) << topo.link(l).name;
  const LinkId up = std::find_if(same.links.begin(), same.links.end(),
                                 [&](LinkId l) { return topo.link(l).kind == LinkKind::Network; })[0];
  EXPECT_EQ(topo.vertex(topo.link(up).to).name, "t0.sw0.rail3");
  // Across rails (GPU 3 -> GPU 5) or across leaf spans (node 0 -> node 5), the route climbs.
  const Route cross = topo.route(topo.gpu(3), topo.gpu(8 + 5));
  EXPECT_EQ(std::count_if(cross.links.begin(), cross.links.end(), [&](LinkId l) { return !topo.is_node_link(l); }), 2);
  const Route far = topo.route(topo.gpu(3), topo.gpu(5 * 8 + 3));
  EXPECT_EQ(std::count_if(far.links.begin(), far.links.end(), [&](LinkId l) { return !topo.is_node_link(l); }), 2);

  // Eight rails' rings over the four nodes of one leaf span run at the full NIC rate: the
  // oversubscribed tier above carries none of it. The same rings on a non-rail-optimised leaf
  // of the same span and ratio would share one leaf; here each rail has its own.
  Engine e(topo);
  const double bytes = 1e9;
  std::vector<TaskId> rings;
  for (int j = 0; j < 8; ++j)
    rings.push_back(e.collective(CollectiveKind::all_reduce, e.group({j, 8 + j, 16 + j, 24 + j}), bytes, {0, "rail"}));
  const Results& r = e.run();
  const NodeSpec& n = c.node;
  const double rate = std::min(n.nic->achieved_Bps(), n.pcie.bandwidth_Bps());
  const double expect = phase_s(6, 1.0 / 4, bytes, rate, 2 * n.pcie.latency_s + n.nic->latency_s);
  for (TaskId t : rings) EXPECT_NEAR(r.end_s[t], expect, 1e-12 * expect);
  for (LinkId l : r.used_links) EXPECT_TRUE(topo.is_node_link(l)) << topo.link(l).name;
}

// GB200 NVL72: 18 trays of 4 GPUs share one NVLink domain; a ring over its 72 GPUs stays on
// NVLink (each GPU's port), and GPUs of two domains meet through the NICs.
TEST(Fabrics, AnNvl72DomainPutsSeventyTwoGpusOfEighteenNodesOnNvlink) {
  Cluster c = load_cluster(std::string(STARFISH_SOURCE_DIR) + "/hwprofiles/gb200-nvl72.yaml");
  c.nodes = 36;
  EXPECT_EQ(c.nvlink_domain_gpus(), 72);
  const Topology topo(c);
  EXPECT_EQ(topo.nvlink_domain_gpus(), 72);
  const Route r = topo.route(topo.gpu(3), topo.gpu(4));  // tray 0 -> tray 1
  ASSERT_EQ(r.links.size(), 2u);
  EXPECT_EQ(topo.link(r.links[0]).kind, LinkKind::Nvlink);
  EXPECT_EQ(topo.vertex(topo.link(r.links[0]).to).name, "nvl0.nvswitch");
  EXPECT_EQ(r.latency_s, c.node.nvlink->latency_s);
  const Route across = topo.route(topo.gpu(0), topo.gpu(72));  // domain 0 -> domain 1
  EXPECT_TRUE(std::any_of(across.links.begin(), across.links.end(),
                          [&](LinkId l) { return topo.link(l).kind == LinkKind::Network; }));

  Engine e(topo);
  std::vector<int> domain(72);
  for (int g = 0; g < 72; ++g) domain[g] = g;
  const double bytes = 4e9;
  const TaskId ar = e.collective(CollectiveKind::all_reduce, e.group(domain), bytes, {0, "tp72"});
  const Results& res = e.run();
  const double expect = phase_s(2 * 71, 1.0 / 72, bytes, c.node.nvlink->achieved_Bps(), c.node.nvlink->latency_s);
  EXPECT_NEAR(res.end_s[ar], expect, 1e-12 * expect);
}

TEST(Fabrics, BadFabricsInAHwprofileAreLocatedErrors) {
  const std::string head = "name: x\nnodes: 4\nnode:\n  gpus: 1\n  gpu: {name: g, memory: 1GiB, hbm_bandwidth: 1TB/s, "
                           "peak: {bf16: 1TFLOPS}, matmul_efficiency: [[1GFLOP, 0.5]]}\n  host: {memory: 1GiB, "
                           "memory_bandwidth: 1GB/s, cpu_cores: 1, cpu_adam_params_per_s: 1e9}\n  pcie: {generation: 4, "
                           "lanes: 16}\n  nic: {count: 1, bandwidth: 100Gb/s}\n";
  using starfish::testing::error_of;
  EXPECT_EQ(error_of([&] { parse_cluster_text(head + "fabric:\n  tiers:\n    - {nodes: 4}\n    - {nodes: 6}\n", "hw.yaml"); }),
            "hw.yaml:12:8: field 'fabric.tiers[1].nodes': must be a multiple of the tier below's 4 nodes, and larger");
  EXPECT_EQ(error_of([&] { parse_cluster_text(head + "fabric: {rail_optimized: true}\n", "hw.yaml"); }),
            "hw.yaml:9:10: field 'fabric.rail_optimized': needs tiers (the leaf switches each rail has)");
  EXPECT_EQ(error_of([&] { parse_cluster_text(head + "fabric:\n  tiers: [{nodes: 2, oversubscription: 0.5}]\n", "hw.yaml"); }),
            "hw.yaml:10:22: field 'fabric.tiers[0].oversubscription': must be within [1, 1024], got 0.5");
  Cluster huge = parse_cluster_text(head + "fabric:\n  rail_optimized: true\n  tiers: [{nodes: 2}]\n", "hw.yaml");
  huge.nodes = 10'000'000;
  huge.node.nic->count = 64;
  EXPECT_EQ(error_of([&] { Topology t(huge); }),
            "topology: cluster 'x' has a fabric of 320000000 switches; at most 16777216 are supported");
  const Cluster ok = parse_cluster_text(head + "fabric:\n  rail_optimized: false\n  tiers: [{nodes: 2, oversubscription: 3, latency: 600ns}]\n", "hw.yaml");
  ASSERT_EQ(ok.fabric.tiers.size(), 1u);
  EXPECT_EQ(ok.fabric.tiers[0].oversubscription, 3);
  EXPECT_EQ(parse_cluster_text(to_yaml(ok), "again.yaml").fabric, ok.fabric);
}

}  // namespace
}  // namespace starfish::des

#include <gtest/gtest.h>

#include <boost/graph/graph_traits.hpp>

#include "sim/des/topology_graph.h"
#include "sim/spec/error.h"
#include "tests/sim/des/des_clusters.h"

namespace starfish::des {
namespace {

using testing::dgx_a100;
using testing::pcie_box;

int count_kind(const Topology& t, VertexKind k) {
  int n = 0;
  for (DeviceId v = 0; v < t.vertex_count(); ++v) n += t.vertex(v).kind == k;
  return n;
}

TEST(Topology, DgxNodeHasTheDevicesOfItsProfile) {
  const Topology t(dgx_a100(2));
  EXPECT_EQ(count_kind(t, VertexKind::Gpu), 16);
  EXPECT_EQ(count_kind(t, VertexKind::PcieSwitch), 8);  // 2 GPUs per root, 4 per node
  EXPECT_EQ(count_kind(t, VertexKind::HostCpu), 2);
  EXPECT_EQ(count_kind(t, VertexKind::HostMemory), 2);
  EXPECT_EQ(count_kind(t, VertexKind::Nvme), 2);
  EXPECT_EQ(count_kind(t, VertexKind::NvSwitch), 2);
  EXPECT_EQ(count_kind(t, VertexKind::Nic), 16);
  EXPECT_EQ(count_kind(t, VertexKind::Fabric), 1);
  EXPECT_EQ(t.vertex(t.gpu(13)).name, "n1.gpu5");
}

TEST(Topology, BoostGraphEdgesAreTheDirectedLinks) {
  const Topology t(dgx_a100(2));
  const TopologyGraph g = topology_graph(t);
  EXPECT_EQ(boost::num_edges(g), t.link_count());
  EXPECT_EQ(boost::num_vertices(g), t.vertex_count());
  for (auto [e, end] = boost::edges(g); e != end; ++e) {
    const LinkInfo& l = t.link(g[*e].link);
    EXPECT_EQ(l.from, boost::source(*e, g));
    EXPECT_EQ(l.to, boost::target(*e, g));
  }
}

TEST(Topology, LinkBandwidthsArePerDirectionFromTheProfile) {
  const Cluster c = dgx_a100();
  const Topology t(c);
  const double pcie = c.node.pcie.bandwidth_Bps();
  // NVLink: the rated 300 GB/s per direction times the 0.67 NCCL achieves on A100 (measured busbw).
  EXPECT_DOUBLE_EQ(t.link(t.find_link(t.gpu(3), t.nvswitch(0))).bandwidth_Bps, 0.67 * 300e9);
  EXPECT_DOUBLE_EQ(t.link(t.find_link(t.nvswitch(0), t.gpu(3))).bandwidth_Bps, 0.67 * 300e9);
  EXPECT_DOUBLE_EQ(t.link(t.find_link(t.gpu(3), t.pcie_switch(0, 1))).bandwidth_Bps, pcie);
  // GPUs 2 and 3 share a PCIe switch, but NVLink is the wider route.
  EXPECT_EQ(t.link(t.route(t.gpu(2), t.gpu(3)).links[0]).kind, LinkKind::Nvlink);
  EXPECT_DOUBLE_EQ(t.link(t.find_link(t.pcie_switch(0, 1), t.host_cpu(0))).bandwidth_Bps, pcie);
  EXPECT_DOUBLE_EQ(t.link(t.find_link(t.nvme(0), t.host_cpu(0))).bandwidth_Bps, 25e9);   // read
  EXPECT_DOUBLE_EQ(t.link(t.find_link(t.host_cpu(0), t.nvme(0))).bandwidth_Bps, 12e9);   // write
  EXPECT_DOUBLE_EQ(t.link(t.find_link(t.host_cpu(0), t.host(0))).bandwidth_Bps, 410e9);
  EXPECT_THROW(t.find_link(t.gpu(0), t.gpu(1)), SpecError);  // switched: no direct GPU link
}

TEST(Topology, GpuToGpuInsideADgxGoesOverNvswitch) {
  const Cluster c = dgx_a100();
  const Topology t(c);
  const Route r = t.route(t.gpu(2), t.gpu(6));
  ASSERT_EQ(r.links.size(), 2u);
  EXPECT_EQ(t.link(r.links[0]).to, t.nvswitch(0));
  EXPECT_EQ(t.link(r.links[1]).to, t.gpu(6));
  EXPECT_DOUBLE_EQ(r.latency_s, c.node.nvlink->latency_s);
  EXPECT_TRUE(t.route(t.gpu(2), t.gpu(2)).links.empty());
}

TEST(Topology, GpuToHostCrossesItsSwitchAndTheSharedUplink) {
  const Cluster c = dgx_a100();
  const Topology t(c);
  const Route r = t.route(t.gpu(5), t.host(0));
  ASSERT_EQ(r.links.size(), 3u);
  EXPECT_EQ(r.links[0], t.find_link(t.gpu(5), t.pcie_switch(0, 2)));
  EXPECT_EQ(r.links[1], t.find_link(t.pcie_switch(0, 2), t.host_cpu(0)));
  EXPECT_EQ(r.links[2], t.find_link(t.host_cpu(0), t.host(0)));
  EXPECT_DOUBLE_EQ(r.latency_s, c.node.pcie.latency_s);
  // GPU 4 shares that uplink; GPU 6 does not.
  EXPECT_EQ(t.route(t.gpu(4), t.host(0)).links[1], r.links[1]);
  EXPECT_NE(t.route(t.gpu(6), t.host(0)).links[1], r.links[1]);
}

TEST(Topology, WithoutNvlinkGpusTalkThroughTheirSwitchOrTheHost) {
  const Cluster c = pcie_box(4, 2);
  const Topology t(c);
  const Route same = t.route(t.gpu(0), t.gpu(1));  // same switch: peer to peer
  ASSERT_EQ(same.links.size(), 2u);
  EXPECT_EQ(t.link(same.links[0]).to, t.pcie_switch(0, 0));
  EXPECT_DOUBLE_EQ(same.latency_s, c.node.pcie.latency_s);
  const Route other = t.route(t.gpu(0), t.gpu(3));  // GPU -> switch -> host -> switch -> GPU
  ASSERT_EQ(other.links.size(), 4u);
  EXPECT_EQ(t.link(other.links[0]).to, t.pcie_switch(0, 0));
  EXPECT_EQ(t.link(other.links[1]).to, t.host_cpu(0));
  EXPECT_EQ(t.link(other.links[2]).to, t.pcie_switch(0, 1));
  EXPECT_EQ(t.link(other.links[3]).to, t.gpu(3));
  EXPECT_DOUBLE_EQ(other.latency_s, c.intra_node_latency_s());
}

TEST(Topology, InterNodeTrafficUsesEachGpusOwnNic) {
  const Cluster c = dgx_a100(2);
  const Topology t(c);
  for (int g = 0; g < 8; ++g) {
    EXPECT_EQ(t.nic_of_gpu(g), g);
    const Route r = t.route(t.gpu(g), t.gpu(8 + (g + 3) % 8));
    // GPU -> switch -> NIC -> fabric -> NIC -> switch -> GPU
    ASSERT_EQ(r.links.size(), 6u) << g;
    EXPECT_EQ(t.link(r.links[0]).to, t.pcie_switch(0, g / 2));
    EXPECT_EQ(t.link(r.links[1]).to, t.nic(0, g));
    EXPECT_EQ(t.link(r.links[2]).kind, LinkKind::Network);
    EXPECT_EQ(t.link(r.links[3]).to, t.nic(1, (g + 3) % 8));
    EXPECT_DOUBLE_EQ(r.latency_s, 2 * c.node.pcie.latency_s + c.node.nic->latency_s);
  }
}

TEST(Topology, FewerNicsThanGpusAreSharedBySwitch) {
  Cluster c = dgx_a100(2);
  c.node.nic->count = 4;
  const Topology t(c);
  for (int g = 0; g < 8; ++g) EXPECT_EQ(t.nic_of_gpu(g), g / 2);
  const Route r = t.route(t.gpu(5), t.gpu(8));
  EXPECT_EQ(t.link(r.links[1]).to, t.nic(0, 2));  // NIC 2 sits on switch 2 with GPUs 4 and 5
}

TEST(Topology, NvlinkWithoutSwitchIsARingOfDirectLinks) {
  Cluster c = pcie_box(4, 2);
  c.node.nvlink = NvlinkSpec{100e9, 3e-6, NvlinkTopology::ring};
  const Topology t(c);
  EXPECT_DOUBLE_EQ(t.link(t.find_link(t.gpu(0), t.gpu(1))).bandwidth_Bps, 50e9);
  EXPECT_DOUBLE_EQ(t.link(t.find_link(t.gpu(3), t.gpu(0))).bandwidth_Bps, 50e9);
  EXPECT_EQ(t.route(t.gpu(0), t.gpu(1)).links.size(), 1u);
  const Route far = t.route(t.gpu(0), t.gpu(2));  // forwarded by a neighbour, not via PCIe
  ASSERT_EQ(far.links.size(), 2u);
  EXPECT_EQ(t.link(far.links[0]).kind, LinkKind::Nvlink);
  EXPECT_EQ(t.link(far.links[1]).kind, LinkKind::Nvlink);
  Cluster two = pcie_box(2, 2);
  two.node.nvlink = NvlinkSpec{100e9, 3e-6, NvlinkTopology::ring};
  const Topology t2(two);
  EXPECT_DOUBLE_EQ(t2.link(t2.find_link(t2.gpu(0), t2.gpu(1))).bandwidth_Bps, 100e9);
}

TEST(Topology, AMeshHasOneDirectLinkPerGpuPair) {
  // AMD MI300X: 8 GPUs, 7 xGMI links each. nvlink.bandwidth (448 GB/s per direction, x 0.70
  // achieved) is the GPU's over its 7 links: 44.8 GB/s each way on each of 8 x 7 / 2 = 28 links.
  const Cluster c = testing::mi300x();
  const Topology t(c);
  const double pair_Bps = 448e9 * 0.70 / 7;
  int gpu_links = 0;
  for (LinkId l = 0; l < t.link_count(); ++l) {
    const LinkInfo info = t.link(l);
    if (info.kind != LinkKind::Nvlink) continue;
    ASSERT_GE(t.gpu_index(info.from), 0) << info.name;  // no switch: GPU to GPU only
    ASSERT_GE(t.gpu_index(info.to), 0) << info.name;
    EXPECT_NEAR(info.bandwidth_Bps, pair_Bps, 1e-9 * pair_Bps) << info.name;
    ++gpu_links;
  }
  EXPECT_EQ(gpu_links, 2 * (8 * 7 / 2));  // 28 links, each two directed links
  EXPECT_EQ(count_kind(t, VertexKind::NvSwitch), 0);
  for (int a = 0; a < 8; ++a)
    for (int b = 0; b < 8; ++b) {
      if (a == b) continue;
      const Route r = t.route(t.gpu(a), t.gpu(b));  // every pair direct, never forwarded
      ASSERT_EQ(r.links.size(), 1u) << a << "->" << b;
      EXPECT_EQ(r.links[0], t.find_link(t.gpu(a), t.gpu(b)));
      EXPECT_DOUBLE_EQ(r.latency_s, 5e-6);
    }
}

TEST(Topology, BadRequestsAndClustersGiveClearErrors) {
  const Topology t(dgx_a100());
  try {
    t.gpu(8);
    FAIL();
  } catch (const SpecError& e) {
    EXPECT_STREQ(e.what(), "GPU 8 does not exist (the cluster has 8 GPUs)");
  }
  EXPECT_THROW(t.host(1), SpecError);
  Cluster no_nic = dgx_a100(2);
  no_nic.node.nic.reset();
  try {
    Topology bad(no_nic);
    FAIL();
  } catch (const SpecError& e) {
    EXPECT_STREQ(e.what(), "topology: cluster 'dgx-a100-80gb' has 2 nodes but node.nic is absent: the nodes cannot talk");
  }
  Cluster no_nvme = pcie_box();
  no_nvme.node.nvme.reset();
  const Topology t2(no_nvme);
  try {
    t2.nvme(0);
    FAIL();
  } catch (const SpecError& e) {
    EXPECT_STREQ(e.what(), "node 0 has no NVMe in its hwprofile");
  }
}

}  // namespace
}  // namespace starfish::des

#include <gtest/gtest.h>

#include "sim/cost/collectives.h"
#include "test_support.h"

namespace starfish {
namespace {

TEST(Collectives, RingAllReduceIsAlphaBeta) {
  const LinkParams link{100e9, 5e-6, false};
  const double B = 1e9;
  for (int n : {2, 4, 8, 64}) {
    const double expected = 2.0 * (n - 1) * (5e-6 + B / n / 100e9);
    EXPECT_DOUBLE_EQ(collective_time_s(CollectiveKind::all_reduce, CollectiveAlgorithm::ring, n, B, link), expected);
    EXPECT_DOUBLE_EQ(collective_time_s(CollectiveKind::all_gather, CollectiveAlgorithm::ring, n, B, link), expected / 2);
  }
  EXPECT_DOUBLE_EQ(collective_time_s(CollectiveKind::all_reduce, CollectiveAlgorithm::ring, 1, B, link), 0);
}

TEST(Collectives, TreeTradesLatencyForBandwidth) {
  const LinkParams link{100e9, 5e-6, false};
  // Small message, many ranks: the tree's log(n) latency wins; large message: the ring wins.
  EXPECT_LT(collective_time_s(CollectiveKind::all_reduce, CollectiveAlgorithm::tree, 1024, 1e3, link),
            collective_time_s(CollectiveKind::all_reduce, CollectiveAlgorithm::ring, 1024, 1e3, link));
  EXPECT_GT(collective_time_s(CollectiveKind::all_reduce, CollectiveAlgorithm::tree, 8, 1e10, link),
            collective_time_s(CollectiveKind::all_reduce, CollectiveAlgorithm::ring, 8, 1e10, link));
  EXPECT_DOUBLE_EQ(collective_time_s(CollectiveKind::all_reduce, CollectiveAlgorithm::tree, 8, 1e9, link),
                   2 * (3 * 5e-6 + 1e9 / 100e9));
}

TEST(Collectives, BytesSentPerRank) {
  EXPECT_DOUBLE_EQ(collective_bytes_sent_per_rank(CollectiveKind::all_reduce, 4, 1000), 1500);
  EXPECT_DOUBLE_EQ(collective_bytes_sent_per_rank(CollectiveKind::reduce_scatter, 4, 1000), 750);
  EXPECT_DOUBLE_EQ(collective_bytes_sent_per_rank(CollectiveKind::all_gather, 1, 1000), 0);
}

TEST(Collectives, GroupsPickTheirLink) {
  const Cluster c = testing::dgx(4);
  const LinkParams tp = link_for_group(c, 8, 1);  // one node: NVSwitch
  EXPECT_FALSE(tp.inter_node);
  EXPECT_DOUBLE_EQ(tp.bandwidth_Bps, 300e9);
  const LinkParams dp = link_for_group(c, 4, 8);  // one GPU per node: its NIC
  EXPECT_TRUE(dp.inter_node);
  EXPECT_DOUBLE_EQ(dp.bandwidth_Bps, 25e9);
  const LinkParams wide = link_for_group(c, 32, 1);  // 8 per node drive 8 NICs
  EXPECT_DOUBLE_EQ(wide.bandwidth_Bps, 200e9);
}

TEST(Collectives, AcrossNodesAGpusBytesReachItsNicOverPcieNotNvlink) {
  // GPUDirect RDMA: a member's bytes to another node go over its PCIe link to its NIC, whose own
  // PCIe link the GPUs sharing that NIC take turns on; NVLink carries none of them. A node of
  // 8 GPUs and 4 NICs of 50 GB/s on PCIe gen 3 x16 (12.6 GB/s achieved): per GPU, when all send,
  // min(4 x 50 / 8, 12.6 / 2) = 6.3 GB/s, whatever NVLink's rate (it bounded one-member-a-node
  // groups at 10 GB/s NVLink before, though no byte crosses it).
  Cluster c = testing::dgx(4);
  c.node.nic->count = 4;
  c.node.nic->bandwidth_Bps = 50e9;
  c.node.nic->efficiency = 1;
  c.node.pcie.generation = 3;
  c.node.pcie.lanes = 16;
  const double pcie_Bps = 8e9 * 128.0 / 130.0 / 8.0 * 16 * c.node.pcie.efficiency;
  EXPECT_NEAR(c.inter_node_bandwidth_per_gpu_Bps(), pcie_Bps / 2, 1);
  for (const double nvlink_Bps : {10e9, 300e9}) {
    c.node.nvlink->bandwidth_Bps = nvlink_Bps;
    EXPECT_NEAR(link_for_group(c, 4, 8).bandwidth_Bps, pcie_Bps / 2, 1) << nvlink_Bps;  // one member a node
    EXPECT_NEAR(link_for_group(c, 8, 4).bandwidth_Bps, std::min(2 * pcie_Bps / 2, 2 * c.intra_node_group_bandwidth_Bps(2, 4)), 1);
  }
  // With fast PCIe the NICs' share bounds it again.
  c.node.pcie.generation = 5;
  EXPECT_DOUBLE_EQ(c.inter_node_bandwidth_per_gpu_Bps(), 25e9);
}

// How much of a member's NVLink a ring over the group keeps busy (what TP's collectives then give
// up): all of it inside one node; none with one member a node (every byte to its NIC); with L a
// node, hierarchical, (L - 1) / L of its bytes cross NVLink at the pace its L NICs set, against
// the L / (L - 1) x 300 GB/s those pieces could take.
TEST(Collectives, AHierarchicalRingKeepsItsShareOfTheNodesLinksBusy) {
  const Cluster c = testing::dgx(4);  // 300 GB/s NVSwitch, a 25 GB/s NIC per GPU
  EXPECT_DOUBLE_EQ(node_links_share(c, 8, 1), 1.0);
  EXPECT_DOUBLE_EQ(node_links_share(c, 4, 8), 0.0);
  EXPECT_NEAR(node_links_share(c, 32, 1), 200e9 / (300e9 * 8 / 7), 1e-12);  // 8 a node: 0.58
  EXPECT_NEAR(node_links_share(c, 8, 4), 50e9 / (300e9 * 2), 1e-12);        // 2 a node: 0.083
}

TEST(Collectives, OverPcieAGroupSharesASwitchUplinkOnlyWithTheGroupsBesideIt) {
  // GPUs pair up behind gen4 x16 switches (31.5 GB/s raw a direction, 80% achieved = 25.2 GB/s).
  // A ring climbs each switch's uplink once a direction (PCIe is full duplex), so one group
  // over the whole node gets the whole link; DP groups over TP 2 are two rings per uplink, half;
  // a pair behind one switch never climbs. Host copies are what divides by the GPUs per root.
  Cluster pcie = testing::dgx(1);
  pcie.node.nvlink.reset();
  const double link_Bps = 16e9 * 16 / 8 * 128 / 130 * 0.8;
  EXPECT_NEAR(link_for_group(pcie, 8, 1).bandwidth_Bps, link_Bps, 1);
  EXPECT_NEAR(link_for_group(pcie, 4, 2).bandwidth_Bps, link_Bps / 2, 1);
  EXPECT_NEAR(link_for_group(pcie, 2, 4).bandwidth_Bps, link_Bps / 2, 1);
  EXPECT_NEAR(link_for_group(pcie, 2, 1).bandwidth_Bps, link_Bps, 1);
  EXPECT_NEAR(pcie.intra_node_bandwidth_Bps(), link_Bps / 2, 1);
  // Pipeline sends: every GPU of a 2-GPU stage sends at once, two per uplink; 1-GPU stages alone.
  EXPECT_NEAR(link_for_send(pcie, 4, 2).bandwidth_Bps, link_Bps / 2, 1);
  EXPECT_NEAR(link_for_send(pcie, 8, 1).bandwidth_Bps, link_Bps, 1);
  // An all-to-all over the node, 1 GB a GPU (125 MB a peer): each uplink carries both GPUs' six
  // remote shares (12 x 125 MB), more than a GPU's own link (7 x 125 MB); latency 7 x 2 us.
  EXPECT_NEAR(all_to_all_time_s(pcie, 8, 1, 1e9), 7 * 2 * pcie.node.pcie.latency_s + 12 * 125e6 / link_Bps, 1e-9);
}

// An 8-GPU node on a full mesh, as AMD MI300X's xGMI: 448 GB/s per direction over 7 links,
// 0.70 achieved (313.6 GB/s; 44.8 GB/s a link), 5 us per step.
Cluster mesh_node(int nodes) {
  Cluster c = testing::dgx(nodes);
  c.node.nvlink = NvlinkSpec{448e9, 5e-6, NvlinkTopology::mesh, 0.70};
  return c;
}

TEST(Collectives, OnAMeshAGroupGetsTheLinksAmongItsMembers) {
  const Cluster c = mesh_node(1);
  EXPECT_NEAR(link_for_group(c, 8, 1).bandwidth_Bps, 313.6e9, 1e-3);  // 7 links
  EXPECT_NEAR(link_for_group(c, 4, 2).bandwidth_Bps, 134.4e9, 1e-3);  // 3 links, whatever the stride
  EXPECT_NEAR(link_for_group(c, 2, 1).bandwidth_Bps, 44.8e9, 1e-3);   // 1 link
  // 8-GPU all-reduce of 1 GB: 14 x (5 us + 1e9 / 8 / 313.6e9 s) = 5.6504 ms.
  EXPECT_NEAR(collective_time_s(CollectiveKind::all_reduce, CollectiveAlgorithm::ring, 8, 1e9, link_for_group(c, 8, 1)),
              5.6504e-3, 1e-4 * 5.6504e-3);
  // A pipeline send between two stages of one node: one link whatever the PP group's size.
  // 1 GB: 5 us + 1e9 / 44.8e9 s = 22.326 ms.
  const LinkParams pp = link_for_send(c, 4, 2);
  EXPECT_FALSE(pp.inter_node);
  EXPECT_NEAR(collective_time_s(CollectiveKind::send_recv, CollectiveAlgorithm::ring, 2, 1e9, pp), 22.326e-3, 1e-4 * 22.326e-3);
  EXPECT_NEAR(link_for_group(c, 4, 2).bandwidth_Bps / link_for_send(c, 4, 2).bandwidth_Bps, 3.0, 1e-12);
  // All-to-all: every peer's eighth over its own link at once: 7 x 5 us + 1e9 / 8 / 44.8e9 s.
  EXPECT_NEAR(all_to_all_time_s(c, 8, 1, 1e9), 7 * 5e-6 + 1e9 / 8 / 44.8e9, 1e-12);
}

TEST(Collectives, OnAMeshAcrossNodesTheMembersOnANodeShareTheirLinks) {
  const Cluster c = mesh_node(2);
  // 8 per node: the NICs (8 x 25 GB/s) bind before the 7 links (313.6 GB/s).
  EXPECT_DOUBLE_EQ(link_for_group(c, 16, 1).bandwidth_Bps, 200e9);
  // 2 per node (stride 4): a channel a rail, so each member sends half of the ring's bytes over
  // its one 44.8 GB/s link (89.6 GB/s for the whole) and half through its NIC: the 2 NICs' 50 GB/s
  // bind.
  EXPECT_NEAR(link_for_group(c, 4, 4).bandwidth_Bps, 50e9, 1e-3);
  // One per node: PCIe to its NIC, no xGMI link in the way.
  EXPECT_DOUBLE_EQ(link_for_group(c, 2, 8).bandwidth_Bps, 25e9);
}

TEST(Collectives, OnARingOfDirectLinksOnlyTheWholeRingGetsBothLinks) {
  // Each GPU's 300 GB/s is split over its two neighbour links; the event-driven tier runs the
  // whole ring both ways (300 GB/s), any part of it one way (150 GB/s), a send over one link.
  Cluster c = testing::dgx(1);
  c.node.nvlink->topology = NvlinkTopology::ring;
  EXPECT_DOUBLE_EQ(link_for_group(c, 8, 1).bandwidth_Bps, 300e9);
  EXPECT_DOUBLE_EQ(link_for_group(c, 4, 1).bandwidth_Bps, 150e9);
  EXPECT_DOUBLE_EQ(link_for_send(c, 8, 1).bandwidth_Bps, 150e9);
  c.node.gpus = 2;  // two GPUs: one link between them, whole
  EXPECT_DOUBLE_EQ(link_for_group(c, 2, 1).bandwidth_Bps, 300e9);
  // An NVSwitch gives every group and every pair the GPU's whole rate.
  const Cluster nvswitch = testing::dgx(1);
  EXPECT_DOUBLE_EQ(link_for_send(nvswitch, 8, 1).bandwidth_Bps, 300e9);
  EXPECT_DOUBLE_EQ(link_for_group(nvswitch, 2, 1).bandwidth_Bps, 300e9);
}

}  // namespace
}  // namespace starfish

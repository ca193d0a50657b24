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
  Cluster pcie = c;
  pcie.node.nvlink.reset();  // GPUs pair up behind gen4 x16 switches
  EXPECT_NEAR(link_for_group(pcie, 8, 1).bandwidth_Bps, 16e9 * 16 / 8 * 128 / 130 * 0.8 / 2, 1);  // 31.5 GB/s raw, 80%, 2 GPUs
}

}  // namespace
}  // namespace starfish

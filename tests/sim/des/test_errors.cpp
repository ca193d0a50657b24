#include <gtest/gtest.h>

#include <limits>
#include <string>

#include "sim/des/engine.h"
#include "sim/spec/error.h"
#include "support/error_of.h"
#include "tests/sim/des/des_clusters.h"

namespace starfish::des {
namespace {

using testing::dgx_a100;
using testing::pcie_box;

using ::starfish::testing::error_of;

TEST(Errors, ADependencyCycleNamesItsTasks) {
  const Topology topo(dgx_a100());
  Engine e(topo);
  const TaskId a = e.compute(0, 1e-3, {0, "a"});
  const TaskId b = e.compute(0, 1e-3, {0, "b"});
  const TaskId c = e.transfer(topo.gpu(0), topo.gpu(1), 1e6, {0, "c"});
  const TaskId free = e.compute(1, 1e-3, {0, "free"});
  e.depends(b, a);
  e.depends(c, b);
  e.depends(a, c);
  e.depends(free, a);  // blocked by the cycle, not part of it
  EXPECT_EQ(error_of([&] { e.run(); }),
            "dependency cycle: task 0 'a' -> task 1 'b' -> task 2 'c' -> task 0 'a'");
}

TEST(Errors, SendRecvIsATransferNotACollective) {
  const Topology topo(dgx_a100());
  Engine e(topo);
  const GroupId g = e.group({0, 1});
  EXPECT_EQ(error_of([&] { e.collective(CollectiveKind::send_recv, g, 1e6, {0, "p2p"}); }),
            "collective 'p2p': send-recv is a point-to-point transfer (use transfer())");
}

TEST(Errors, TasksOnDevicesThatDoNotExist) {
  const Topology topo(dgx_a100());
  Engine e(topo);
  EXPECT_EQ(error_of([&] { e.compute(8, 1e-3, {0, "fwd s7"}); }),
            "compute 'fwd s7': GPU 8 does not exist (the cluster has 8 GPUs)");
  EXPECT_EQ(error_of([&] { e.copy(-1, CopyDir::H2D, 1e6, {0, "prefetch"}); }),
            "copy 'prefetch': GPU -1 does not exist (the cluster has 8 GPUs)");
  EXPECT_EQ(error_of([&] { e.nvme_read(1, 1e6, {0, "swap in"}); }),
            "nvme-read 'swap in': node 1 does not exist (the cluster has 1 nodes)");
  EXPECT_EQ(error_of([&] { e.transfer(topo.gpu(0), 100000, 1e6, {0, "x"}); }),
            "transfer 'x': topology: device 100000 does not exist (the graph has " +
                std::to_string(topo.vertex_count()) + " vertices)");
  Cluster no_nvme = pcie_box();
  no_nvme.node.nvme.reset();
  const Topology t2(no_nvme);
  Engine e2(t2);
  EXPECT_EQ(error_of([&] { e2.nvme_write(0, 1e6, {0, "spill"}); }),
            "nvme-write 'spill': node 0 has no NVMe in its hwprofile");
  EXPECT_EQ(e.task_count(), 0u);  // nothing half-made
}

TEST(Errors, BadNumbersAndDependencies) {
  const Topology topo(dgx_a100());
  Engine e(topo);
  EXPECT_EQ(error_of([&] { e.compute(0, -1e-3, {0, "neg"}); }),
            "compute 'neg': duration must be a finite number >= 0 s, got -0.001000");
  EXPECT_EQ(error_of([&] { e.copy(0, CopyDir::D2H, std::numeric_limits<double>::quiet_NaN(), {0, "nan"}); }),
            "copy 'nan': bytes must be a finite number >= 0, got nan");
  const TaskId t = e.compute(0, 1e-3, {0, "k"});
  EXPECT_EQ(error_of([&] { e.depends(t, 5); }), "depends: task 5 does not exist (there are 1 tasks)");
  EXPECT_EQ(error_of([&] { e.depends(t, t); }), "depends: task 0 'k' cannot depend on itself");
  EXPECT_EQ(error_of([&] { e.compute(0, 1e-3, {77, "cat"}); }), "compute 'cat': category 77 does not exist");
  EXPECT_EQ(error_of([&] { e.set_link_bandwidth(0, 0); }),
            "set_link_bandwidth: " + topo.link(0).name + ": bandwidth must be positive, got 0.000000");
  EXPECT_EQ(error_of([&] { e.delay(1e-3, {0, "w"}, 12345); }),
            "delay 'w': resource 12345 does not exist (there are " + std::to_string(e.resource_count()) + ")");
}

}  // namespace
}  // namespace starfish::des

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <vector>

#include "sim/des/engine.h"
#include "sim/spec/error.h"
#include "tests/sim/des/des_clusters.h"

namespace starfish::des {
namespace {

using testing::dgx_a100;
using testing::pcie_box;

TEST(Engine, AChainOfComputeTasksSumsExactly) {
  const Topology topo(dgx_a100());
  Engine e(topo);
  const CategoryId fwd = e.category("fwd");
  const std::vector<double> d = {1.5e-3, 0.1, 2.7e-5, 3.3e-4, 0.0, 7.77e-2};
  TaskId prev = kNone;
  double expect = 0;
  std::vector<double> ends;
  for (double x : d) {
    const TaskId t = e.compute(3, x, {fwd, "layer"});
    if (prev != kNone) e.depends(t, prev);
    prev = t;
    expect += x;
    ends.push_back(expect);
  }
  const Results& r = e.run();
  for (size_t i = 0; i < d.size(); ++i) EXPECT_EQ(r.end_s[i], ends[i]) << i;
  EXPECT_EQ(r.makespan_s, expect);
  EXPECT_EQ(r.resource_busy_s[e.compute_stream(3)], r.end_s.back() - 0.0);
  EXPECT_EQ(r.category_busy_s(3, fwd), expect);
  EXPECT_EQ(r.category_busy_s(2, fwd), 0.0);
}

TEST(Engine, ProgressCountsTheTasksEndedSoFar) {
  const Topology topo(dgx_a100());
  Engine e(topo);
  const CategoryId fwd = e.category("fwd");
  constexpr size_t kTasks = 20000;  // several of the engine's polls (every 4096 events)
  for (size_t i = 0; i < kTasks; ++i) e.compute(static_cast<int>(i % 8), 1e-6, {fwd, "t"});
  std::vector<size_t> seen;
  e.set_progress([&](size_t done, size_t total) {
    EXPECT_EQ(total, kTasks);
    seen.push_back(done);
  });
  e.run();
  ASSERT_GE(seen.size(), 4u);
  EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end()));
  EXPECT_GT(seen.front(), 0u);
  EXPECT_LT(seen.back(), kTasks);  // called while running, not after the last task
}

TEST(Engine, ASerialResourceRunsTasksInReadyOrderTiesById) {
  const Topology topo(dgx_a100());
  Engine e(topo);
  // Task 0 runs first (10 ms); tasks 1, 2 become ready at 0 and wait; task 3 is ready at
  // 5 ms (after a delay) and must wait behind them although task 4 was ready at 0 too.
  const TaskId a = e.compute(0, 10e-3, {0, "a"});
  const TaskId b = e.compute(0, 1e-3, {0, "b"});
  const TaskId c = e.compute(0, 2e-3, {0, "c"});
  const TaskId late = e.compute(0, 4e-3, {0, "late"});
  const TaskId d = e.compute(0, 3e-3, {0, "d"});
  const TaskId wait = e.delay(5e-3, {0, "wait"});
  e.depends(late, wait);
  const Results& r = e.run();
  EXPECT_EQ(r.start_s[a], 0.0);
  EXPECT_EQ(r.start_s[b], 10e-3);
  EXPECT_EQ(r.start_s[c], r.end_s[b]);
  EXPECT_EQ(r.start_s[d], r.end_s[c]);
  EXPECT_EQ(r.start_s[late], r.end_s[d]);
  EXPECT_EQ(r.ready_s[late], 5e-3);
}

TEST(Engine, TasksReadyAtTheSameInstantStartInIdOrderWhateverTheEventOrder) {
  const Topology topo(dgx_a100());
  Engine e(topo);
  // Two predecessors end at the same instant; their successors (on one stream) were created
  // in the opposite order of the predecessors' ends.
  const TaskId p1 = e.compute(1, 1e-3, {0, "p1"});
  const TaskId p2 = e.compute(2, 1e-3, {0, "p2"});
  const TaskId s_low = e.compute(0, 1e-3, {0, "low"});
  const TaskId s_high = e.compute(0, 1e-3, {0, "high"});
  e.depends(s_high, p1);
  e.depends(s_low, p2);
  const Results& r = e.run();
  EXPECT_EQ(r.start_s[s_low], 1e-3);
  EXPECT_EQ(r.start_s[s_high], 2e-3);
}

TEST(Engine, CopiesUseTheirEngineAndTheRouteToHostMemory) {
  const Cluster c = dgx_a100();
  const Topology topo(c);
  Engine e(topo);
  const double bytes = 256e6, pcie = c.node.pcie.bandwidth_Bps(), lat = c.node.pcie.latency_s;
  const TaskId k = e.compute(0, 1e-3, {0, "k"});
  const TaskId d2h = e.copy(0, CopyDir::D2H, bytes, {0, "offload"});
  const TaskId h2d = e.copy(0, CopyDir::H2D, bytes, {0, "prefetch"});
  e.depends(d2h, k);
  const Results& r = e.run();
  // Full duplex: H2D at t=0 and D2H after the kernel do not slow each other.
  EXPECT_DOUBLE_EQ(r.end_s[h2d], bytes / pcie + lat);
  EXPECT_DOUBLE_EQ(r.start_s[d2h], 1e-3);
  EXPECT_DOUBLE_EQ(r.end_s[d2h], 1e-3 + bytes / pcie + lat);
  const LinkId up = topo.find_link(topo.gpu(0), topo.pcie_switch(0, 0));
  const LinkId down = topo.find_link(topo.pcie_switch(0, 0), topo.gpu(0));
  EXPECT_EQ(r.link_bytes[up], bytes);
  EXPECT_EQ(r.link_bytes[down], bytes);
  EXPECT_EQ(r.link_bytes[topo.find_link(topo.gpu(1), topo.pcie_switch(0, 0))], 0.0);
  EXPECT_DOUBLE_EQ(r.resource_busy_s[e.copy_engine(0, CopyDir::D2H)], bytes / pcie + lat);
  EXPECT_DOUBLE_EQ(r.link_busy_s[up], bytes / pcie);  // the link is free once the last byte is sent
}

TEST(Engine, TwoCopiesOnOneEngineRunOneAfterTheOther) {
  const Cluster c = dgx_a100();
  const Topology topo(c);
  Engine e(topo);
  const double bytes = 100e6, pcie = c.node.pcie.bandwidth_Bps(), lat = c.node.pcie.latency_s;
  const TaskId a = e.copy(0, CopyDir::D2H, bytes, {0, "a"});
  const TaskId b = e.copy(0, CopyDir::D2H, bytes, {0, "b"});
  const Results& r = e.run();
  EXPECT_DOUBLE_EQ(r.end_s[a], bytes / pcie + lat);
  EXPECT_EQ(r.start_s[b], r.end_s[a]);
  EXPECT_DOUBLE_EQ(r.end_s[b], 2 * (bytes / pcie + lat));
}

TEST(Engine, NvmeReadsAndWritesUseTheirDirectionsBandwidth) {
  const Cluster c = pcie_box();
  const Topology topo(c);
  Engine e(topo);
  const double bytes = 1e9;
  const TaskId rd = e.nvme_read(0, bytes, {0, "read"});
  const TaskId wr = e.nvme_write(0, bytes, {0, "write"});
  const TaskId rd2 = e.nvme_read(0, bytes, {0, "read2"});
  const Results& r = e.run();
  EXPECT_DOUBLE_EQ(r.end_s[rd], bytes / c.node.nvme->read_Bps + c.node.nvme->latency_s);
  EXPECT_DOUBLE_EQ(r.end_s[wr], bytes / c.node.nvme->write_Bps + c.node.nvme->latency_s);
  EXPECT_EQ(r.start_s[rd2], r.end_s[rd]);  // one read queue
}

TEST(Engine, LinkBytesAreCountedPerDirection) {
  const Topology topo(dgx_a100());
  Engine e(topo);
  e.transfer(topo.gpu(1), topo.gpu(5), 3e6, {0, "p2p"});
  e.transfer(topo.gpu(5), topo.gpu(1), 1e6, {0, "back"});
  const Results& r = e.run();
  EXPECT_EQ(r.link_bytes[topo.find_link(topo.gpu(1), topo.nvswitch(0))], 3e6);
  EXPECT_EQ(r.link_bytes[topo.find_link(topo.nvswitch(0), topo.gpu(5))], 3e6);
  EXPECT_EQ(r.link_bytes[topo.find_link(topo.gpu(5), topo.nvswitch(0))], 1e6);
  EXPECT_EQ(r.link_bytes[topo.find_link(topo.nvswitch(0), topo.gpu(1))], 1e6);
  EXPECT_EQ(r.link_bytes[topo.find_link(topo.gpu(0), topo.nvswitch(0))], 0.0);
}

TEST(Engine, AZeroByteTransferTakesOnlyTheLatencyAndASelfTransferNothing) {
  const Cluster c = dgx_a100();
  const Topology topo(c);
  Engine e(topo);
  const TaskId z = e.transfer(topo.gpu(0), topo.gpu(1), 0, {0, "z"});
  const TaskId self = e.transfer(topo.gpu(2), topo.gpu(2), 1e9, {0, "self"});
  const Results& r = e.run();
  EXPECT_DOUBLE_EQ(r.end_s[z], c.node.nvlink->latency_s);
  EXPECT_EQ(r.end_s[self], 0.0);
}

TEST(Engine, RunTwiceGivesTheSameResults) {
  const Topology topo(dgx_a100(2));
  Engine e(topo);
  const GroupId g = e.group({0, 1, 2, 3, 4, 5, 6, 7});
  TaskId prev = e.compute(0, 1e-3, {0, "c"});
  for (int i = 0; i < 5; ++i) {
    const TaskId ar = e.collective(CollectiveKind::all_reduce, g, 50e6, {0, "ar"});
    const TaskId x = e.transfer(topo.gpu(i), topo.gpu(8 + i), 20e6, {0, "x"});
    const TaskId k = e.compute(i, 2e-4, {0, "k"});
    e.depends(ar, prev);
    e.depends(x, prev);
    e.depends(k, ar);
    prev = k;
  }
  const Results first = e.run();
  const Results& second = e.run();
  EXPECT_EQ(first.start_s, second.start_s);
  EXPECT_EQ(first.end_s, second.end_s);
  EXPECT_EQ(first.link_bytes, second.link_bytes);
  EXPECT_EQ(first.link_busy_s, second.link_busy_s);
  EXPECT_EQ(first.resource_busy_s, second.resource_busy_s);
}

TEST(Engine, StreamsOfYourOwnSerializeTransfersAndCollectives) {
  const Cluster c = dgx_a100();
  const Topology topo(c);
  Engine e(topo);
  const ResourceId s = e.add_stream("dp stream", 0);
  const GroupId g = e.group({0, 1, 2, 3});
  CollectiveOptions on_stream;
  on_stream.stream = s;
  const TaskId a = e.collective(CollectiveKind::all_gather, g, 40e6, {0, "ag"}, on_stream);
  const TaskId b = e.collective(CollectiveKind::all_gather, g, 40e6, {0, "ag2"}, on_stream);
  const TaskId x = e.transfer(topo.gpu(4), topo.gpu(5), 1e6, {0, "x"}, s);
  const Results& r = e.run();
  EXPECT_EQ(r.start_s[b], r.end_s[a]);
  EXPECT_EQ(r.start_s[x], r.end_s[b]);
  EXPECT_DOUBLE_EQ(r.end_s[a], 3.0 / 4 * 40e6 / c.node.nvlink->achieved_Bps() + 3 * c.node.nvlink->latency_s);
}

TEST(Engine, IntervalQueriesTellWhatRanWhen) {
  const Topology topo(dgx_a100());
  Engine e(topo);
  const CategoryId fwd = e.category("fwd"), tp = e.category("tp"), dp = e.category("dp");
  const GroupId g = e.group({0, 1});
  const TaskId k1 = e.compute(0, 4e-3, {fwd, "k1"});
  const TaskId k2 = e.compute(0, 4e-3, {fwd, "k2"});
  const TaskId w = e.delay(2e-3, {0, "w"});
  const TaskId comm = e.collective(CollectiveKind::all_reduce, g, 2e9, {tp, "ar"});
  e.depends(k2, k1);
  e.depends(comm, w);
  const TaskId gap = e.delay(12e-3, {0, "gap"});
  const TaskId k3 = e.compute(0, 1e-3, {fwd, "k3"});
  e.depends(k3, gap);
  const Results& r = e.run();
  const double comm_end = r.end_s[comm];
  ASSERT_GT(comm_end, 8e-3);  // the all-reduce outlasts k2
  ASSERT_LT(comm_end, 12e-3);
  const std::vector<CategoryId> compute{fwd}, comms{tp, dp};
  EXPECT_DOUBLE_EQ(r.busy_union_s(0, compute, 0, r.makespan_s), 9e-3);
  EXPECT_DOUBLE_EQ(r.busy_union_s(0, comms, 0, r.makespan_s), comm_end - 2e-3);
  EXPECT_DOUBLE_EQ(r.exposed_s(0, comms, compute, 0, r.makespan_s), comm_end - 8e-3);
  EXPECT_DOUBLE_EQ(r.busy_union_s(0, compute, 3e-3, 5e-3), 2e-3);
  EXPECT_DOUBLE_EQ(r.busy_union_s(0, {fwd}, 3e-3, 5e-3), 2e-3);
  EXPECT_DOUBLE_EQ(r.exposed_s(0, {tp, dp}, {fwd}, 0, r.makespan_s), comm_end - 8e-3);
  EXPECT_DOUBLE_EQ(r.category_busy_s(1, tp), comm_end - 2e-3);  // the collective occupies GPU 1 too
  EXPECT_EQ(r.tasks_running(4.5e-3, 5e-3), (std::vector<TaskId>{k2, comm, gap}));
  EXPECT_EQ(r.tasks_running(12.5e-3, 20e-3), (std::vector<TaskId>{k3}));
  EXPECT_EQ(r.tasks_on_gpu(1).size(), 1u);
  EXPECT_EQ(e.task_gpus(comm), (std::vector<int>{0, 1}));
}

TEST(Engine, AGpipePipelineHasTheTextbookBubble) {
  // p stages, m microbatches of equal forward time t, free communication: the makespan is
  // (m + p - 1) t and every stage is idle (p - 1) t of it.
  const Topology topo(dgx_a100());
  Engine e(topo);
  const CategoryId fwd = e.category("fwd");
  const int p = 4, m = 6;
  const double t = 1e-3;
  std::vector<TaskId> prev(m, kNone);
  for (int s = 0; s < p; ++s)
    for (int mb = 0; mb < m; ++mb) {
      const TaskId k = e.compute(s, t, {fwd, "fwd"});
      if (prev[mb] != kNone) e.depends(k, prev[mb]);
      prev[mb] = k;
    }
  const Results& r = e.run();
  EXPECT_DOUBLE_EQ(r.makespan_s, (m + p - 1) * t);
  const std::vector<CategoryId> compute{fwd};
  for (int s = 0; s < p; ++s) {
    const double busy = r.busy_union_s(s, compute, 0, r.makespan_s);
    EXPECT_DOUBLE_EQ(1 - busy / r.makespan_s, (p - 1.0) / (m + p - 1)) << s;
  }
}

TEST(Engine, ARaisedCancelFlagStopsTheRunPartWay) {
  const Topology topo(dgx_a100());
  Engine e(topo);
  TaskId prev = kNone;
  for (int i = 0; i < 100000; ++i) {  // far more events than one poll interval
    const TaskId t = e.compute(i % 8, 1e-6, {0, "t"});
    if (prev != kNone) e.depends(t, prev);
    prev = t;
  }
  std::atomic<bool> cancel{true};
  e.set_cancel(&cancel);
  EXPECT_THROW(e.run(), Cancelled);
  // Lowered, the same engine runs the whole DAG.
  cancel = false;
  EXPECT_NEAR(e.run().makespan_s, 0.1, 1e-9);
}

}  // namespace
}  // namespace starfish::des

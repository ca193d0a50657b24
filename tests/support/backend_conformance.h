#pragma once
// The Backend contract (sim/chunk/backend.h) as one test suite that every implementation runs,
// as ns-3 runs one test case over every scheduler: the counting ReferenceBackend and the
// simulator's SimBackend (tests/sim/schedule/test_backend_conformance.cpp) and the executor's
// TorchBackend (tests/exec/test_torch_backend.cpp). A backend's own tests check what only it
// does (the bytes a TorchBackend moves, the tasks a SimBackend makes); these check what the
// chunk runtime relies on from all of them.
//
// Instantiate with INSTANTIATE_TEST_SUITE_P(Name, BackendConformance, ::testing::Values(maker...),
// backend_maker_name), and BackendCapacityConformance for backends that enforce a capacity.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>

#include "sim/chunk/backend.h"

namespace starfish::testing {

struct BackendMaker {
  std::string name;
  // A fresh backend of rank 0 in a world of one whose GPU tier holds `gpu_bytes` (a backend
  // without capacities ignores it). The pointer owns whatever the backend needs (an engine, a
  // scratch folder).
  std::function<std::shared_ptr<Backend>(int64_t gpu_bytes)> make;
};

inline std::string backend_maker_name(const ::testing::TestParamInfo<BackendMaker>& info) { return info.param.name; }

class BackendConformance : public ::testing::TestWithParam<BackendMaker> {};
class BackendCapacityConformance : public ::testing::TestWithParam<BackendMaker> {};

TEST_P(BackendConformance, BuffersHaveTheTierAndBytesAskedAndIdsAreNeverReused) {
  const std::shared_ptr<Backend> b = GetParam().make(1 << 20);
  std::set<uint64_t> ids;
  for (Tier tier : {Tier::gpu, Tier::cpu, Tier::nvme}) {
    const Buffer x = b->allocate(tier, 4096);
    EXPECT_TRUE(x.valid());
    EXPECT_EQ(x.tier, tier);
    EXPECT_EQ(x.bytes, 4096);
    EXPECT_TRUE(ids.insert(x.id).second) << "id " << x.id << " given twice";
    b->release(x);
    const Buffer y = b->allocate(tier, 4096);
    EXPECT_TRUE(ids.insert(y.id).second) << "id " << y.id << " reused after its release";
  }
}

TEST_P(BackendConformance, CopiesBetweenEveryPairOfTiersCompleteAndTheClockNeverRunsBack) {
  const std::shared_ptr<Backend> b = GetParam().make(1 << 20);
  const Buffer g = b->allocate(Tier::gpu, 4096), c = b->allocate(Tier::cpu, 4096), n = b->allocate(Tier::nvme, 4096);
  double clock = b->now_s();
  Moment moment = 0;
  for (const auto& [from, to] : {std::pair{g, c}, std::pair{c, n}, std::pair{n, g}, std::pair{g, n}, std::pair{n, c}, std::pair{c, g}}) {
    for (Queue queue : {Queue::copy, Queue::compute}) {
      // A whole buffer, then a part of it (the first bytes).
      b->wait(b->copy(from, to, 4096, MoveTag{moment++, 0, MoveReason::eviction, queue}));
      b->wait(b->copy(from, to, 1024, MoveTag{moment++, 0, MoveReason::access, queue}));
      EXPECT_GE(b->now_s(), clock);
      clock = b->now_s();
    }
  }
  b->wait(Completion{});  // already complete: a no-op
  EXPECT_GE(b->now_s(), clock);
}

TEST_P(BackendConformance, ABufferMayBeReleasedWhileWorkOnItIsQueued) {
  // The runtime releases an evicted chunk's GPU buffer right after queueing its copy out.
  const std::shared_ptr<Backend> b = GetParam().make(8192);
  const Buffer g = b->allocate(Tier::gpu, 8192), c = b->allocate(Tier::cpu, 8192);
  const Completion done = b->copy(g, c, 8192, MoveTag{0, 0, MoveReason::eviction, Queue::copy});
  b->release(g);
  b->wait(done);
  const Buffer again = b->allocate(Tier::gpu, 8192);  // the whole GPU tier: the released bytes are free
  EXPECT_NE(again.id, g.id);
  b->release(c);
  b->release(again);
}

TEST_P(BackendConformance, CollectivesOfOneRankFollowTheBufferContract) {
  const std::shared_ptr<Backend> b = GetParam().make(1 << 20);
  const Group solo{7, {0}, 0, 0};
  const Buffer in = b->allocate(Tier::gpu, 64), out = b->allocate(Tier::gpu, 64);
  const MoveTag tag{0, 0, MoveReason::zero_gather, Queue::compute};
  b->wait(b->collective(CollectiveKind::all_gather, solo, {in}, {out}, DType::fp32, tag));
  b->wait(b->collective(CollectiveKind::reduce_scatter, solo, {in}, {out}, DType::fp32, tag));
  b->wait(b->collective(CollectiveKind::all_reduce, solo, {in}, {in}, DType::fp32, tag));
  b->wait(b->collective(CollectiveKind::broadcast, solo, {in}, {in}, DType::fp32, tag));
  b->wait(b->collective(CollectiveKind::reduce, solo, {out}, {out}, DType::fp32, tag));
  b->release(in);
  b->release(out);
}

TEST_P(BackendCapacityConformance, AllocatingBeyondTheGpuTiersCapacityThrowsAndReleasingFreesIt) {
  const std::shared_ptr<Backend> b = GetParam().make(1000);
  const Buffer x = b->allocate(Tier::gpu, 600);
  EXPECT_THROW(b->allocate(Tier::gpu, 500), std::runtime_error);
  b->release(x);
  const Buffer y = b->allocate(Tier::gpu, 1000);
  EXPECT_EQ(y.bytes, 1000);
}

}  // namespace starfish::testing

// The one fit rule (sim/cost/capacity.h) that estimate, simulate and the search apply.
#include <gtest/gtest.h>

#include <sstream>

#include "sim/cost/capacity.h"
#include "sim/cost/estimate.h"
#include "sim/spec/job.h"
#include "test_support.h"

namespace starfish {
namespace {

Cluster box() {
  Cluster c;
  c.node.gpus = 8;
  c.node.gpu.memory_bytes = 80LL << 30;
  c.node.gpu.reserved_bytes = 2LL << 30;
  c.node.host.memory_bytes = 1LL << 40;
  c.node.host.reserved_bytes = 64LL << 30;
  c.node.nvme = NvmeSpec{30LL << 40, 25e9, 12e9, 1e-4};
  return c;
}

TEST(Capacity, UsableIsMemoryLessReservedPerGpuAndPerNode) {
  Cluster c = box();
  TierBytes cap = usable_capacity(c);
  EXPECT_EQ(cap.gpu, 78.0 * (1LL << 30));
  EXPECT_EQ(cap.cpu, 960.0 * (1LL << 30));
  EXPECT_EQ(cap.nvme, 30.0 * (1LL << 40));
  c.node.nvme.reset();
  EXPECT_EQ(usable_capacity(c).nvme, 0);
}

// The words every verb prints and writes in its JSON ("binding", "constraint"): scripts read them.
TEST(Capacity, EachConstraintHasItsOneName) {
  EXPECT_STREQ(constraint_name(Constraint::none), "");
  EXPECT_STREQ(constraint_name(Constraint::gpu_memory), "GPU memory");
  EXPECT_STREQ(constraint_name(Constraint::cpu_memory), "CPU memory");
  EXPECT_STREQ(constraint_name(Constraint::nvme), "NVMe");
  EXPECT_STREQ(constraint_name(Constraint::time), "time");
  EXPECT_STREQ(constraint_name(Constraint::simulator), "simulator");
  EXPECT_STREQ(constraint_name(Constraint::no_valid_plan), "no valid plan for its shape");
  EXPECT_EQ(memory_constraint(Tier::gpu), Constraint::gpu_memory);
  EXPECT_EQ(memory_constraint(Tier::cpu), Constraint::cpu_memory);
  EXPECT_EQ(memory_constraint(Tier::nvme), Constraint::nvme);
  std::ostringstream os;
  os << Constraint::cpu_memory;
  EXPECT_EQ(os.str(), "\"CPU memory\"");
}

TEST(Capacity, APeakAtCapacityFitsAndOneByteMoreNamesTheFirstTierOver) {
  const TierBytes cap = usable_capacity(box());
  EXPECT_TRUE(check_memory(cap, cap).fits);
  TierBytes peak = cap;
  peak.cpu += 1;
  peak.nvme += 1;
  MemoryVerdict v = check_memory(peak, cap);
  EXPECT_FALSE(v.fits);
  EXPECT_EQ(v.tier, Tier::cpu);  // GPU, then CPU, then NVMe
  EXPECT_EQ(v.needed_bytes, cap.cpu + 1);
  EXPECT_EQ(v.capacity_bytes, cap.cpu);
  EXPECT_EQ(v.constraint(), Constraint::cpu_memory);
  peak = TierBytes{172.0 * (1LL << 30), 0, 0};
  v = check_memory(peak, cap);
  EXPECT_EQ(v.text(), "GPU memory: needs 172 GiB of 78.0 GiB per GPU");
  EXPECT_EQ(check_memory(TierBytes{0, 0, 1e12}, TierBytes{1, 1, 0}).text(), "NVMe: needs 931 GiB of 0 per node");
}

TEST(Capacity, OverflowingOnlyByTheAllocatorsReserveIsSaidButStillDoesNotFit) {
  const TierBytes cap{100, 1000, 0};
  // 120 reserved of 100, 95 of it tensors: over only by the allocator's reserve.
  MemoryVerdict v = check_memory(TierBytes{120, 0, 0}, cap, 95);
  EXPECT_FALSE(v.fits);
  EXPECT_TRUE(v.within_allocator_reserve);
  EXPECT_NE(v.text().find(MemoryVerdict::allocator_reserve_note()), std::string::npos) << v.text();
  // The tensors alone overflow, or another tier does, or the tensors are not known: no note.
  EXPECT_FALSE(check_memory(TierBytes{120, 0, 0}, cap, 101).within_allocator_reserve);
  EXPECT_FALSE(check_memory(TierBytes{120, 2000, 0}, cap, 95).within_allocator_reserve);
  EXPECT_FALSE(check_memory(TierBytes{120, 0, 0}, cap).within_allocator_reserve);
  EXPECT_EQ(check_memory(TierBytes{120, 0, 0}, cap).text().find("allocator"), std::string::npos);
}

// estimate() applies the same rule to its tier totals: a 22B GPT without parallelism overflows
// the GPU; split over TP 8 with the optimizer states (12 bytes per parameter) on a 128 GiB host,
// the host.
TEST(Capacity, EstimateVerdictIsCheckMemoryOfItsTotals) {
  Cluster c = testing::dgx(1);
  c.node.host.memory_bytes = 128LL << 30;
  Training t;
  t.global_batch = 8;
  Plan on_gpu, offloaded;
  offloaded.tp = 8;
  offloaded.zero_stage = 1;  // Megatron's --optimizer-cpu-offload runs in its distributed optimizer
  offloaded.offload.optimizer = Tier::cpu;
  for (const Plan& p : {on_gpu, offloaded}) {
    const Estimate e = estimate(make_job(testing::gpt(48, 6144, 48, 2048, 50257, "g"), c, t, p));
    const MemoryVerdict v = check_memory(TierBytes{e.gpu.total(), e.cpu.total(), e.nvme.total()}, usable_capacity(c));
    EXPECT_FALSE(v.fits);
    EXPECT_EQ(v.tier, p.tp == 1 ? Tier::gpu : Tier::cpu);
    EXPECT_EQ(e.fits, v.fits);
    EXPECT_EQ(e.memory.tier, v.tier);
    EXPECT_EQ(e.memory.needed_bytes, v.needed_bytes);
    EXPECT_EQ(e.why_not.rfind(p.tp == 1 ? "GPU memory: needs " : "CPU (per node) memory: needs ", 0), 0u) << e.why_not;
  }
}

}  // namespace
}  // namespace starfish

// tier_agreement: the analytic tier (estimate) against the event-driven one (simulate) on plans
// sampled from the search's space of ten models on five kinds of hardware, under four frameworks. "One truth": a plan
// the estimate says fits must fit in the simulator, and the estimate's GPU memory must never be
// below the simulated peak (memory is never under-predicted); its time may differ where the
// simulator overlaps what the estimate serialises. Prints the plans outside the bands and, per
// case, how many the estimate under-counts, the memory and time ratios, and verdict mismatches.
//
// usage: tier_agreement [plans per case (default 25)] [path/to/repo]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "sim/cost/estimate.h"
#include "sim/schedule/simulate.h"
#include "sim/search/plan_space.h"
#include "sim/spec/spec_io.h"

using namespace starfish;

namespace {

struct Case {
  std::string model, hardware;
  int nodes;
  int64_t global_batch;
  Framework framework;
};

struct Tally {
  int plans = 0, refused = 0, memory_under = 0, verdict_differs = 0, time_outside = 0;
  double worst_memory_under = 0, worst_memory_over = 0, worst_time_fast = 0, worst_time_slow = 0;
};

// The candidate's label, and whether its gradients' reduction overlaps the backward.
std::string label(const search::Candidate& k, const Job& job) {
  return search::short_label(k) + (job.plan.overlap_grad_reduce ? " overlap" : "");
}

// Flags a plan whose memory the estimate puts below the simulated peak, whose verdicts differ, or
// whose simulated time is more than 10% over the estimate's (the estimate overlaps less, so it may
// be slower; a faster estimate means the simulator pays something the estimate does not).
void compare(const search::Candidate& k, const Job& job, Tally& t) {
  const Estimate est = estimate(job);
  schedule::SimReport sim;
  try {
    sim = schedule::simulate(job);
  } catch (const std::exception& e) {
    // A plan the simulator refuses does not fit: a verdict that differs when the estimate says it does.
    ++t.refused;
    t.verdict_differs += est.fits;
    std::printf("  refused  %-58s (estimate: %s) %s\n", label(k, job).c_str(), est.fits ? "FITS" : "does not fit",
                e.what());
    return;
  }
  ++t.plans;
  const double memory = est.gpu.total() / sim.peak_gpu_bytes - 1, time = sim.iteration_s / est.time.iteration_s - 1;
  const bool under = memory < -1e-9, verdict = est.fits != sim.memory_verdict.fits, slow = time > 0.10;
  t.memory_under += under;
  t.verdict_differs += verdict;
  t.time_outside += slow;
  t.worst_memory_under = std::min(t.worst_memory_under, memory);
  t.worst_memory_over = std::max(t.worst_memory_over, memory);
  t.worst_time_fast = std::min(t.worst_time_fast, time);
  t.worst_time_slow = std::max(t.worst_time_slow, time);
  if (under || verdict || slow)
    std::printf("  %-67s GPU est %7.2f sim %7.2f GiB (%+6.1f%%) fits %d/%d  time est %8.3f sim %8.3f s (%+6.1f%%)\n",
                label(k, job).c_str(), est.gpu.total() / 1073741824.0, sim.peak_gpu_bytes / 1073741824.0, 100 * memory,
                est.fits, sim.memory_verdict.fits, est.time.iteration_s, sim.iteration_s, 100 * time);
}

}  // namespace

int main(int argc, char** argv) {
  const int per_case = argc > 1 ? std::max(1, std::atoi(argv[1])) : 25;
  const std::string root = argc > 2 ? argv[2] : STARFISH_SOURCE_DIR;
  const std::vector<Case> cases = {
      {"gpt3-175b", "dgx-a100-80gb", 16, 512, Framework::megatron_lm},
      {"llama3-70b", "dgx-h100", 8, 256, Framework::megatron_core},
      {"mixtral-8x7b", "dgx-h100", 4, 256, Framework::megatron_core},
      {"qwen3-30b-a3b", "dgx-h100", 2, 256, Framework::megatron_core},
      {"llama2-7b", "dgx-a100-40gb", 2, 256, Framework::fsdp},
      {"gpt2-xl", "dgx-a100-80gb", 1, 64, Framework::deepspeed},
      {"deepseek-v3", "dgx-h100", 32, 1024, Framework::megatron_core},
      {"llama3-405b", "dgx-h100", 16, 512, Framework::megatron_core},
      {"gpt-oss-120b", "dgx-h200", 4, 256, Framework::megatron_core},
      {"mixtral-8x22b", "dgx-b200", 8, 512, Framework::megatron_core},
      // Session 23's wider sweep: a PCIe box with PatrickStar's chunks, a consumer GPU, FSDP at
      // 70B, an NVL72 domain, an xGMI mesh, GPT-3 under DeepSpeed.
      {"patrickstar-gpt3-12b", "v100-pcie-8x-240gb", 1, 64, Framework::deepspeed},
      {"gpt2-xl", "consumer-pc", 1, 32, Framework::deepspeed},
      {"llama2-70b", "dgx-a100-40gb", 8, 512, Framework::fsdp},
      {"llama3-8b", "gb200-nvl72", 2, 256, Framework::megatron_core},
      {"mixtral-8x7b", "amd-mi300x", 2, 256, Framework::megatron_core},
      {"gpt3-175b", "dgx-a100-80gb", 16, 512, Framework::deepspeed},
  };
  std::mt19937 rng(7);  // the same sample every run
  Tally all;
  std::printf("plans outside the bands (estimate's GPU memory below the simulated peak, verdicts that differ, "
              "simulated time > 10%% over the estimate's):\n");
  for (const Case& cs : cases) {
    const Model m = load_model(root + "/configs/models/" + cs.model + ".yaml");
    Cluster c = load_cluster(root + "/hwprofiles/" + cs.hardware + ".yaml");
    c.nodes = cs.nodes;
    Training t;
    t.global_batch = cs.global_batch;
    t.dtype = c.node.gpu.peak_flops.count(DType::bf16) ? DType::bf16 : DType::fp16;  // V100: fp16
    search::SearchSpace space;
    space.framework = cs.framework;
    std::vector<search::Candidate> plans = search::enumerate_plans(m, c, t, space);
    std::shuffle(plans.begin(), plans.end(), rng);
    std::printf("== %s on %d x %s, %s (%zu plans in the space)\n", cs.model.c_str(), cs.nodes, cs.hardware.c_str(),
                to_string(cs.framework), plans.size());
    Tally tally;
    for (const search::Candidate& k : plans) {
      if (tally.plans >= per_case) break;
      // Every other plan reduces its gradients overlapped with the backward (a plan file's
      // overlap_grad_reduce; the search fixes it by framework), so both readings are compared.
      Plan plan = k.to_plan();
      plan.overlap_grad_reduce = (tally.plans + tally.refused) % 2 == 1;
      const Job job = make_job(m, c, t, plan);
      if (estimate(job).gpu.total() > 3 * estimate(job).gpu.capacity_bytes) continue;  // far over: not a candidate
      compare(k, job, tally);
    }
    std::printf("   %d plans: estimate below the simulated GPU peak %d (worst %+.1f%%, most over %+.1f%%), verdicts differ %d, "
                "simulated time -%.1f%%..+%.1f%% of the estimate's (%d over +10%%), %d refused by the simulator\n",
                tally.plans, tally.memory_under, 100 * tally.worst_memory_under, 100 * tally.worst_memory_over,
                tally.verdict_differs, -100 * tally.worst_time_fast, 100 * tally.worst_time_slow, tally.time_outside, tally.refused);
    all.plans += tally.plans;
    all.memory_under += tally.memory_under;
    all.verdict_differs += tally.verdict_differs;
    all.time_outside += tally.time_outside;
    all.refused += tally.refused;
  }
  std::printf("\nall: %d plans, estimate below the simulated GPU peak %d, verdicts differ %d, simulated time > 10%% over the "
              "estimate's %d, refused by the simulator %d\n",
              all.plans, all.memory_under, all.verdict_differs, all.time_outside, all.refused);
}

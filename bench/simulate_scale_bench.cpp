// How the simulator's cost grows with the cluster: one iteration of GPT-3 175B (TP8 PP16, 64
// micro-batches per pipeline, full recompute) on 1,024 / 8,192 / 65,536 / 131,072 DGX A100 GPUs
// (the same 41,984 simulated tasks at every size: only the data-parallel width grows), and
// Llama 3 405B on 16,384 H100s with PP16 and 512 micro-batches (433,280 tasks), and the
// 65,536-GPU GPT-3 job on a rail-optimised, oversubscribed three-tier fat tree. Wall time is
// the median of several repetitions, as a ratio to the 1,024-GPU job measured in the same run
// (the machine is shared; ratios are what to trust), with CPU time beside it. Under callgrind,
// pass one job name to count its instructions alone:
//   valgrind --tool=callgrind --collect-atstart=no --toggle-collect='starfish::schedule::simulate*'
//       build/bench/simulate_scale_bench 1 gpt3-65536      (one command line)
//
// usage: simulate_scale_bench [repetitions (default 5)] [job: gpt3-1024 | gpt3-8192 | gpt3-65536 |
//                             gpt3-131072 | gpt3-65536-fat-tree | llama3-16384 (default: all)]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <functional>
#include <string>
#include <vector>

#include "scale_jobs.h"
#include "sim/schedule/simulate.h"

namespace {

using namespace starfish;
using Clock = std::chrono::steady_clock;

struct Timing {
  double wall_s = 0, cpu_s = 0, build_s = 0, run_s = 0;
  schedule::SimReport report;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// simulate() only: the Job (YAML loading, validation) is made once, outside the clock.
Timing time_job(const Job& job, int reps) {
  std::vector<double> wall, cpu, build, run;
  Timing out;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = Clock::now();
    const std::clock_t c0 = std::clock();
    out.report = schedule::simulate(job);
    cpu.push_back(static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC);
    wall.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    build.push_back(out.report.build_wall_s);
    run.push_back(out.report.run_wall_s);
  }
  out.wall_s = median(wall);
  out.cpu_s = median(cpu);
  out.build_s = median(build);
  out.run_s = median(run);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::max(1, std::stoi(argv[1])) : 5;
  const std::string only = argc > 2 ? argv[2] : "";
  const std::vector<std::pair<std::string, std::function<Job()>>> jobs = {
      {"gpt3-1024", [] { return bench::gpt3_175b_job(1024); }},
      {"gpt3-8192", [] { return bench::gpt3_175b_job(8192); }},
      {"gpt3-65536", [] { return bench::gpt3_175b_job(65536); }},
      {"gpt3-131072", [] { return bench::gpt3_175b_job(131072); }},
      {"gpt3-65536-fat-tree", [] { return bench::gpt3_175b_fat_tree_job(65536); }},
      {"llama3-16384", [] { return bench::llama3_405b_job(); }},
  };
  std::printf("%-20s %8s %8s %9s %10s %10s %10s %10s %8s\n", "job", "GPUs", "tasks", "events", "wall ms", "cpu ms",
              "build ms", "run ms", "x 1024");
  double base_s = 0;
  for (const auto& [name, make] : jobs) {
    if (!only.empty() && name != only) continue;
    const Job job = make();
    const Timing t = time_job(job, reps);
    if (name == "gpt3-1024") base_s = t.wall_s;
    std::printf("%-20s %8d %8zu %9llu %10.1f %10.1f %10.1f %10.1f", name.c_str(), t.report.gpus, t.report.tasks,
                static_cast<unsigned long long>(t.report.events), 1e3 * t.wall_s, 1e3 * t.cpu_s, 1e3 * t.build_s,
                1e3 * t.run_s);
    if (base_s > 0) std::printf(" %8.2f", t.wall_s / base_s);
    std::printf("   (iteration %.4f s simulated)\n", t.report.iteration_s);
    std::fflush(stdout);
  }
  return 0;
}

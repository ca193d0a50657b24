// Accuracy of the simulator against Narayanan et al. 2021 (Megatron-LM), Table 1: every row
// predicted with ONE hwprofile (hwprofiles/dgx-a100-80gb.yaml) and one set of plan conventions
// for all rows, no per-row fitting. Prints predicted and published TFLOP/s per GPU and the mean
// and worst absolute errors, for the analytic model and the discrete-event simulator.
//
// Plan conventions (from the paper's setup, section 5): fp16 mixed precision with Adam, full
// activation recomputation, micro-batch 1, the interleaved schedule with 2 model chunks per
// stage where the layers and micro-batches allow it (else 1F1B), TP and PP as in the table, DP
// the rest. Reported TFLOP/s count the recomputation, as the paper's eq. (3) does.
//
// usage: megatron_accuracy [path/to/narayanan2021_megatron_table1_weak_scaling.csv]
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>

#include "megatron_rows.h"
#include "sim/cost/estimate.h"
#include "sim/schedule/simulate.h"

int main(int argc, char** argv) {
  using namespace starfish;
  const std::string csv = argc > 1 ? argv[1] : bench::megatron_csv_path();
  std::vector<bench::MegatronRow> table;
  try {
    table = bench::load_megatron_rows(csv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "megatron_accuracy: %s\n", e.what());
    return 1;
  }
  std::printf("%-8s %4s %3s %3s %4s %5s | %9s %9s %9s | %7s %7s | %9s\n", "params", "TP", "PP", "DP", "GPUs", "batch",
              "published", "analytic", "simulated", "err an.", "err sim", "sim wall");
  double sum_a = 0, sum_s = 0, worst_a = 0, worst_s = 0;
  int rows = 0;
  for (const bench::MegatronRow& row : table) {
    const Job& job = row.job;
    const Plan& p = job.plan;
    const Training& t = job.training;
    const int gpus = job.cluster.total_gpus();
    const double published = row.published_tflops;
    const double analytic = estimate(job).tflops_per_gpu;
    const auto t0 = std::chrono::steady_clock::now();
    const schedule::SimReport r = schedule::simulate(job);
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double ea = (analytic - published) / published, es = (r.tflops_per_gpu - published) / published;
    sum_a += std::fabs(ea);
    sum_s += std::fabs(es);
    worst_a = std::max(worst_a, std::fabs(ea));
    worst_s = std::max(worst_s, std::fabs(es));
    ++rows;
    std::printf("%-8s %4d %3d %3d %4d %5lld | %9.1f %9.1f %9.1f | %+6.1f%% %+6.1f%% | %7.0f ms\n", row.params.c_str(), p.tp, p.pp,
                p.dp, gpus, static_cast<long long>(t.global_batch), published, analytic, r.tflops_per_gpu, 100 * ea,
                100 * es, 1e3 * wall);
  }
  std::printf("\nmean absolute error: analytic %.1f%%, simulated %.1f%%; worst: analytic %.1f%%, simulated %.1f%% (%d rows)\n",
              100 * sum_a / rows, 100 * sum_s / rows, 100 * worst_a, 100 * worst_s, rows);
  return 0;
}

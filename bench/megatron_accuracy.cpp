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
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "sim/cost/estimate.h"
#include "sim/schedule/simulate.h"
#include "sim/spec/spec_io.h"

namespace {

std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream ss(line);
  std::string cell;
  while (std::getline(ss, cell, ',')) out.push_back(cell);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace starfish;
  const std::string csv = argc > 1 ? argv[1] : std::string(STARFISH_SHARED_DATA_DIR) + "/narayanan2021_megatron_table1_weak_scaling.csv";
  std::ifstream in(csv);
  if (!in) {
    std::fprintf(stderr, "megatron_accuracy: cannot open %s\n", csv.c_str());
    return 1;
  }
  const Cluster node = load_cluster(std::string(STARFISH_SOURCE_DIR) + "/hwprofiles/dgx-a100-80gb.yaml");
  std::string line;
  std::getline(in, line);  // header
  std::printf("%-8s %4s %3s %3s %4s %5s | %9s %9s %9s | %7s %7s | %9s\n", "params", "TP", "PP", "DP", "GPUs", "batch",
              "published", "analytic", "simulated", "err an.", "err sim", "sim wall");
  double sum_a = 0, sum_s = 0, worst_a = 0, worst_s = 0;
  int rows = 0;
  while (std::getline(in, line)) {
    const auto c = split(line);
    if (c.size() < 12) continue;
    Model m;
    m.name = "megatron-" + c[0] + "b";
    m.heads = std::stoi(c[1]);
    m.kv_heads = m.heads;
    m.hidden = std::stoi(c[2]);
    m.ffn_hidden = 4 * m.hidden;
    m.layers = std::stoi(c[3]);
    m.seq_len = std::stoi(c[9]);
    m.vocab = std::stoi(c[10]);
    Cluster cl = node;
    const int gpus = std::stoi(c[7]);
    cl.nodes = gpus / cl.node.gpus;
    Training t;
    t.global_batch = std::stoll(c[8]);
    t.dtype = DType::fp16;
    Plan p;
    p.tp = std::stoi(c[4]);
    p.pp = std::stoi(c[5]);
    p.dp = std::stoi(c[6]);
    p.micro_batch = 1;
    p.recompute = Recompute::full;
    const int64_t micro_batches = t.global_batch / p.dp;
    if (p.pp > 1 && m.layers % (2 * p.pp) == 0 && micro_batches % p.pp == 0) {
      p.schedule = Schedule::interleaved;
      p.virtual_stages = 2;
    }
    const Job job = make_job(m, cl, t, p);
    const double published = std::stod(c[11]);
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
    std::printf("%-8s %4d %3d %3d %4d %5lld | %9.1f %9.1f %9.1f | %+6.1f%% %+6.1f%% | %7.0f ms\n", c[0].c_str(), p.tp, p.pp,
                p.dp, gpus, static_cast<long long>(t.global_batch), published, analytic, r.tflops_per_gpu, 100 * ea,
                100 * es, 1e3 * wall);
  }
  std::printf("\nmean absolute error: analytic %.1f%%, simulated %.1f%%; worst: analytic %.1f%%, simulated %.1f%% (%d rows)\n",
              100 * sum_a / rows, 100 * sum_s / rows, 100 * worst_a, 100 * worst_s, rows);
  return 0;
}

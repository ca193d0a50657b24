// Wall time of simulating one iteration of GPT-3 175B on 1024 A100s (128 DGX A100 nodes,
// TP8 PP16 DP8, 1F1B, 64 micro-batches of 1), the DES's reference workload: building the task
// DAG and running it, median of several repetitions, with tasks and events per second.
//
// usage: simulate_speed_bench [repetitions]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "sim/schedule/simulate.h"
#include "sim/spec/spec_io.h"

int main(int argc, char** argv) {
  using namespace starfish;
  const int reps = argc > 1 ? std::max(1, std::stoi(argv[1])) : 5;
  const std::string root = STARFISH_SOURCE_DIR;
  Cluster cluster = load_cluster(root + "/hwprofiles/dgx-a100-80gb.yaml");
  cluster.nodes = 128;
  Training t;
  t.global_batch = 64 * 8;  // 64 micro-batches per pipeline over DP 8
  t.dtype = DType::bf16;
  Plan p;
  p.tp = 8;
  p.pp = 16;
  p.dp = 8;
  p.recompute = Recompute::full;
  const Job job = make_job(load_model(root + "/configs/models/gpt3-175b.yaml"), cluster, t, p);
  std::vector<double> wall, build, run;
  schedule::SimReport r;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    r = schedule::simulate(job);
    wall.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    build.push_back(r.build_wall_s);
    run.push_back(r.run_wall_s);
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  const double w = median(wall), b = median(build), x = median(run);
  std::printf("GPT-3 175B, 1024 GPUs, TP8 PP16 DP8 1F1B m=64: iteration %.3f s simulated\n", r.iteration_s);
  std::printf("  tasks %zu, events %llu\n", r.tasks, static_cast<unsigned long long>(r.events));
  std::printf("  wall (median of %d): %.1f ms total = %.1f ms build + %.1f ms run (+ report)\n", reps, 1e3 * w, 1e3 * b, 1e3 * x);
  std::printf("  %.2f M tasks/s end to end, %.2f M events/s in the engine\n", r.tasks / w / 1e6, r.events / x / 1e6);
  std::printf("  target: under 100 ms -> %s\n", w < 0.1 ? "met" : "NOT met");
  return 0;
}

// Events per second of the discrete-event engine on large DAGs over 1024 GPUs (128 DGX A100
// nodes):
//   pipelines: 64 pipelines of 16 stages (one GPU each), m microbatches forward then backward,
//              each stage a compute task and a transfer to the next stage (about 1M tasks);
//   gpt3:      one iteration of GPT-3 175B shaped like TP8 PP16 DP8 with m = 64 (GPipe order):
//              per stage, microbatch and direction 8 compute tasks, one TP all-reduce and 8
//              point-to-point sends; then a DP all-reduce per stage and TP rank, and the
//              optimizer step (about 280k tasks).
// Usage: des_events_bench [hwprofile.yaml] [microbatches for 'pipelines' (default 256)] [all|pipelines|gpt3]
//                         [repetitions (default 1; timings on a shared machine vary, take the best)]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

#include "sim/des/engine.h"
#include "sim/spec/spec_io.h"

using namespace starfish;
using namespace starfish::des;

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// CPU time of this process: steadier than wall time on a machine shared with other work.
double cpu_s() { return static_cast<double>(std::clock()) / CLOCKS_PER_SEC; }

void report(const char* name, const Engine& e, const Results& r, double build_s, double run_s, double run_cpu_s) {
  std::printf("%-10s tasks %8zu  events %9llu  flows %8llu  rate updates %9llu  build %6.1f ms  run %6.1f ms "
              "(cpu %6.1f ms)  %5.2f M events/s  %5.2f M tasks/s (cpu)  makespan %.4f s\n",
              name, e.task_count(), static_cast<unsigned long long>(r.events),
              static_cast<unsigned long long>(r.flows), static_cast<unsigned long long>(r.rate_updates),
              build_s * 1e3, run_s * 1e3, run_cpu_s * 1e3, r.events / run_cpu_s / 1e6,
              e.task_count() / run_cpu_s / 1e6, r.makespan_s);
}

// Stage s of pipeline p: pipelines are (dp, tp) pairs; the GPU index puts a stage's 64 GPUs on
// 8 consecutive nodes (tp fastest), like Megatron's rank order.
int gpu_of(int stage, int dp, int tp) { return stage * 64 + dp * 8 + tp; }

void bench_pipelines(const Topology& topo, int m) {
  const auto t0 = Clock::now();
  Engine e(topo);
  const CategoryId fwd = e.category("fwd"), bwd = e.category("bwd"), pp = e.category("pp");
  const int stages = 16;
  for (int p = 0; p < 64; ++p) {
    const int dp = p / 8, tp = p % 8;
    for (int mb = 0; mb < m; ++mb) {
      TaskId prev = kNone;
      for (int s = 0; s < stages; ++s) {
        const TaskId c = e.compute(gpu_of(s, dp, tp), 2e-3, {fwd, "fwd"});
        if (prev != kNone) e.depends(c, prev);
        prev = c;
        if (s + 1 < stages) {
          const TaskId x = e.transfer(topo.gpu(gpu_of(s, dp, tp)), topo.gpu(gpu_of(s + 1, dp, tp)), 25e6, {pp, "send"});
          e.depends(x, c);
          prev = x;
        }
      }
      for (int s = stages - 1; s >= 0; --s) {
        const TaskId c = e.compute(gpu_of(s, dp, tp), 4e-3, {bwd, "bwd"});
        e.depends(c, prev);
        prev = c;
        if (s > 0) {
          const TaskId x = e.transfer(topo.gpu(gpu_of(s, dp, tp)), topo.gpu(gpu_of(s - 1, dp, tp)), 25e6, {pp, "send"});
          e.depends(x, c);
          prev = x;
        }
      }
    }
  }
  const double build_s = seconds_since(t0);
  const auto t1 = Clock::now();
  const double c1 = cpu_s();
  const Results& r = e.run();
  report("pipelines", e, r, build_s, seconds_since(t1), cpu_s() - c1);
}

void bench_gpt3(const Topology& topo) {
  const auto t0 = Clock::now();
  Engine e(topo);
  const CategoryId fwd = e.category("fwd"), bwd = e.category("bwd"), tpc = e.category("tp"),
                   ppc = e.category("pp"), dpc = e.category("dp"), opt = e.category("optimizer");
  const int S = 16, D = 8, T = 8, M = 64;
  // GPT-3 175B per GPU: ~1.37e9 parameters per (stage, tp) shard; 2048 tokens per microbatch.
  const double fwd_s = 2 * 1.37e9 * 2048 / (312e12 * 0.5), bwd_s = 2 * fwd_s;
  const double tp_bytes = 12 * 2048 * 12288 * 2.0;  // 2 all-reduces per layer, 6 layers
  const double pp_bytes = 2048 * 12288 * 2.0 / T;   // activations, split over the TP ranks
  const double grad_bytes = 1.37e9 * 2;
  std::vector<GroupId> tp_group(S * D);
  for (int s = 0; s < S; ++s)
    for (int d = 0; d < D; ++d) {
      std::vector<int> g;
      for (int t = 0; t < T; ++t) g.push_back(gpu_of(s, d, t));
      tp_group[s * D + d] = e.group(g);
    }
  // arrive[(s*D+d)*T+t]: the task the next stage's rank t waits for (the send), per microbatch.
  std::vector<TaskId> arrive(S * D * T, kNone), stage_done(S * D * T, kNone);
  std::vector<std::vector<TaskId>> sends_in(M, std::vector<TaskId>(D * T, kNone));
  std::vector<std::vector<TaskId>> last_bwd(S * D, std::vector<TaskId>());
  for (int dir = 0; dir < 2; ++dir) {
    for (int mb = 0; mb < M; ++mb) {
      std::vector<TaskId> incoming(D * T, kNone);
      for (int i = 0; i < S; ++i) {
        const int s = dir == 0 ? i : S - 1 - i;
        for (int d = 0; d < D; ++d) {
          TaskId kernels[8];
          for (int t = 0; t < T; ++t) {
            kernels[t] = e.compute(gpu_of(s, d, t), dir == 0 ? fwd_s : bwd_s, {dir == 0 ? fwd : bwd, "stage"});
            if (incoming[d * T + t] != kNone) e.depends(kernels[t], incoming[d * T + t]);
            if (dir == 1 && i == 0) e.depends(kernels[t], stage_done[(s * D + d) * T + t]);  // last stage: its fwd
          }
          const TaskId ar = e.collective(CollectiveKind::all_reduce, tp_group[s * D + d], tp_bytes, {tpc, "tp"});
          e.depends(ar, std::span<const TaskId>(kernels, T));
          for (int t = 0; t < T; ++t) {
            if (dir == 0) stage_done[(s * D + d) * T + t] = ar;
            const int next = dir == 0 ? s + 1 : s - 1;
            if (next < 0 || next >= S) {
              incoming[d * T + t] = kNone;
              continue;
            }
            const TaskId x = e.transfer(topo.gpu(gpu_of(s, d, t)), topo.gpu(gpu_of(next, d, t)), pp_bytes, {ppc, "pp"});
            e.depends(x, ar);
            incoming[d * T + t] = x;
          }
          if (dir == 1) last_bwd[s * D + d].push_back(ar);
        }
      }
    }
  }
  for (int s = 0; s < S; ++s)
    for (int t = 0; t < T; ++t) {
      std::vector<int> g;
      for (int d = 0; d < D; ++d) g.push_back(gpu_of(s, d, t));
      const TaskId ar = e.collective(CollectiveKind::all_reduce, e.group(g), grad_bytes, {dpc, "dp grads"});
      for (int d = 0; d < D; ++d) e.depends(ar, last_bwd[s * D + d].back());
      for (int d = 0; d < D; ++d) {
        const TaskId o = e.compute(gpu_of(s, d, t), 5e-3, {opt, "adam"});
        e.depends(o, ar);
      }
    }
  const double build_s = seconds_since(t0);
  const auto t1 = Clock::now();
  const double c1 = cpu_s();
  const Results& r = e.run();
  report("gpt3", e, r, build_s, seconds_since(t1), cpu_s() - c1);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::string path = argc > 1 ? argv[1] : std::string(STARFISH_SOURCE_DIR) + "/hwprofiles/dgx-a100-80gb.yaml";
    const int m = argc > 2 ? std::atoi(argv[2]) : 256;
    const std::string which = argc > 3 ? argv[3] : "all";
    const int reps = argc > 4 ? std::max(1, std::atoi(argv[4])) : 1;
    Cluster c = load_cluster(path);
    c.nodes = 1024 / c.node.gpus;
    const auto t0 = Clock::now();
    const Topology topo(c);
    std::printf("topology: %d GPUs, %zu vertices, %zu links, built in %.1f ms\n", topo.total_gpus(),
                topo.vertex_count(), topo.link_count(), seconds_since(t0) * 1e3);
    for (int i = 0; i < reps; ++i) {
      if (which == "all" || which == "pipelines") bench_pipelines(topo, m);
      if (which == "all" || which == "gpt3") bench_gpt3(topo);
    }
    return 0;
  } catch (const std::exception& ex) {
    std::fprintf(stderr, "des_events_bench: %s\n", ex.what());
    return 1;
  }
}

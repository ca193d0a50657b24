// What the executor's collectives cost between local ranks over Gloo (exec/dist.h), the rate the
// CPU pool profiles give their GPU-to-GPU link (exec/configs/cpu-pool-2x*.yaml). Two ranks of
// this program (started like `starfish-run --nproc 2`) run Comm::all_gather, reduce_scatter_sum
// and all_reduce_sum on CPU tensors of MB megabytes per member, each from the caching allocator
// (exec/host_memory.h) as in a run; rank 0 prints, per collective, the median wall time over
// the repetitions after a warm-up one and the rate it implies on the simulator's terms: the
// bytes a member sends in a ring (sim/cost/collectives.cpp, collective_bytes_sent_per_rank)
// over the time.
//
// With a compute gap, each rank multiplies matrices for that long before every collective, as a
// run computes between its collectives: the caches then hold the GEMM's data, not the last
// collective's, and loopback TCP restarts from idle. That is the rate a run gets (the CPU pool
// profiles use it); without the gap the collectives run back to back, the best case.
//
// usage: gloo_collectives [MB per member=160] [repetitions=7] [ranks=2] [compute gap ms=0]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "exec/dist.h"
#include "exec/host_memory.h"
#include "exec/launcher.h"
#include "exec/torch_pch.h"
#include "sim/cost/collectives.h"

namespace {

using starfish::CollectiveKind;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Multiplies 512 x 512 matrices for `seconds` of wall time (the compute gap).
void compute_for(double seconds) {
  at::Tensor a = at::rand({512, 512});
  const auto start = std::chrono::steady_clock::now();
  while (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < seconds) a = at::mm(a, a).div_(512);
}

// Wall seconds of `collective`, median of `repetitions` after one warm-up (its first touch of
// the buffers), every rank starting together (a barrier before each, then the compute gap).
double time_s(starfish::exec::Comm& comm, int repetitions, double gap_s, const std::function<void()>& collective) {
  std::vector<double> times;
  for (int i = 0; i <= repetitions; ++i) {
    comm.barrier();
    if (gap_s > 0) compute_for(gap_s);
    const auto start = std::chrono::steady_clock::now();
    collective();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (i > 0) times.push_back(s);
  }
  return median(times);
}

int run_rank(int64_t bytes_per_member, int repetitions, double gap_s) {
  starfish::exec::keep_freed_host_memory();
  at::set_num_threads(1);  // one core per rank, as starfish-run gives two local ranks
  const starfish::exec::RankEnv env = starfish::exec::RankEnv::from_environment();
  starfish::exec::Comm comm(env);
  const int n = comm.world_size();
  const int64_t floats = bytes_per_member / 4;
  at::Tensor mine = at::full({floats}, static_cast<float>(env.rank + 1));
  std::vector<at::Tensor> members, inputs;
  for (int j = 0; j < n; ++j) members.push_back(at::empty({floats})), inputs.push_back(at::full({floats}, 1.0f));
  at::Tensor reduced = at::empty({floats});
  struct Row {
    const char* name;
    CollectiveKind kind;
    double s;
  };
  const double bytes = static_cast<double>(bytes_per_member);
  const Row rows[] = {
      {"all_gather", CollectiveKind::all_gather, time_s(comm, repetitions, gap_s, [&] { comm.all_gather(members, mine); })},
      {"reduce_scatter", CollectiveKind::reduce_scatter, time_s(comm, repetitions, gap_s, [&] { comm.reduce_scatter_sum(inputs, reduced); })},
      {"all_reduce", CollectiveKind::all_reduce, time_s(comm, repetitions, gap_s, [&] { comm.all_reduce_sum(mine); })},
  };
  if (env.rank != 0) return 0;
  std::printf("collective,ranks,MB_per_member,median_s,sent_per_rank_MB,link_GB_per_s\n");
  for (const Row& r : rows) {
    // The simulator's all-gather and reduce-scatter take the group's total (n members' pieces);
    // an all-reduce takes its one buffer.
    const double collective_bytes = r.kind == CollectiveKind::all_reduce ? bytes : bytes * n;
    const double sent = starfish::collective_bytes_sent_per_rank(r.kind, n, collective_bytes);
    std::printf("%s,%d,%.1f,%.4f,%.1f,%.3f\n", r.name, n, bytes / 1e6, r.s, sent / 1e6, sent / r.s / 1e9);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const double mb = argc > 1 ? std::atof(argv[1]) : 160;
  const int repetitions = argc > 2 ? std::atoi(argv[2]) : 7;
  const int ranks = argc > 3 ? std::atoi(argv[3]) : 2;
  const double gap_ms = argc > 4 ? std::atof(argv[4]) : 0;
  if (!(mb > 0 && mb <= 4096) || repetitions < 1 || repetitions > 1000 || ranks < 2 || ranks > 16 || !(gap_ms >= 0 && gap_ms <= 60000)) {
    std::fprintf(stderr, "usage: gloo_collectives [MB per member, 0-4096] [repetitions, 1-1000] [ranks, 2-16] [compute gap ms, 0-60000]\n");
    return 2;
  }
  if (std::getenv("RANK") == nullptr) {
    std::vector<std::string> args;
    for (int i = 1; i < argc; ++i) args.emplace_back(argv[i]);
    return starfish::exec::launch_local_ranks("/proc/self/exe", args, ranks);
  }
  return run_rank(static_cast<int64_t>(mb * 1e6), repetitions, gap_ms / 1e3);
}

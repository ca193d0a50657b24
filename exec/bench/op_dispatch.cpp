// What one eager op costs the CPU beyond its arithmetic: LibTorch's dispatch (argument checks,
// the dispatcher, output allocation, autograd bookkeeping). A GPT layer of the executor's
// (exec/gpt_model.cpp) runs forward and backward at a size where the arithmetic is negligible
// (hidden 32, 8 tokens); the ATen ops and autograd nodes it runs are counted with a global
// RecordFunction callback (the profiler's hook). Time / ops is the per-op cost the simulator's
// hwprofile calls `op_dispatch` and `backward_op_dispatch` (hwprofiles/cpu-host.yaml); the counts
// are what the simulator multiplies them by (sim/cost/dispatch.cpp). Medians of many repetitions
// of this thread's CPU time, one intra-op thread.
//
// usage: op_dispatch [repetitions=400]
#include <time.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "exec/bench/bench_model.h"
#include "exec/blas_kernels.h"
#include "exec/host_memory.h"
#include "exec/gpt_model.h"
#include "exec/torch_pch.h"

namespace {

std::atomic<int64_t> ops{0};

// This thread's CPU time: with one intra-op thread every op runs on it, and other work on a
// shared machine does not count.
double thread_cpu_s() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Counted {
  int64_t ops = 0;
  double seconds = 0;
};

template <typename F>
Counted measure(F&& f, int reps) {
  f();  // warm-up (allocator, first-call initialisation)
  const int64_t before = ops.load();
  f();
  Counted c;
  c.ops = ops.load() - before;
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    const double t0 = thread_cpu_s();
    f();
    t.push_back(thread_cpu_s() - t0);
  }
  c.seconds = median(std::move(t));
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  starfish::exec::reexec_with_best_blas_kernels(argv);  // the kernels starfish-run gets
  starfish::exec::keep_freed_host_memory();             // and its allocator policy
  using namespace starfish;
  const int reps = argc > 1 ? std::atoi(argv[1]) : 400;
  at::set_num_threads(1);
  at::addGlobalCallback(at::RecordFunctionCallback([](const at::RecordFunction&) -> std::unique_ptr<at::ObserverContext> {
                          ops.fetch_add(1, std::memory_order_relaxed);
                          return nullptr;
                        }).scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION}));
  Model m = exec::bench::bench_gpt("dispatch", 1, 32, 8);
  const exec::Gpt gpt(m);
  std::vector<at::Tensor> layer;
  for (const std::string& n : gpt.segment_params(1)) layer.push_back(gpt.initial_value(gpt.param(n), 1).requires_grad_(true));
  std::vector<at::Tensor> head;
  for (const std::string& n : gpt.segment_params(2)) head.push_back(gpt.initial_value(gpt.param(n), 1).requires_grad_(true));
  const at::Tensor x = torch::randn({1, 8, 32}).requires_grad_(true);
  const at::Tensor targets = torch::randint(0, 256, {1, 8}, torch::kLong);
  const at::Tensor grad = torch::ones({1, 8, 32});

  const Counted fwd = measure([&] { at::NoGradGuard g; (void)gpt.forward_segment(1, x, layer, targets); }, reps);
  const Counted graph = measure([&] { (void)gpt.forward_segment(1, x, layer, targets); }, reps);
  const Counted both = measure([&] { gpt.forward_segment(1, x, layer, targets).backward(grad); }, reps);
  const Counted head_fwd = measure([&] { at::NoGradGuard g; (void)gpt.forward_segment(2, x, head, targets); }, reps);
  const Counted head_both = measure([&] { gpt.forward_segment(2, x, head, targets).backward(); }, reps);

  const double per_op = fwd.seconds / static_cast<double>(fwd.ops);
  std::printf("one GPT layer (hidden 32, 8 tokens, 1 thread), medians of %d, thread CPU time\n", reps);
  std::printf("  %-34s %6lld ops %9.1f us  %6.2f us/op\n", "forward, no graph (recompute's)", static_cast<long long>(fwd.ops),
              fwd.seconds * 1e6, per_op * 1e6);
  std::printf("  %-34s %6lld ops %9.1f us  %6.2f us/op\n", "forward, recording the graph", static_cast<long long>(graph.ops),
              graph.seconds * 1e6, graph.seconds / static_cast<double>(graph.ops) * 1e6);
  const int64_t bwd_ops = both.ops - graph.ops;
  const double bwd_s = both.seconds - graph.seconds;
  std::printf("  %-34s %6lld ops %9.1f us  %6.2f us/op\n", "backward (autograd nodes + ops)", static_cast<long long>(bwd_ops),
              bwd_s * 1e6, bwd_s / static_cast<double>(bwd_ops) * 1e6);
  std::printf("output head (norm, logits, cross-entropy)\n");
  std::printf("  %-34s %6lld ops %9.1f us\n", "forward, no graph", static_cast<long long>(head_fwd.ops), head_fwd.seconds * 1e6);
  std::printf("  %-34s %6lld ops %9.1f us\n", "forward + backward", static_cast<long long>(head_both.ops), head_both.seconds * 1e6);
  return 0;
}

// Where one GPT layer's and the output head's CPU time goes, op by op, at a plan's own shape:
// the executor's layer (exec/gpt_model.cpp) runs as the chunk runtime runs it with recompute
// full (forward without a graph; then the recompute, recording the graph; then backward), and a
// global RecordFunction callback (the profiler's hook) charges each ATen op and autograd node
// its EXCLUSIVE thread CPU time (time in nested ops goes to them). The table splits GEMMs
// (what the hwprofile's matmul_efficiency times) from everything else (element-wise kernels,
// copies, allocation and dispatch), so a prediction can be checked mechanism by mechanism.
// Two clock reads per op add ~0.1-0.2 us each: read op counts x that as the profiler's share.
//
// usage: op_profile HIDDEN HEADS TOKENS_PER_SEQUENCE SEQUENCES VOCAB [repetitions=20]
//   tiny-gpt-chunked-plan.yaml: op_profile 128 4 64 4 256;  gpt2-small-2l: op_profile 768 12 128 1 50257
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "exec/blas_kernels.h"
#include "exec/host_memory.h"
#include "exec/gpt_model.h"
#include "exec/torch_pch.h"

namespace {

double thread_cpu_s() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

struct OpTotal {
  int64_t calls = 0;
  double exclusive_s = 0;
};

struct Frame {
  std::string name;
  double start_s = 0, children_s = 0;
};

// One training thread: a plain stack is enough (the bench sets one intra-op thread).
std::vector<Frame> stack;
std::map<std::string, OpTotal>* totals = nullptr;

std::unique_ptr<at::ObserverContext> on_enter(const at::RecordFunction& fn) {
  if (totals) stack.push_back(Frame{fn.name(), thread_cpu_s(), 0});
  return nullptr;
}

void on_exit(const at::RecordFunction&, at::ObserverContext*) {
  if (!totals || stack.empty()) return;
  const Frame f = stack.back();
  stack.pop_back();
  const double total = thread_cpu_s() - f.start_s;
  OpTotal& t = (*totals)[f.name];
  ++t.calls;
  t.exclusive_s += total - f.children_s;
  if (!stack.empty()) stack.back().children_s += total;
}

bool is_gemm(const std::string& name) {
  return name == "aten::addmm" || name == "aten::mm" || name == "aten::bmm" || name == "aten::baddbmm";
}

// Runs `f` `reps` times after a warm-up and prints its ops by exclusive CPU time per run.
template <typename F>
void profile(const char* title, F&& f, int reps) {
  f();
  std::map<std::string, OpTotal> t;
  totals = &t;
  const double t0 = thread_cpu_s();
  for (int i = 0; i < reps; ++i) f();
  const double all_s = (thread_cpu_s() - t0) / reps;
  totals = nullptr;
  std::vector<std::pair<std::string, OpTotal>> rows(t.begin(), t.end());
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.exclusive_s > b.second.exclusive_s; });
  double gemm_s = 0, other_s = 0;
  int64_t ops = 0;
  for (const auto& [name, o] : rows) {
    (is_gemm(name) ? gemm_s : other_s) += o.exclusive_s / reps;
    ops += o.calls;
  }
  std::printf("%s: %.3f ms per run (thread CPU), %lld ops: GEMMs %.3f ms, the rest %.3f ms, outside any op %.3f ms\n", title,
              all_s * 1e3, static_cast<long long>(ops / reps), gemm_s * 1e3, other_s * 1e3, (all_s - gemm_s - other_s) * 1e3);
  for (size_t i = 0; i < std::min<size_t>(rows.size(), 14); ++i)
    std::printf("  %-44s %6lld calls %9.3f ms\n", rows[i].first.c_str(), static_cast<long long>(rows[i].second.calls / reps),
                rows[i].second.exclusive_s / reps * 1e3);
}

}  // namespace

int main(int argc, char** argv) {
  starfish::exec::reexec_with_best_blas_kernels(argv);  // the kernels starfish-run gets
  starfish::exec::keep_freed_host_memory();             // and its allocator policy
  if (argc < 6) {
    std::fprintf(stderr, "usage: op_profile HIDDEN HEADS TOKENS_PER_SEQUENCE SEQUENCES VOCAB [repetitions=20]\n");
    return 2;
  }
  const int hidden = std::atoi(argv[1]), heads = std::atoi(argv[2]), seq = std::atoi(argv[3]), batch = std::atoi(argv[4]);
  const int vocab = std::atoi(argv[5]), reps = argc > 6 ? std::atoi(argv[6]) : 20;
  if (hidden <= 0 || heads <= 0 || hidden % heads || seq <= 0 || batch <= 0 || vocab <= 0 || reps <= 0) {
    std::fprintf(stderr, "op_profile: positive sizes expected, HIDDEN a multiple of HEADS\n");
    return 2;
  }
  using namespace starfish;
  at::set_num_threads(1);
  at::addGlobalCallback(at::RecordFunctionCallback(on_enter, on_exit).scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION}));
  Model m;
  m.name = "profile";
  m.layers = 1;
  m.hidden = hidden;
  m.heads = m.kv_heads = heads;
  m.ffn_hidden = 4 * hidden;
  m.seq_len = seq;
  m.vocab = vocab;
  m.dropout = false;          // the executor's GPT has none
  m.tied_embeddings = false;  // the head's own weight: the tied one is the same GEMM
  const exec::Gpt gpt(m);
  std::printf("OpenBLAS kernels: %s; one layer and the head, hidden %d, %d heads, %d x %d tokens, vocab %d, %d runs\n",
              exec::blas_core_name().c_str(), hidden, heads, batch, seq, vocab, reps);
  for (int segment : {1, 2}) {
    std::vector<at::Tensor> params;
    for (const std::string& n : gpt.segment_params(segment))
      params.push_back(gpt.initial_value(gpt.param(n), 1).requires_grad_(true));
    const at::Tensor x = torch::randn({batch, seq, hidden}).requires_grad_(true);
    const at::Tensor targets = torch::randint(0, vocab, {batch, seq}, torch::kLong);
    const bool head = segment == 2;
    const at::Tensor grad = torch::ones({batch, seq, hidden});
    const std::string what = head ? "head" : "layer";
    profile((what + " forward, no graph (the chunk runtime's first pass)").c_str(),
            [&] { at::NoGradGuard g; (void)gpt.forward_segment(segment, x, params, targets); }, reps);
    profile((what + " forward recording the graph + backward (recompute and backward)").c_str(), [&] {
      const at::Tensor y = gpt.forward_segment(segment, x, params, targets);
      if (head) y.backward();
      else y.backward(grad);
    }, reps);
  }
  return 0;
}

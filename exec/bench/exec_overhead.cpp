// Overhead of the chunk runtime against plain LibTorch when everything fits on the "GPU" tier,
// like against like: the same GPT and batch trained by
//   ReferenceTrainer  leaf parameters, torch::optim::AdamW; recompute none keeps one autograd
//                     graph, recompute full checkpoints every segment (torch.utils.checkpoint's way);
//   FlatStore         the executor's segment nodes and flat optimizer, no runtime;
//   ChunkStore        the chunk runtime with a budget that holds every chunk;
// each without recompute and with full recompute. The trainers step in turn, one iteration
// each per round (so load on a shared machine hits all alike), after two warm-up iterations
// each (the chunk runtime's tracing and placement iterations); the table shows per-iteration
// medians of process CPU time and of wall time, each as a ratio to plain LibTorch with the same
// recompute. On a shared machine the CPU-time ratio is the one to read (one thread: no idle
// spinning counted either). With CUDA every path computes on the GPU tier's device and the
// wall-time ratio is the one (each step reads its loss and gradient norm on the host, so GPU
// work cannot pile up past one optimizer step).
// `only` runs one path (plain|flat|chunk, then -none|-full), for a profiler to see that path
// alone. Under `valgrind --tool=callgrind --collect-atstart=no` only the measured rounds are
// counted (no setup, no warm-up): instruction counts, which no other load on the machine moves.
// usage: exec_overhead [layers=4] [hidden=128] [rounds=9] [threads=hardware] [only=chunk-none]
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <torch/torch.h>

#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>  // no-ops unless run under callgrind
#define STARFISH_TOGGLE_COLLECT() CALLGRIND_TOGGLE_COLLECT
#else
#define STARFISH_TOGGLE_COLLECT() ((void)0)
#endif

#include "exec/bench/bench_model.h"
#include "exec/blas_kernels.h"
#include "exec/host_memory.h"
#include "exec/chunk_store.h"
#include "exec/dist.h"
#include "exec/flat_store.h"
#include "exec/trainer.h"

using namespace starfish;
using namespace starfish::exec;

namespace {

// CPU seconds of the whole process (every intra-op thread): unlike wall time, hardly moved by
// other processes competing for the cores of a shared machine.
double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

double median(std::vector<double> t) {
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

struct Entry {
  std::string name;
  Recompute recompute;
  std::function<double()> step;  // one iteration, its wall seconds
  std::vector<double> wall, cpu;
  void run() {
    const double c0 = cpu_seconds();
    wall.push_back(step());
    cpu.push_back(cpu_seconds() - c0);
  }
};

// The paths measured, with what they own: the backends before the stores (they outlive them).
struct Paths {
  std::vector<std::unique_ptr<TorchBackend>> backends;
  std::vector<std::unique_ptr<ReferenceTrainer>> refs;
  std::vector<std::unique_ptr<StoreTrainer>> stores;
  std::vector<const ChunkStore*> chunk_stores;
  std::vector<Entry> entries;
};

// Each path `only` admits (all when empty), without recompute and with full recompute.
void add_paths(Paths& p, const Gpt& gpt, const ByteCorpus& data, const Training& t, Comm& solo, const std::string& only) {
  auto wanted = [&](const char* path, Recompute r) { return only.empty() || only == std::string(path) + "-" + to_string(r); };
  for (int i = 0; i < 2; ++i)
    p.backends.push_back(std::make_unique<TorchBackend>(TierCapacity{int64_t{1} << 32, 0, 0},
                                                        std::filesystem::temp_directory_path().string(), solo));
  // Every path computes where the chunk runtime's GPU tier is: cuda:N with CUDA, else the CPU.
  const at::Device device = p.backends.front()->compute_device();
  for (Recompute r : {Recompute::none, Recompute::full}) {
    Plan plan;
    plan.micro_batch = 4;
    plan.chunk_elements = 1 << 16;
    plan.recompute = r;
    if (wanted("plain", r)) {
      ReferenceTrainer& ref = *p.refs.emplace_back(std::make_unique<ReferenceTrainer>(gpt, data, t, plan, device));
      p.entries.push_back({"plain LibTorch", r, [&ref] { return ref.step().seconds; }, {}, {}});
    }
    if (wanted("flat", r)) {
      StoreTrainer& flat = *p.stores.emplace_back(
          std::make_unique<StoreTrainer>(gpt, data, t, plan, solo, std::make_unique<FlatStore>(gpt, at::kFloat, t.seed, device)));
      p.entries.push_back({"flat store (no runtime)", r, [&flat] { return flat.step().seconds; }, {}, {}});
    }
    if (!wanted("chunk", r)) continue;
    ChunkStoreOptions co;
    co.chunk_elements = plan.chunk_elements;
    co.runtime.budget = MemoryBudget{int64_t{1} << 32, int64_t{1} << 32, 0};
    TorchBackend& backend = *p.backends[r == Recompute::none ? 0 : 1];
    auto store = std::make_unique<ChunkStore>(gpt, t, co, backend, t.seed);
    p.chunk_stores.push_back(store.get());
    StoreTrainer& chunked = *p.stores.emplace_back(std::make_unique<StoreTrainer>(gpt, data, t, plan, solo, std::move(store)));
    p.entries.push_back({"chunk runtime, everything fits", r, [&chunked] { return chunked.step().seconds; }, {}, {}});
  }
}

// Two warm-up iterations each, then `rounds` measured ones, interleaved.
void measure(std::vector<Entry>& entries, int rounds) {
  for (int warm = 0; warm < 2; ++warm)
    for (Entry& e : entries) e.step();  // not counted
  STARFISH_TOGGLE_COLLECT();
  for (int round = 0; round < rounds; ++round)
    for (size_t k = 0; k < entries.size(); ++k) {
      entries[(k + static_cast<size_t>(round)) % entries.size()].run();  // rotate who goes first
    }
  STARFISH_TOGGLE_COLLECT();
}

// Per recompute, each path's medians and their ratios to plain LibTorch's.
void print_table(const std::vector<Entry>& entries) {
  std::printf("%-32s %-9s %12s %12s %12s %12s\n", "path", "recompute", "cpu s/iter", "vs plain", "wall s/iter", "vs plain");
  for (Recompute r : {Recompute::none, Recompute::full}) {
    const Entry* plain = nullptr;
    for (const Entry& e : entries)
      if (e.recompute == r && e.name == "plain LibTorch") plain = &e;
    for (const Entry& e : entries) {
      if (e.recompute != r) continue;
      std::printf("%-32s %-9s %12.4f", e.name.c_str(), to_string(r), median(e.cpu));
      if (plain) std::printf(" %11.3fx", median(e.cpu) / median(plain->cpu));
      else std::printf(" %12s", "");
      std::printf(" %12.4f", median(e.wall));
      if (plain) std::printf(" %11.3fx", median(e.wall) / median(plain->wall));
      std::printf("\n");
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  starfish::exec::reexec_with_best_blas_kernels(argv);  // the kernels starfish-run gets
  starfish::exec::keep_freed_host_memory();             // and its allocator policy
  const int layers = argc > 1 ? std::atoi(argv[1]) : 4, hidden = argc > 2 ? std::atoi(argv[2]) : 128;
  const int rounds = argc > 3 ? std::atoi(argv[3]) : 9;
  const int threads = argc > 4 ? std::atoi(argv[4]) : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  at::set_num_threads(threads);
  const Model m = bench::bench_gpt("bench-gpt", layers, hidden, 64);
  const Gpt gpt(m);
  const ByteCorpus data = ByteCorpus::generated(1 << 20);
  Training t;
  t.global_batch = 4;
  t.dtype = DType::fp32;
  t.optimizer = Optimizer::adamw;
  t.learning_rate = 1e-3;
  Comm solo(RankEnv{});
  Paths paths;
  add_paths(paths, gpt, data, t, solo, argc > 5 ? argv[5] : "");
  measure(paths.entries, rounds);
  std::printf("%s; %d threads; model %d layers x %d hidden, %lld parameters; batch 4 x 64 tokens; "
              "medians of %d interleaved iterations\n",
              paths.backends.front()->gpu_tier_description().c_str(), at::get_num_threads(), layers, hidden,
              static_cast<long long>(gpt.parameter_count()), rounds);
  print_table(paths.entries);
  if (!paths.chunk_stores.empty())
    std::printf("chunk runtime: %d param chunks, %zu moves in %d iterations each (after the warm-up: placement of states on the GPU)\n",
                paths.chunk_stores.front()->layout().param_chunks(), paths.chunk_stores.front()->runtime().moves().size(),
                rounds + 2);
  return 0;
}

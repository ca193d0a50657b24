// The largest GPT (layers of a fixed width) that trains under a given "GPU" budget, with and
// without eviction. Without eviction every model state must stay on the GPU tier (fp32 Adam:
// 16 bytes/param in chunks); with the chunk runtime only the busiest moment must fit, and the
// rest lives in host memory. Each candidate is really trained for two iterations.
// usage: exec_max_model [gpu_budget_MiB=4] [hidden=64] [max_layers=64]
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include <torch/torch.h>

#include "exec/bench/bench_model.h"
#include "exec/blas_kernels.h"
#include "exec/host_memory.h"
#include "exec/chunk_store.h"
#include "exec/dist.h"
#include "exec/trainer.h"

using namespace starfish;
using namespace starfish::exec;

namespace {

Model model_of(int layers, int hidden) { return bench::bench_gpt("maxsize", layers, hidden, 32); }

// Trains two iterations; false when the budget cannot hold it (the runtime or pool refuses).
bool trains(const Model& m, int64_t budget, bool evict, int64_t& peak) {
  const Gpt gpt(m);
  const ByteCorpus data = ByteCorpus::generated(1 << 16);
  Training t;
  t.global_batch = 1;
  t.dtype = DType::fp32;
  t.optimizer = Optimizer::adamw;
  Plan plan;
  plan.micro_batch = 1;
  plan.chunk_elements = 1 << 14;
  Comm solo(RankEnv{});
  ChunkStoreOptions co;
  co.chunk_elements = plan.chunk_elements;
  // Without eviction the host tier has no room: every chunk and state must live on the GPU tier.
  co.runtime.budget = MemoryBudget{budget, evict ? int64_t{1} << 34 : 0, 0};
  try {
    TorchBackend backend(TierCapacity{budget, evict ? 0 : 1, 0}, std::filesystem::temp_directory_path().string(), solo);
    if (!evict) {
      // All states resident: they must fit the GPU tier as they are.
      const ChunkLayout l = ChunkLayout::build(parameter_tensors(gpt.model()), LayoutOptions::of(t, plan.chunk_elements));
      peak = l.total_bytes();
      return l.total_bytes() <= budget;
    }
    StoreTrainer trainer(gpt, data, t, plan, solo, std::make_unique<ChunkStore>(gpt, t, co, backend, t.seed));
    trainer.step();
    trainer.step();
    peak = backend.usage(Tier::gpu).peak_bytes;
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace

int main(int argc, char** argv) {
  starfish::exec::reexec_with_best_blas_kernels(argv);  // the kernels starfish-run gets
  starfish::exec::keep_freed_host_memory();             // and its allocator policy
  const int64_t budget = (argc > 1 ? std::atoll(argv[1]) : 4) << 20;
  const int hidden = argc > 2 ? std::atoi(argv[2]) : 64, max_layers = argc > 3 ? std::atoi(argv[3]) : 64;
  at::set_num_threads(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  std::printf("gpu tier: CPU pool (no CUDA), budget %lld MiB; width %d, fp32 AdamW (16 B/param in chunks)\n",
              static_cast<long long>(budget >> 20), hidden);
  for (bool evict : {false, true}) {
    int best = 0;
    int64_t best_peak = 0;
    for (int layers = 1; layers <= max_layers; layers *= 2) {
      int64_t peak = 0;
      if (!trains(model_of(layers, hidden), budget, evict, peak)) break;
      best = layers;
      best_peak = peak;
    }
    if (best == 0) {
      std::printf("%-22s nothing fits\n", evict ? "with eviction:" : "without eviction:");
      continue;
    }
    const Gpt g(model_of(best, hidden));
    std::printf("%-22s %3d layers, %9lld parameters, GPU tier peak %lld bytes%s\n", evict ? "with eviction:" : "without eviction:", best,
                static_cast<long long>(g.parameter_count()), static_cast<long long>(best_peak),
                best == max_layers ? " (the search's limit)" : "");
  }
  return 0;
}

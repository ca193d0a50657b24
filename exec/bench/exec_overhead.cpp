// Overhead of the chunk runtime against plain LibTorch when everything fits on the "GPU" tier:
// the same GPT and batch trained by (a) ReferenceTrainer (leaf parameters, torch::optim::AdamW),
// (b) FlatStore (segment recompute, flat optimizer, no runtime) and (c) ChunkStore with a budget
// that holds every chunk. Prints the median iteration time of each over a few iterations.
// usage: exec_overhead [layers=4] [hidden=128] [iterations=5]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <thread>
#include <vector>

#include <torch/torch.h>

#include "exec/chunk_store.h"
#include "exec/dist.h"
#include "exec/flat_store.h"
#include "exec/trainer.h"

using namespace starfish;
using namespace starfish::exec;

template <class F>
double median_seconds(int iterations, F&& step) {
  step();  // warm-up (the chunk runtime's tracing iteration)
  std::vector<double> t;
  for (int i = 0; i < iterations; ++i) t.push_back(step());
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

int main(int argc, char** argv) {
  const int layers = argc > 1 ? std::atoi(argv[1]) : 4, hidden = argc > 2 ? std::atoi(argv[2]) : 128;
  const int iterations = argc > 3 ? std::atoi(argv[3]) : 5;
  at::set_num_threads(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  Model m;
  m.name = "bench-gpt";
  m.layers = layers;
  m.hidden = hidden;
  m.heads = std::max(1, hidden / 32);
  m.kv_heads = m.heads;
  m.ffn_hidden = 4 * hidden;
  m.seq_len = 64;
  m.vocab = 256;
  const Gpt gpt(m);
  const ByteCorpus data = ByteCorpus::generated(1 << 20);
  Training t;
  t.global_batch = 4;
  t.dtype = DType::fp32;
  t.optimizer = Optimizer::adamw;
  t.learning_rate = 1e-3;
  Plan plan;
  plan.micro_batch = 4;
  plan.chunk_elements = 1 << 16;
  Comm solo(RankEnv{});

  ReferenceTrainer ref(gpt, data, t, plan);
  const double plain = median_seconds(iterations, [&] { return ref.step().seconds; });
  StoreTrainer flat(gpt, data, t, plan, solo, std::make_unique<FlatStore>(gpt, at::kFloat, t.seed));
  const double flat_s = median_seconds(iterations, [&] { return flat.step().seconds; });

  ChunkStoreOptions co;
  co.chunk_elements = plan.chunk_elements;
  co.runtime.budget = MemoryBudget{int64_t{1} << 32, int64_t{1} << 32, 0};
  TorchBackend backend(TierCapacity{int64_t{1} << 32, 0, 0}, std::filesystem::temp_directory_path().string(), solo);
  auto store = std::make_unique<ChunkStore>(gpt, t, co, backend, t.seed);
  ChunkStore& cs = *store;
  StoreTrainer chunked(gpt, data, t, plan, solo, std::move(store));
  const double chunk_s = median_seconds(iterations, [&] { return chunked.step().seconds; });

  std::printf("gpu tier: CPU pool (no CUDA); %d threads; model %d layers x %d hidden, %lld parameters; batch 4 x 64 tokens\n",
              at::get_num_threads(), layers, hidden, static_cast<long long>(gpt.parameter_count()));
  std::printf("%-44s %10s %10s\n", "path", "s/iter", "vs plain");
  std::printf("%-44s %10.4f %9.2fx\n", "plain LibTorch (autograd + torch::optim)", plain, 1.0);
  std::printf("%-44s %10.4f %9.2fx\n", "flat store (segment recompute, no runtime)", flat_s, flat_s / plain);
  std::printf("%-44s %10.4f %9.2fx\n", "chunk runtime, everything fits", chunk_s, chunk_s / plain);
  std::printf("chunk runtime: %d param chunks, %zu moves in %d iterations (after the warm-up: placement of states on the GPU)\n",
              cs.layout().param_chunks(), cs.runtime().moves().size(), iterations + 1);
  return 0;
}

// Moves decided per second by the chunk runtime over a GPT-3 175B layout (one GPU's shard of
// a TP 8 plan, and the whole model on one GPU), reference backend, no move log kept.
// Usage: chunk_runtime_bench [iterations]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <numeric>

#include "sim/chunk/iteration_driver.h"
#include "sim/chunk/reference_backend.h"

using namespace starfish;

static void run(const char* label, const Model& m, const Shard& shard, int64_t chunk_elements, int iterations) {
  const ChunkLayout layout =
      ChunkLayout::build(parameter_tensors(m, shard), LayoutOptions{chunk_elements, DType::fp16, Optimizer::adam, 1});
  int64_t params = 0;
  for (int c = 0; c < layout.param_chunks(); ++c) params += layout.chunk(c).bytes();
  const int64_t act = int64_t{34} * m.seq_len * m.hidden / shard.tp;
  RuntimeOptions o;
  o.budget = {params / 3 + act * (m.layers + 2), int64_t{1} << 44, 0};
  o.record_moves = false;
  ReferenceBackend backend;
  ChunkRuntime rt(layout, o, backend);
  IterationDriver driver(rt, m.tied_embeddings);
  std::vector<int64_t> nm;
  int64_t live = 0;
  for (const Step& s : driver.steps()) {
    if (s.phase == Phase::forward) live += act;
    nm.push_back(s.phase == Phase::optimizer ? 0 : live);
    if (s.phase == Phase::backward) live -= act;
  }
  FixedNonModel hooks(nm);
  driver.run_iteration(hooks);  // warm-up
  const int64_t before = rt.moves_decided();
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iterations; ++i) driver.run_iteration(hooks);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const int64_t moves = rt.moves_decided() - before;
  std::printf("%-28s chunks %6zu  moments %5zu  moves/iter %7lld  %.3f ms/iter  %.2f M moves/s\n", label,
              layout.chunks().size(), driver.steps().size(), static_cast<long long>(moves / iterations),
              1e3 * s / iterations, moves / s / 1e6);
}

int main(int argc, char** argv) {
  const int iterations = argc > 1 ? std::atoi(argv[1]) : 20;
  Model m;
  m.name = "gpt3-175b";
  m.hidden = 12288, m.layers = 96, m.heads = m.kv_heads = 96, m.ffn_hidden = 4 * 12288, m.seq_len = 2048;
  m.vocab = 50257;
  run("175B, 1 GPU, 512M-elt chunks", m, Shard{}, int64_t{512} << 20, iterations);
  run("175B, 1 GPU, 64M-elt chunks", m, Shard{}, int64_t{64} << 20, iterations);
  run("175B, 1 GPU, 16M-elt chunks", m, Shard{}, int64_t{16} << 20, iterations);
  run("175B, TP 8, 4M-elt chunks", m, Shard{8, 1, 0, 1}, int64_t{4} << 20, iterations);
  run("175B, TP 8, 1M-elt chunks", m, Shard{8, 1, 0, 1}, int64_t{1} << 20, iterations);
  return 0;
}

#pragma once
// Small models and subprocess helpers shared by the executor's tests. The models are tiny
// because this machine's LibTorch runs on the reference BLAS.
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "sim/chunk/chunk_runtime.h"
#include "sim/chunk/iteration_driver.h"
#include "sim/chunk/reference_backend.h"
#include "sim/spec/spec_io.h"

namespace starfish::exec::testing {

inline Model tiny_model() {
  return parse_model_text("name: test-gpt\nlayers: 2\nhidden: 32\nheads: 2\nseq_len: 16\nvocab: 256\n", "test-gpt.yaml");
}

inline Training tiny_training(Optimizer o = Optimizer::adam) {
  Training t;
  t.global_batch = 4;
  t.dtype = DType::fp32;
  t.optimizer = o;
  t.learning_rate = 3e-3;
  t.weight_decay = 0.01;
  t.grad_clip = 1.0;
  t.seed = 11;
  return t;
}

// The GPU bytes the busiest moment of an iteration over `layout` needs: a warm-up on the
// reference backend with room for every chunk. A budget just above it forces evictions.
inline int64_t minimum_gpu_bytes(const ChunkLayout& layout, bool tied_embeddings) {
  RuntimeOptions o;
  o.budget = MemoryBudget{int64_t{1} << 30, 64 << 20, 0};
  ReferenceBackend ref;
  ChunkRuntime rt(layout, o, ref);
  IterationDriver driver(rt, tied_embeddings);
  FixedNonModel none(0);
  driver.run_iteration(none);
  return rt.minimum_gpu_bytes();
}

// A fresh folder under the system temp dir, removed with the object.
struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string& tag) {
    path = std::filesystem::temp_directory_path() / ("starfish-test-" + tag + "-" + std::to_string(::getpid()));
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

inline void write_file(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

// Writes model + plan files for starfish-run into `dir`; returns the plan's path.
inline std::string write_plan(const TempDir& dir, const std::string& name, int64_t global_batch, int micro_batch,
                              int64_t iterations) {
  write_file(dir / "model.yaml", "name: test-gpt\nlayers: 2\nhidden: 32\nheads: 2\nseq_len: 16\nvocab: 256\n");
  const std::string plan = dir / name;
  write_file(plan, "model: model.yaml\ntraining:\n  global_batch: " + std::to_string(global_batch) +
                       "\n  dtype: fp32\n  optimizer: adamw\n  learning_rate: 0.003\n  weight_decay: 0.01\n  iterations: " +
                       std::to_string(iterations) + "\n  seed: 5\nplan:\n  micro_batch: " + std::to_string(micro_batch) + "\n");
  return plan;
}

struct ExitStatus {
  int code = -1;    // exit code when it exited
  int signal = 0;   // terminating signal when killed
};

// Runs starfish-run with `args` (no shell); stdout and stderr go to `log`.
inline ExitStatus run_starfish(const std::string& args, const std::string& log) {
  const std::string cmd = std::string("exec ") + STARFISH_RUN + " " + args + " >" + log + " 2>&1";
  const int st = std::system(cmd.c_str());
  ExitStatus e;
  if (WIFEXITED(st)) {
    e.code = WEXITSTATUS(st);
    if (e.code > 128) e.signal = e.code - 128, e.code = -1;  // the shell's report of a signal
  } else if (WIFSIGNALED(st)) {
    e.signal = WTERMSIG(st);
  }
  return e;
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

}  // namespace starfish::exec::testing

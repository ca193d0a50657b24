#pragma once
// One training iteration of a model shard walked through the chunk runtime, the same sequence
// for the simulator and the executor:
//   forward, per layer (embeddings = -1, layers, final norm + head = L): access its params,
//     compute, release (HOLD_AFTER_FWD at a tensor's last forward use, HOLD before);
//   backward, layers in reverse: access params (and grad chunks), compute and write grads,
//     release (HOLD_AFTER_BWD at a tensor's last backward use, HOLD before);
//   the optimizer step per param chunk this rank owns, where its states live.
// A tied output head uses the word embedding again at layer L, so that tensor has two uses per
// pass and only the second ends it. Compute and the non-model memory per moment come from the
// caller's StepHooks: the simulator computes them from sim/cost, the executor runs torch and
// measures.
#include <cstdint>
#include <vector>

#include "sim/chunk/chunk_runtime.h"

namespace starfish {

struct Step {
  Phase phase = Phase::forward;
  int index = 0;                         // layer, or param chunk for the optimizer
  std::vector<int> tensors;              // layout tensor indices (empty for the optimizer)
  std::vector<TensorState> release_to;   // per tensor
  MomentSignature signature() const { return {phase, index}; }
};

// The steps of one iteration. Chunks without tensors (ZeRO padding) take no optimizer step.
std::vector<Step> iteration_steps(const ChunkLayout& layout, bool tied_embeddings, const std::vector<int>& optimizer_chunks);

class StepHooks {
 public:
  virtual ~StepHooks() = default;
  // GPU memory the step needs besides chunks (activations, workspaces), at its start.
  virtual int64_t non_model_bytes(const Step& step, int step_index) = 0;
  // Forward or backward compute of the step; the tensors' chunks are on the GPU.
  virtual void compute(const Step&, const ChunkRuntime&) {}
  virtual void optimizer_step(const Step&, const OptimizerWork&) {}
  // After the step, before its release: an executor may report its measured peak here.
  virtual void after(const Step&, ChunkRuntime&) {}
};

// Non-model memory given per step (the simulator's computed activations), or one value for all.
class FixedNonModel : public StepHooks {
 public:
  explicit FixedNonModel(std::vector<int64_t> per_step) : per_step_(std::move(per_step)) {}
  explicit FixedNonModel(int64_t all) : all_(all) {}
  int64_t non_model_bytes(const Step&, int i) override {
    return per_step_.empty() ? all_ : per_step_.at(static_cast<size_t>(i));
  }

 private:
  std::vector<int64_t> per_step_;
  int64_t all_ = 0;
};

class IterationDriver {
 public:
  IterationDriver(ChunkRuntime& runtime, bool tied_embeddings);
  const std::vector<Step>& steps() const { return steps_; }
  void run_iteration(StepHooks& hooks);

 private:
  ChunkRuntime* runtime_;
  std::vector<Step> steps_;
};

}  // namespace starfish

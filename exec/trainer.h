#pragma once
// One training iteration: each rank takes its slice of the global batch, runs it as
// micro-batches (forward, backward, gradients summed), then the gradients are reduced over the
// data-parallel ranks, clipped by their global norm, and the optimizer steps. Two trainers share
// this loop: StoreTrainer (parameters in a TrainableStore: flat or chunked) and ReferenceTrainer
// (ordinary LibTorch parameters and torch::optim), which the tests compare step for step.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "exec/data.h"
#include "exec/gpt_model.h"
#include "exec/loss_scaler.h"
#include "exec/phase_clock.h"
#include "exec/trainable_store.h"
#include "sim/spec/plan.h"
#include "sim/spec/training.h"

namespace starfish::exec {

class Comm;

// Which sequences of the global batch a rank runs, in micro-batches.
struct BatchSplit {
  int64_t per_rank = 0;      // sequences per rank per iteration
  int64_t micro_batch = 0;   // sequences per micro-batch
  int64_t micro_batches = 0; // per rank per iteration
  int64_t first = 0;         // this rank's first sequence
  // Throws SpecError when the global batch does not divide over ranks and micro-batches.
  static BatchSplit make(const Training& t, const Plan& p, int rank, int world_size);
};

struct StepResult {
  double loss = 0;       // mean over the global batch (all ranks)
  double grad_norm = 0;  // global, before clipping (unscaled; inf or NaN when the step overflowed)
  bool skipped = false;  // loss scaling: the gradients overflowed and the optimizer did not step
  double loss_scale = 1; // the scale this step's loss was multiplied by (1 without loss scaling)
  double seconds = 0;    // wall time of the iteration
  // Where that time went (exclusive per phase; StoreTrainer only): the report's breakdown.
  report::PhaseSeconds phases;
  report::PhaseSeconds cpu_phases;  // the same in the training thread's CPU time
  double thread_cpu_s = 0;          // the training thread's CPU time in the iteration
};

// Both trainers honour plan.recompute (none or full; selective is refused with SpecError).
class StoreTrainer {
 public:
  StoreTrainer(const Gpt& gpt, const ByteCorpus& data, Training training, Plan plan, Comm& comm,
               std::unique_ptr<TrainableStore> store);
  StepResult step();  // runs iteration steps_done() and counts it
  int64_t steps_done() const { return steps_; }
  void set_steps_done(int64_t s) { steps_ = s; }  // after loading a checkpoint
  TrainableStore& store() { return *store_; }
  // Dynamic loss scaling: on from construction for training.dtype fp16 (default config); any
  // dtype may turn it on (or reconfigure it) before the first step.
  void enable_loss_scaling(LossScalerConfig config = {}) { scaler_.emplace(config); }
  LossScaler* loss_scaler() { return scaler_ ? &*scaler_ : nullptr; }
  bool loss_scaling() const { return scaler_.has_value(); }

 private:
  const Gpt& gpt_;
  const ByteCorpus& data_;
  Training training_;
  Plan plan_;
  Comm& comm_;
  std::unique_ptr<TrainableStore> store_;
  BatchSplit split_;
  at::Tensor anchor_;
  std::optional<LossScaler> scaler_;
  PhaseClock clock_;
  int64_t steps_ = 0;
};

// Plain LibTorch: leaf parameters with .grad, one autograd graph per micro-batch,
// torch::nn::utils::clip_grad_norm_ and torch::optim::Adam / AdamW / SGD. Single rank, fp32;
// value() returns CPU copies.
// plan.recompute full checkpoints every segment the way torch.utils.checkpoint does (forward
// without a graph, recomputed in backward); none keeps the whole graph.
class ReferenceTrainer {
 public:
  // `device`: where parameters and batches live (the CPU unless a benchmark compares on CUDA).
  ReferenceTrainer(const Gpt& gpt, const ByteCorpus& data, Training training, Plan plan, at::Device device = at::kCPU);
  ~ReferenceTrainer();
  StepResult step();
  at::Tensor value(const std::string& name) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Mean loss of the global batch of iteration `iteration` with the store's current parameters,
// without a backward pass (for evaluation and tests).
double evaluate_loss(const Gpt& gpt, TrainableStore& store, const ByteCorpus& data, const Training& t, int64_t iteration,
                     int64_t sequences);

}  // namespace starfish::exec

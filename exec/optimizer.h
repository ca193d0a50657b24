#pragma once
// Adam, AdamW and SGD over flat, contiguous pieces of model state (a chunk, or a whole flat
// store), computed where the piece lives. The arithmetic is that of torch::optim::Adam / AdamW /
// SGD in LibTorch 1.13, operation for operation, so a chunked run matches a plain LibTorch run.
#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>

#include "sim/spec/training.h"

namespace starfish::exec {

struct OptimizerConfig {
  Optimizer kind = Optimizer::adam;
  double learning_rate = 1e-4;
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  double weight_decay = 0.0;
  static OptimizerConfig from(const Training& t);
};

// One piece: `master` (fp32) is what is updated; `param` (compute dtype) receives the new
// values when it is a separate tensor (mixed precision), else it is the master itself.
// `exp_avg` and `exp_avg_sq` are unused (may be undefined) for SGD.
struct OptimizerSlice {
  at::Tensor param, master, grad, exp_avg, exp_avg_sq;
};

// `step` counts from 1.
void optimizer_update(const OptimizerConfig& config, int64_t step, OptimizerSlice& slice);

// Sum of squares of a gradient piece, in double, for the global norm.
double grad_square_sum(const at::Tensor& grad);

// torch::nn::utils::clip_grad_norm_'s factor: min(1, max_norm / (norm + 1e-6)); 1 when off.
double clip_coefficient(double total_norm, double max_norm);

}  // namespace starfish::exec

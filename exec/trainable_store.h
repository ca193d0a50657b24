#pragma once
// A ParameterStore the trainer can also update: gradients reduced over data-parallel ranks,
// the optimizer run over whole pieces (chunks) where they live, and state to checkpoint.
#include <string>
#include <utility>
#include <vector>

#include "exec/optimizer.h"
#include "exec/parameter_store.h"

namespace starfish::exec {

class Comm;

class TrainableStore : public ParameterStore {
 public:
  // Makes every rank's gradients the sum over ranks, at least for the pieces this rank updates.
  virtual void reduce_gradients(Comm& comm) = 0;
  // True when each rank updates only its own pieces (ZeRO): the grad norm is then summed over ranks.
  virtual bool sharded() const = 0;
  // Sum of squares of the final gradients of the pieces this rank updates.
  virtual double grad_square_sum() = 0;
  // Scales the gradients by `clip` (when < 1) and runs the optimizer over every piece this rank
  // updates, where the piece lives; ends the iteration. `step` counts from 1.
  virtual void optimizer_step(const OptimizerConfig& config, int64_t step, double clip) = 0;
  // Ends the iteration like optimizer_step but leaves parameters and optimizer state as they
  // were (fp16 loss scaling skips a step whose gradients overflowed).
  virtual void skip_optimizer_step() = 0;
  // Before an iteration's first backward (a store may instead overwrite on first write).
  virtual void zero_grad() = 0;
  // Every parameter's current value (fp32, model shape) on every rank: a collective.
  virtual std::vector<std::pair<std::string, at::Tensor>> gather_values(Comm& comm) = 0;
  // CPU copies of all this rank must checkpoint to resume exactly, by stable names; and back.
  virtual std::vector<std::pair<std::string, at::Tensor>> save_state() = 0;
  virtual void load_state(const std::vector<std::pair<std::string, at::Tensor>>& state) = 0;
};

}  // namespace starfish::exec

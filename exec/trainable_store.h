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
  // The pieces this rank updates, for clipping and the optimizer (made resident where they run).
  virtual std::vector<OptimizerSlice> optimizer_slices() = 0;
  // After the update: share updated pieces with the ranks that need them (ZeRO all-gather).
  virtual void after_update(Comm& comm) = 0;
  virtual void zero_grad() = 0;
  // fp32 copy of a parameter's current value, model shape (for comparisons and reports).
  virtual at::Tensor value(const std::string& name) = 0;
  // Every tensor a checkpoint must hold to resume exactly, by a stable name. Loading copies into
  // these tensors in place.
  virtual std::vector<std::pair<std::string, at::Tensor>> checkpoint_tensors() = 0;
};

}  // namespace starfish::exec

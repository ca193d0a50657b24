#pragma once
// Where a model's parameters (and their gradients) live while it trains. The GPT asks for a
// segment's tensors right before it computes with them and gives them back right after, in
// forward and again in backward; a store may move the payload anywhere in between (the chunk
// runtime evicts it to CPU or NVMe), so a view is only valid between access and release.
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

namespace starfish::exec {

enum class Pass { forward, backward };

class ParameterStore {
 public:
  virtual ~ParameterStore() = default;
  // Makes the named tensors resident on the compute device until release().
  virtual void access(const std::vector<std::string>& names, Pass pass) = 0;
  // A view of one accessed tensor's payload in its model shape (compute dtype).
  virtual at::Tensor param(const std::string& name) = 0;
  // Adds `grad` (model shape) into the tensor's gradient; only between access(backward) and release.
  virtual void accumulate_grad(const std::string& name, const at::Tensor& grad) = 0;
  virtual void release(const std::vector<std::string>& names, Pass pass) = 0;
  // Where compute runs (the batch is moved there).
  virtual at::Device device() const { return at::kCPU; }
  // On: the segments keep their autograd graphs from forward to backward (recompute none), and
  // those graphs hold views of the accessed tensors, so a tensor's payload must stay where it
  // was in its forward until its backward. A store that moves payloads checks it and throws
  // SpecError when it cannot keep to it; one that never moves them has nothing to do.
  virtual void hold_graphs(bool on) { (void)on; }
};

}  // namespace starfish::exec

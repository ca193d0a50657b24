#pragma once
// Runs one GPT segment on parameters held by a ParameterStore, as an autograd node: forward
// accesses the segment's tensors, computes without recording a graph, releases them and keeps
// only the segment's input; backward accesses the tensors again (the store may have moved them
// meanwhile), recomputes the segment with a graph, takes the gradients of its input and of its
// parameters, adds the latter into the store's gradients and releases. No tensor of the store is
// ever captured by autograd, so evicting a chunk between forward and backward is safe.
#include <ATen/core/Tensor.h>

#include "exec/gpt_model.h"
#include "exec/parameter_store.h"

namespace starfish::exec {

// `anchor` is a scalar that requires grad: it ties segment 0 (whose input, tokens, has no
// gradient) into the graph so that its backward runs. Returns the segment's output.
at::Tensor run_segment(const Gpt& gpt, ParameterStore& store, int segment, const at::Tensor& input,
                       const at::Tensor& targets, const at::Tensor& anchor);

}  // namespace starfish::exec

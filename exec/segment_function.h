#pragma once
// Runs one GPT segment on parameters held by a ParameterStore, as an autograd node. Forward
// accesses the segment's tensors, computes and releases them; backward accesses them again,
// takes the gradients of the segment's input and parameters, adds the latter into the store's
// gradients and releases. Two ways, after the plan's `recompute`:
//   recompute (full): forward computes without a graph and keeps only the segment's input;
//     backward recomputes the segment with a graph on the tensors as they are then (the store
//     may have moved them meanwhile). No tensor of the store is captured by autograd, so
//     evicting a chunk between forward and backward is safe.
//   no recompute (none): forward computes with a graph, which backward then differentiates.
//     The graph holds views of the store's tensors from forward to backward, so the store must
//     not move them in between (ParameterStore::hold_graphs; exec/graph_residency.h). The
//     embeddings segment is recomputed either way: it is a lookup, and its graph would save
//     nothing of its parameters.
// The gradients are equal either way (the same operations on the same values).
#include <ATen/core/Tensor.h>

#include "exec/gpt_model.h"
#include "exec/parameter_store.h"

namespace starfish::exec {

// `anchor` is a scalar that requires grad: it ties segment 0 (whose input, tokens, has no
// gradient) into the graph so that its backward runs. Returns the segment's output.
at::Tensor run_segment(const Gpt& gpt, ParameterStore& store, int segment, const at::Tensor& input,
                       const at::Tensor& targets, const at::Tensor& anchor, bool recompute = true);

}  // namespace starfish::exec

#include "exec/segment_function.h"

#include <optional>

#include <torch/torch.h>

#include "exec/phase_clock.h"

namespace starfish::exec {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::Variable;
using torch::autograd::variable_list;

// The gradients of `out` (given `grad_out`) with respect to the leaves and, when it has one,
// the input; the leaves' go into the store. Returns the input's gradient (undefined for tokens).
Variable differentiate(ParameterStore& store, const std::vector<std::string>& names, const Variable& out, variable_list wrt,
                       const Variable& x, const Variable& grad_out) {
  const bool input_has_grad = x.requires_grad();
  if (input_has_grad) wrt.push_back(x);
  const variable_list grads = torch::autograd::grad({out}, wrt, {grad_out}, /*retain_graph=*/false, /*create_graph=*/false,
                                                    /*allow_unused=*/true);
  for (size_t i = 0; i < names.size(); ++i)
    if (grads[i].defined()) store.accumulate_grad(names[i], grads[i]);
  return input_has_grad ? grads.back() : Variable();
}

// A differentiable stand-in for an input: floating activations get a gradient, tokens do not.
Variable input_leaf(const Variable& input) { return input.is_floating_point() ? input.detach().requires_grad_(true) : input; }

struct NodeArgs {
  const Gpt* gpt;
  ParameterStore* store;
  int segment;
};

void save_args(AutogradContext* ctx, const Gpt* gpt, ParameterStore* store, int64_t segment) {
  ctx->saved_data["gpt"] = reinterpret_cast<int64_t>(gpt);
  ctx->saved_data["store"] = reinterpret_cast<int64_t>(store);
  ctx->saved_data["segment"] = segment;
}

NodeArgs args_of(AutogradContext* ctx) {
  return {reinterpret_cast<const Gpt*>(ctx->saved_data["gpt"].toInt()), reinterpret_cast<ParameterStore*>(ctx->saved_data["store"].toInt()),
          static_cast<int>(ctx->saved_data["segment"].toInt())};
}

// recompute: full. Only the input (and targets) survive forward.
struct RecomputeNode : torch::autograd::Function<RecomputeNode> {
  static Variable forward(AutogradContext* ctx, const Variable& anchor, const Variable& input, const Variable& targets,
                          const Gpt* gpt, ParameterStore* store, int64_t segment) {
    (void)anchor;
    const std::vector<std::string>& names = gpt->segment_params(static_cast<int>(segment));
    store->access(names, Pass::forward);
    std::vector<at::Tensor> params;
    params.reserve(names.size());
    for (const std::string& n : names) params.push_back(store->param(n));
    at::Tensor out = gpt->forward_segment(static_cast<int>(segment), input, params, targets);
    params.clear();
    store->release(names, Pass::forward);
    ctx->save_for_backward({input, targets});
    save_args(ctx, gpt, store, segment);
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const NodeArgs a = args_of(ctx);
    const variable_list saved = ctx->get_saved_variables();
    const std::vector<std::string>& names = a.gpt->segment_params(a.segment);
    a.store->access(names, Pass::backward);
    variable_list leaves;
    leaves.reserve(names.size());
    for (const std::string& n : names) leaves.push_back(a.store->param(n).detach().requires_grad_(true));
    const Variable x = input_leaf(saved[0]);
    Variable grad_input;
    {
      at::AutoGradMode enable(true);
      // The report's breakdown: a layer's (or the head's) forward run again. The embedding lookup
      // is redone in every plan (it saves nothing) and stays part of backward.
      std::optional<PhaseScope> recomputing;
      if (a.segment > 0) recomputing.emplace(report::PhaseId::recompute);
      const Variable out = a.gpt->forward_segment(a.segment, x, leaves, saved[1]);
      recomputing.reset();
      grad_input = differentiate(*a.store, names, out, std::move(leaves), x, grad_outputs[0]);
    }
    a.store->release(names, Pass::backward);
    return {Variable(), grad_input, Variable(), Variable(), Variable(), Variable()};
  }
};

// recompute: none. The segment's graph, built in forward, lives in the context until backward.
struct GraphNode : torch::autograd::Function<GraphNode> {
  static Variable forward(AutogradContext* ctx, const Variable& input, const Variable& targets, const Gpt* gpt, ParameterStore* store,
                          int64_t segment) {
    const std::vector<std::string>& names = gpt->segment_params(static_cast<int>(segment));
    store->access(names, Pass::forward);
    // variable_data(): the leaves share the payload but not its version counter. Backward
    // writes gradients through other views of the same chunk (mixed precision reuses the param
    // chunk for grads), always at tensors whose own backward has run; with a shared counter
    // autograd would take those writes for changes to what this graph saved.
    c10::List<at::Tensor> leaves;
    leaves.reserve(names.size());
    for (const std::string& n : names) leaves.push_back(store->param(n).variable_data().requires_grad_(true));
    const Variable x = input_leaf(input);
    Variable out;
    {
      at::AutoGradMode enable(true);
      out = gpt->forward_segment(static_cast<int>(segment), x, leaves.vec(), targets);
    }
    store->release(names, Pass::forward);
    ctx->saved_data["out"] = out;
    ctx->saved_data["leaves"] = leaves;
    ctx->saved_data["x"] = x;
    save_args(ctx, gpt, store, segment);
    // The node's own output must be a tensor without history: returning `out` itself would
    // make this node its grad_fn and cut the graph it differentiates in backward.
    return out.detach();
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const NodeArgs a = args_of(ctx);
    const std::vector<std::string>& names = a.gpt->segment_params(a.segment);
    const Variable out = ctx->saved_data["out"].toTensor(), x = ctx->saved_data["x"].toTensor();
    variable_list leaves = ctx->saved_data["leaves"].toTensorVector();
    for (const char* k : {"out", "leaves", "x"}) ctx->saved_data.erase(k);  // the graph goes with this backward
    a.store->access(names, Pass::backward);
    const Variable grad_input = differentiate(*a.store, names, out, std::move(leaves), x, grad_outputs[0]);
    a.store->release(names, Pass::backward);
    return {grad_input, Variable(), Variable(), Variable(), Variable()};
  }
};

}  // namespace

at::Tensor run_segment(const Gpt& gpt, ParameterStore& store, int segment, const at::Tensor& input, const at::Tensor& targets,
                       const at::Tensor& anchor, bool recompute) {
  // Segment 0's input (tokens) has no gradient: the anchor ties its recompute node into the graph.
  if (recompute || segment == 0) return RecomputeNode::apply(anchor, input, targets, &gpt, &store, static_cast<int64_t>(segment));
  return GraphNode::apply(input, targets, &gpt, &store, static_cast<int64_t>(segment));
}

}  // namespace starfish::exec

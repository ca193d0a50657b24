#include "exec/segment_function.h"

#include <torch/torch.h>

namespace starfish::exec {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::Variable;
using torch::autograd::variable_list;

struct SegmentNode : torch::autograd::Function<SegmentNode> {
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
    ctx->saved_data["gpt"] = reinterpret_cast<int64_t>(gpt);
    ctx->saved_data["store"] = reinterpret_cast<int64_t>(store);
    ctx->saved_data["segment"] = segment;
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const auto* gpt = reinterpret_cast<const Gpt*>(ctx->saved_data["gpt"].toInt());
    auto* store = reinterpret_cast<ParameterStore*>(ctx->saved_data["store"].toInt());
    const int segment = static_cast<int>(ctx->saved_data["segment"].toInt());
    const variable_list saved = ctx->get_saved_variables();
    const std::vector<std::string>& names = gpt->segment_params(segment);

    store->access(names, Pass::backward);
    variable_list leaves;
    leaves.reserve(names.size() + 1);
    for (const std::string& n : names) leaves.push_back(store->param(n).detach().requires_grad_(true));
    const bool input_has_grad = saved[0].is_floating_point();
    Variable x = input_has_grad ? saved[0].detach().requires_grad_(true) : saved[0];
    variable_list grads;
    {
      at::AutoGradMode enable(true);
      Variable out = gpt->forward_segment(segment, x, leaves, saved[1]);
      variable_list wrt = leaves;
      if (input_has_grad) wrt.push_back(x);
      grads = torch::autograd::grad({out}, wrt, {grad_outputs[0]}, /*retain_graph=*/false, /*create_graph=*/false,
                                    /*allow_unused=*/true);
    }
    for (size_t i = 0; i < names.size(); ++i)
      if (grads[i].defined()) store->accumulate_grad(names[i], grads[i]);
    leaves.clear();
    store->release(names, Pass::backward);
    Variable grad_input = input_has_grad ? grads.back() : Variable();
    return {Variable(), grad_input, Variable(), Variable(), Variable(), Variable()};
  }
};

}  // namespace

at::Tensor run_segment(const Gpt& gpt, ParameterStore& store, int segment, const at::Tensor& input,
                       const at::Tensor& targets, const at::Tensor& anchor) {
  return SegmentNode::apply(anchor, input, targets, &gpt, &store, static_cast<int64_t>(segment));
}

}  // namespace starfish::exec

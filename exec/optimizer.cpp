#include "exec/optimizer.h"

#include <cmath>

#include <ATen/ATen.h>

namespace starfish::exec {

OptimizerConfig OptimizerConfig::from(const Training& t) {
  OptimizerConfig c;
  c.kind = t.optimizer;
  c.learning_rate = t.learning_rate;
  c.weight_decay = t.weight_decay;
  return c;
}

void optimizer_update(const OptimizerConfig& c, int64_t step, OptimizerSlice& s) {
  at::NoGradGuard no_grad;
  at::Tensor& p = s.master;
  at::Tensor grad = s.grad.scalar_type() == p.scalar_type() ? s.grad : s.grad.to(p.scalar_type());
  if (c.kind == Optimizer::sgd) {
    if (c.weight_decay != 0) grad = grad.add(p, c.weight_decay);
    p.add_(grad, -c.learning_rate);
  } else {
    if (c.kind == Optimizer::adamw) p.mul_(1 - c.learning_rate * c.weight_decay);
    else if (c.weight_decay != 0) grad = grad.add(p, c.weight_decay);
    const double bias_correction1 = 1 - std::pow(c.beta1, double(step));
    const double bias_correction2 = 1 - std::pow(c.beta2, double(step));
    s.exp_avg.mul_(c.beta1).add_(grad, 1 - c.beta1);
    s.exp_avg_sq.mul_(c.beta2).addcmul_(grad, grad, 1 - c.beta2);
    at::Tensor denom = (s.exp_avg_sq.sqrt() / std::sqrt(bias_correction2)).add_(c.eps);
    p.addcdiv_(s.exp_avg, denom, -c.learning_rate / bias_correction1);
  }
  if (s.param.defined() && !s.param.is_same(s.master)) s.param.copy_(s.master);
}

double grad_square_sum(const at::Tensor& grad) {
  const double n = grad.to(at::kFloat).norm().item<double>();
  return n * n;
}

double clip_coefficient(double total_norm, double max_norm) {
  if (max_norm <= 0) return 1.0;
  return std::min(1.0, max_norm / (total_norm + 1e-6));
}

}  // namespace starfish::exec

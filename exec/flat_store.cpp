#include "exec/flat_store.h"

#include <ATen/ATen.h>

#include "exec/dist.h"

namespace starfish::exec {

namespace {

// The TrainableStore contract hands out CPU copies (cpu() of a CPU tensor would be no copy).
at::Tensor cpu_copy(const at::Tensor& t) { return t.is_cpu() ? t.clone() : t.cpu(); }

}  // namespace

FlatStore::FlatStore(const Gpt& gpt, at::ScalarType dtype, uint64_t seed, at::Device device) : gpt_(gpt), device_(device) {
  const int64_t n = gpt.parameter_count();
  master_ = at::empty({n}, at::kFloat);
  int64_t offset = 0;
  for (const GptParam& p : gpt.params()) {
    offsets_[p.name] = offset;
    master_.narrow(0, offset, p.elements).copy_(gpt.initial_value(p, seed).reshape({-1}));
    offset += p.elements;
  }
  master_ = master_.to(device_);
  param_ = dtype == at::kFloat ? master_ : master_.to(dtype);
  const at::TensorOptions f32 = at::TensorOptions().dtype(at::kFloat).device(device_);
  grad_ = at::zeros({n}, f32);
  exp_avg_ = at::zeros({n}, f32);
  exp_avg_sq_ = at::zeros({n}, f32);
}

const GptParam& FlatStore::entry(const std::string& name, int64_t& offset) const {
  offset = offsets_.at(name);
  return gpt_.param(name);
}

void FlatStore::access(const std::vector<std::string>& names, Pass) { accesses_ += static_cast<int64_t>(names.size()); }
void FlatStore::release(const std::vector<std::string>&, Pass) {}

at::Tensor FlatStore::param(const std::string& name) {
  int64_t off = 0;
  const GptParam& p = entry(name, off);
  return param_.narrow(0, off, p.elements).view(p.shape);
}

void FlatStore::accumulate_grad(const std::string& name, const at::Tensor& grad) {
  int64_t off = 0;
  const GptParam& p = entry(name, off);
  grad_.narrow(0, off, p.elements).view(p.shape).add_(grad);
}

void FlatStore::reduce_gradients(Comm& comm) { comm.all_reduce_sum(grad_); }

double FlatStore::grad_square_sum() { return exec::grad_square_sum(grad_); }

void FlatStore::optimizer_step(const OptimizerConfig& config, int64_t step, double clip) {
  if (clip < 1.0) grad_.mul_(clip);
  OptimizerSlice s{param_, master_, grad_, exp_avg_, exp_avg_sq_};
  optimizer_update(config, step, s);
}

// The gradients stay in grad_ until the next zero_grad; param_, master_ and the moments are untouched.
void FlatStore::skip_optimizer_step() {}

std::vector<std::pair<std::string, at::Tensor>> FlatStore::gather_values(Comm&) {
  std::vector<std::pair<std::string, at::Tensor>> v;
  for (const GptParam& p : gpt_.params()) v.emplace_back(p.name, value(p.name));
  return v;
}

void FlatStore::zero_grad() { grad_.zero_(); }

at::Tensor FlatStore::value(const std::string& name) {
  int64_t off = 0;
  const GptParam& p = entry(name, off);
  return cpu_copy(master_.narrow(0, off, p.elements).view(p.shape));
}

std::vector<std::pair<std::string, at::Tensor>> FlatStore::save_state() {
  std::vector<std::pair<std::string, at::Tensor>> t{
      {"master", cpu_copy(master_)}, {"exp_avg", cpu_copy(exp_avg_)}, {"exp_avg_sq", cpu_copy(exp_avg_sq_)}};
  if (!param_.is_same(master_)) t.emplace_back("param", cpu_copy(param_));
  return t;
}

void FlatStore::load_state(const std::vector<std::pair<std::string, at::Tensor>>& state) {
  for (const auto& [name, t] : state) {
    if (name == "master") master_.copy_(t);
    else if (name == "exp_avg") exp_avg_.copy_(t);
    else if (name == "exp_avg_sq") exp_avg_sq_.copy_(t);
    else if (name == "param") param_.copy_(t);
    else throw std::invalid_argument("flat store: no state named " + name);
  }
}

}  // namespace starfish::exec

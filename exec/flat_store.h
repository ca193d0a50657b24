#pragma once
// All parameters in one flat buffer, always resident: the store for a model that fits, and the
// data-parallel baseline (gradients all-reduced, every rank updates everything). The GPT sees the
// same views into flat storage as with chunks; only the moves are missing.
#include <map>

#include "exec/gpt_model.h"
#include "exec/trainable_store.h"

namespace starfish::exec {

class FlatStore : public TrainableStore {
 public:
  // `dtype`: the compute dtype (fp32, bf16 or fp16); with 16 bits an fp32 master copy is kept. Values
  // from gpt.initial_value(seed). Everything lives on `device` (the CPU unless a benchmark says so).
  FlatStore(const Gpt& gpt, at::ScalarType dtype, uint64_t seed, at::Device device = at::kCPU);
  at::Device device() const override { return device_; }

  void access(const std::vector<std::string>& names, Pass pass) override;
  at::Tensor param(const std::string& name) override;
  void accumulate_grad(const std::string& name, const at::Tensor& grad) override;
  void release(const std::vector<std::string>& names, Pass pass) override;

  void reduce_gradients(Comm& comm) override;
  bool sharded() const override { return false; }
  double grad_square_sum() override;
  void optimizer_step(const OptimizerConfig& config, int64_t step, double clip) override;
  void skip_optimizer_step() override;
  void zero_grad() override;
  std::vector<std::pair<std::string, at::Tensor>> gather_values(Comm& comm) override;
  std::vector<std::pair<std::string, at::Tensor>> save_state() override;
  void load_state(const std::vector<std::pair<std::string, at::Tensor>>& state) override;

  at::Tensor value(const std::string& name);  // fp32 copy, model shape

  int64_t accesses() const { return accesses_; }

 private:
  const GptParam& entry(const std::string& name, int64_t& offset) const;

  const Gpt& gpt_;
  std::map<std::string, int64_t> offsets_;
  at::Device device_;
  at::Tensor param_, master_, grad_, exp_avg_, exp_avg_sq_;
  int64_t accesses_ = 0;
};

}  // namespace starfish::exec

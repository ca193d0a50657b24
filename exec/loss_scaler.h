#pragma once
// Dynamic loss scaling for fp16 training. fp16 gradients of a small loss underflow to zero, so
// the loss is multiplied by `scale` before backward and the gradients divided by it before the
// optimizer. Too large a scale overflows instead: then the gradients hold inf or NaN, the step is
// skipped and the scale halved. After `growth_interval` good steps in a row the scale doubles
// again, so it settles just below where overflow begins (the rule of PyTorch's GradScaler).
// The scaler only decides; the trainer applies the scale, detects overflow (a non-finite global
// gradient norm, the same value on every rank) and skips or steps.
#include <cstdint>

namespace starfish::exec {

struct LossScalerConfig {
  double init_scale = 65536.0;    // 2^16
  int64_t growth_interval = 2000; // good steps in a row before the scale doubles
  double min_scale = 1.0;         // halving stops here
};

// What must survive a checkpoint for a resumed run to continue the same schedule.
struct LossScalerState {
  double scale = 65536.0;
  int64_t good_steps = 0;  // good steps since the last overflow or growth
};

class LossScaler {
 public:
  // Throws std::invalid_argument unless init_scale >= min_scale > 0 and growth_interval >= 1.
  explicit LossScaler(LossScalerConfig config = {});
  double scale() const { return state_.scale; }
  // After backward: `scaled_grad_norm` is the global norm of the scaled gradients. Returns true
  // when they are finite (apply the step, unscaled by 1 / scale() as it was before this call);
  // false on overflow (skip the step). Updates the scale for the next iteration either way.
  bool update(double scaled_grad_norm);
  int64_t skipped_steps() const { return skipped_; }  // overflows seen by this object
  LossScalerState state() const { return state_; }
  void restore(const LossScalerState& s);
  const LossScalerConfig& config() const { return config_; }

 private:
  LossScalerConfig config_;
  LossScalerState state_;
  int64_t skipped_ = 0;
};

}  // namespace starfish::exec

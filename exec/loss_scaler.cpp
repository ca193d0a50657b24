#include "exec/loss_scaler.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

namespace starfish::exec {

LossScaler::LossScaler(LossScalerConfig config) : config_(config) {
  std::ostringstream m;
  if (!(config_.min_scale > 0) || !(config_.init_scale >= config_.min_scale) || !std::isfinite(config_.init_scale))
    m << "loss scaler: init_scale " << config_.init_scale << " must be finite and at least min_scale " << config_.min_scale << " > 0";
  else if (config_.growth_interval < 1)
    m << "loss scaler: growth_interval " << config_.growth_interval << " must be at least 1";
  if (!m.str().empty()) throw std::invalid_argument(m.str());
  state_.scale = config_.init_scale;
}

bool LossScaler::update(double scaled_grad_norm) {
  if (!std::isfinite(scaled_grad_norm)) {
    state_.scale = std::max(config_.min_scale, state_.scale * 0.5);
    state_.good_steps = 0;
    ++skipped_;
    return false;
  }
  if (++state_.good_steps >= config_.growth_interval) {
    // Doubling a finite double only overflows past 1e308, far beyond any useful scale.
    state_.scale *= 2.0;
    state_.good_steps = 0;
  }
  return true;
}

void LossScaler::restore(const LossScalerState& s) {
  if (!(s.scale >= config_.min_scale) || !std::isfinite(s.scale) || s.good_steps < 0) {
    std::ostringstream m;
    m << "loss scaler: cannot restore scale " << s.scale << " with " << s.good_steps << " good steps (min_scale " << config_.min_scale << ")";
    throw std::invalid_argument(m.str());
  }
  state_ = s;
}

}  // namespace starfish::exec

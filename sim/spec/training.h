#pragma once
// What the user wants trained: batch, precision and optimizer. How it is split over GPUs is
// the Plan's business (micro-batch included: it is a parallelism choice the search makes).
#include <cstdint>
#include <string>

#include "sim/spec/dtype.h"
#include "sim/spec/provenance.h"

namespace starfish {

enum class Optimizer { adam, adamw, sgd };

struct Training {
  int64_t global_batch = 0;     // sequences per iteration
  DType dtype = DType::bf16;    // compute / param dtype; fp32 = no mixed precision
  Optimizer optimizer = Optimizer::adam;
  double learning_rate = 1e-4;
  double weight_decay = 0.0;
  double grad_clip = 1.0;       // max global grad norm; 0 = off
  int64_t iterations = 1;       // for real runs
  uint64_t seed = 1234;
  Provenance provenance;

  bool mixed_precision() const { return dtype != DType::fp32 && dtype != DType::tf32; }
  bool operator==(const Training&) const = default;
};

const char* to_string(Optimizer o);

}  // namespace starfish

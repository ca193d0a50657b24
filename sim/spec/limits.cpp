#include "sim/spec/limits.h"

namespace starfish::limits {

std::optional<int64_t> checked_mul(int64_t a, int64_t b, int64_t max) {
  int64_t product = 0;
  if (a < 0 || b < 0 || __builtin_mul_overflow(a, b, &product) || product > max) return std::nullopt;
  return product;
}

bool within_pass_limit(int64_t micro_batches, int64_t layers) {
  return checked_mul(micro_batches, layers, kMaxMicroBatchLayers).has_value();
}

}  // namespace starfish::limits

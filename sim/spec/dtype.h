#pragma once
#include <cstdint>
#include <string>

namespace starfish {

enum class DType { fp32, tf32, fp16, bf16, fp8 };

// Bytes of one element as stored (tf32 is stored as fp32).
constexpr int64_t bytes_of(DType t) {
  switch (t) {
    case DType::fp32:
    case DType::tf32: return 4;
    case DType::fp16:
    case DType::bf16: return 2;
    case DType::fp8: return 1;
  }
  return 4;
}

const char* to_string(DType t);
bool parse_dtype(const std::string& text, DType& out);  // false when unknown

}  // namespace starfish

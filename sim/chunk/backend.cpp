#include "sim/chunk/backend.h"

#include <array>
#include <utility>

namespace starfish {
namespace {

constexpr std::array<std::pair<MoveReason, const char*>, 7> kReasons = {{
    {MoveReason::access, "access"},
    {MoveReason::prefetch, "prefetch"},
    {MoveReason::eviction, "eviction"},
    {MoveReason::optimizer, "optimizer"},
    {MoveReason::zero_gather, "zero-gather"},
    {MoveReason::zero_reduce, "zero-reduce"},
    {MoveReason::placement, "placement"},
}};

}  // namespace

const char* to_string(Queue q) { return q == Queue::compute ? "compute" : "copy"; }

const char* to_string(MoveReason r) {
  for (const auto& [reason, name] : kReasons)
    if (reason == r) return name;
  return "?";
}

bool parse_move_reason(const std::string& text, MoveReason& out) {
  for (const auto& [reason, name] : kReasons)
    if (text == name) {
      out = reason;
      return true;
    }
  return false;
}


}  // namespace starfish

#include "sim/chunk/zero_groups.h"

#include "sim/spec/error.h"

namespace starfish {

const char* to_string(ZeroMode m) {
  switch (m) {
    case ZeroMode::replicated: return "replicated";
    case ZeroMode::sharded: return "sharded";
    case ZeroMode::sharded_memory_saving: return "sharded-memory-saving";
  }
  return "?";
}

ZeroGroups::ZeroGroups(int param_chunks, std::vector<int> ranks, int index, ZeroMode mode)
    : ranks_(std::move(ranks)), index_(index), mode_(mode) {
  if (ranks_.empty()) throw SpecError("ZeRO groups: the data-parallel group has no ranks");
  if (index_ < 0 || index_ >= world())
    throw SpecError("ZeRO groups: rank index " + std::to_string(index_) + " outside a group of " + std::to_string(world()));
  if (sharded() && param_chunks % world() != 0)
    throw SpecError("ZeRO groups: " + std::to_string(param_chunks) + " param chunks do not split into groups of " +
                    std::to_string(world()) + " (build the layout with world = " + std::to_string(world()) + ")");
}

Group ZeroGroups::group(int root_chunk) const {
  return Group{0, ranks_, index_, root_chunk >= 0 ? owner(root_chunk) : -1};
}

}  // namespace starfish

#pragma once
// ZeRO-DP over chunks (PatrickStar): param chunk i belongs to group i / W and is owned by rank
// i % W; only the owner keeps its payload and optimizer states between uses. Before a chunk is
// used, its group is all-gathered onto the GPU; after the group's last backward use its grads
// are reduce-scattered to the owners and remote copies dropped. The memory-saving variant
// broadcasts one chunk at a time from its owner and reduces each chunk to its owner, so only
// the chunks in use are materialised (W times less working memory, W times more collectives).
// Without ZeRO every rank keeps every chunk and grads are all-reduced after their last use.
#include <vector>

#include "sim/chunk/backend.h"

namespace starfish {

enum class ZeroMode { replicated, sharded, sharded_memory_saving };
const char* to_string(ZeroMode m);

class ZeroGroups {
 public:
  // `ranks`: the data-parallel group's global ranks (size W); `index`: this rank's position.
  // Throws SpecError when the param chunk count is not a multiple of W in a sharded mode.
  ZeroGroups(int param_chunks, std::vector<int> ranks, int index, ZeroMode mode);

  ZeroMode mode() const { return mode_; }
  int world() const { return static_cast<int>(ranks_.size()); }
  int index() const { return index_; }
  bool sharded() const { return mode_ != ZeroMode::replicated && world() > 1; }
  int group_of(int param_chunk) const { return param_chunk / world(); }
  int owner(int param_chunk) const { return param_chunk % world(); }
  // This rank keeps the chunk's payload and optimizer states between uses.
  bool keeps(int param_chunk) const { return !sharded() || owner(param_chunk) == index_; }
  int first_chunk(int group) const { return group * world(); }
  // The backend group; `root_chunk` >= 0 sets the root to that chunk's owner.
  Group group(int root_chunk = -1) const;

 private:
  std::vector<int> ranks_;
  int index_ = 0;
  ZeroMode mode_ = ZeroMode::replicated;
};

}  // namespace starfish

#pragma once
// Tensor states (PatrickStar) and the chunk states derived from them. A tensor is
//   FREE            no payload needed (not used)
//   COMPUTE         in use by the current operator: its chunk must be on the GPU and stay there
//   HOLD            holds data between uses (params before use; grads still accumulating)
//   HOLD_AFTER_FWD  its last forward use is done (ZeRO may drop remote copies)
//   HOLD_AFTER_BWD  its last backward use is done: its grad is final (ZeRO may reduce it)
// A param chunk's state is derived from the counts of its tensors' states; RELEASED means the
// chunk has no payload at all (a remote ZeRO chunk, or a grad chunk not yet written).
#include <array>
#include <cstdint>
#include <vector>

#include "sim/cost/chunk_layout.h"

namespace starfish {

enum class TensorState { free, compute, hold, hold_after_fwd, hold_after_bwd };
enum class ChunkState { released, compute, hold, hold_after_fwd, hold_after_bwd, free };
const char* to_string(TensorState s);
const char* to_string(ChunkState s);

class TensorStates {
 public:
  explicit TensorStates(const ChunkLayout& layout);

  TensorState state(int tensor) const { return states_[tensor]; }
  void set(int tensor, TensorState s);
  void reset(TensorState s);  // every tensor, e.g. HOLD at the start of an iteration
  int count(int param_chunk, TensorState s) const { return counts_[param_chunk][static_cast<int>(s)]; }
  // COMPUTE if any tensor computes; otherwise the state all its tensors share, or HOLD when
  // they are mixed; FREE for a chunk with no tensors. `has_payload` false gives RELEASED.
  ChunkState chunk_state(int param_chunk, bool has_payload = true) const;
  bool all_in(int param_chunk, TensorState s) const;  // every tensor (and at least one) is in s

 private:
  const ChunkLayout* layout_;
  std::vector<TensorState> states_;
  std::vector<std::array<int, 5>> counts_;
};

}  // namespace starfish

#include "sim/chunk/tensor_state.h"

namespace starfish {

const char* to_string(TensorState s) {
  switch (s) {
    case TensorState::free: return "FREE";
    case TensorState::compute: return "COMPUTE";
    case TensorState::hold: return "HOLD";
    case TensorState::hold_after_fwd: return "HOLD_AFTER_FWD";
    case TensorState::hold_after_bwd: return "HOLD_AFTER_BWD";
  }
  return "?";
}

const char* to_string(ChunkState s) {
  switch (s) {
    case ChunkState::released: return "RELEASED";
    case ChunkState::compute: return "COMPUTE";
    case ChunkState::hold: return "HOLD";
    case ChunkState::hold_after_fwd: return "HOLD_AFTER_FWD";
    case ChunkState::hold_after_bwd: return "HOLD_AFTER_BWD";
    case ChunkState::free: return "FREE";
  }
  return "?";
}

TensorStates::TensorStates(const ChunkLayout& layout)
    : layout_(&layout), states_(layout.tensors().size(), TensorState::free), counts_(layout.param_chunks()) {
  for (int c = 0; c < layout.param_chunks(); ++c)
    counts_[c][static_cast<int>(TensorState::free)] = static_cast<int>(layout.tensors_of(c).size());
}

void TensorStates::set(int tensor, TensorState s) {
  auto& n = counts_[layout_->place(tensor).chunk];
  --n[static_cast<int>(states_[tensor])];
  ++n[static_cast<int>(s)];
  states_[tensor] = s;
}

void TensorStates::reset(TensorState s) {
  for (size_t t = 0; t < states_.size(); ++t) set(static_cast<int>(t), s);
}

bool TensorStates::all_in(int c, TensorState s) const {
  const int n = static_cast<int>(layout_->tensors_of(c).size());
  return n > 0 && counts_[c][static_cast<int>(s)] == n;
}

ChunkState TensorStates::chunk_state(int c, bool has_payload) const {
  if (!has_payload) return ChunkState::released;
  if (layout_->tensors_of(c).empty()) return ChunkState::free;
  if (count(c, TensorState::compute) > 0) return ChunkState::compute;
  if (all_in(c, TensorState::hold_after_fwd)) return ChunkState::hold_after_fwd;
  if (all_in(c, TensorState::hold_after_bwd)) return ChunkState::hold_after_bwd;
  if (all_in(c, TensorState::free)) return ChunkState::free;
  return ChunkState::hold;
}

}  // namespace starfish

#pragma once
// Where each optimizer-state unit (the master, momentum and variance chunks mirroring one param
// chunk) lives: on the GPU as far as the margin allows (hybrid Adam, PatrickStar), else on the
// CPU, else on NVMe. The optimizer step of that unit then runs where it lives (NVMe units are
// staged through the CPU). The margin is what the GPU has left after the peak non-model memory
// and the param (and fp32 grad) chunks this rank keeps plus its ZeRO working set, so placing
// states there never forces param chunks off the GPU.
#include <cstdint>
#include <vector>

#include "sim/cost/chunk_layout.h"
#include "sim/spec/plan.h"

namespace starfish {

struct MemoryBudget {
  int64_t gpu_bytes = 0;   // the GPU memory this rank may use: chunks + non-model
  int64_t cpu_bytes = 0;   // host memory for chunks
  int64_t nvme_bytes = 0;  // NVMe space for chunks
};

struct PlacementInput {
  int64_t peak_non_model_bytes = 0;
  int64_t param_bytes = 0;    // param and grad chunks this rank keeps
  int64_t working_bytes = 0;  // extra GPU bytes for remote (ZeRO-gathered) chunks at the busiest moment
  std::vector<int> units;     // param chunks whose states this rank keeps, in placement order
};

struct Placement {
  std::vector<Tier> tier;        // per param chunk (meaningful for the units only)
  int64_t gpu_margin_bytes = 0;  // before placing states
  int64_t bytes_on[3] = {0, 0, 0};
};

// Throws SpecError naming the shortfall when the states fit nowhere.
Placement place_optimizer_states(const ChunkLayout& layout, const MemoryBudget& budget, const PlacementInput& in);

// The warm-up's placement, before any trace says what the GPU's margin is. PatrickStar starts
// every chunk in host memory and puts one on the GPU when the CPU has no room for it: the
// room-making target of a full CPU is the GPU (patrickstar/core/chunk_list.py, prepare_device
// and make_room: `new_device = cpu if target is cuda else self.device`), and before training
// starts the whole GPU is chunkable (memtracer.py, available_chunk_mem). So the states go to the
// CPU (after the param chunks, which start there), then NVMe, and the units neither can hold to
// the GPU, first units first (as the margin placement after the warm-up orders them), within
// `budget.gpu_bytes` (the GPU room the caller leaves for states). Throws SpecError when even
// that is too small.
Placement place_optimizer_states_for_warmup(const ChunkLayout& layout, const MemoryBudget& budget,
                                            const PlacementInput& in);

// Bytes of the optimizer-state chunks mirroring one param chunk (grads excluded).
int64_t state_unit_bytes(const ChunkLayout& layout, int param_chunk);

}  // namespace starfish

#pragma once
// Where a chunked plan's optimizer-state units live: the one home of the rule the chunk runtime
// applies (sim/chunk/placement.h maps it onto its chunks) and the analytic tier's memory and time
// model uses (sim/cost/memory.h place_chunked_states). A unit is what mirrors one param chunk a
// rank keeps: its master, momentum and variance chunks (PatrickStar's hybrid Adam steps each unit
// where it lives). Units go on the GPU whole, as far as the margin allows, else on the CPU, else on
// NVMe (stepped through the CPU). The margin is what the GPU has left after the peak non-model
// memory, the param (and fp32 grad) chunks the rank keeps and its ZeRO working set, so placing
// states there never forces param chunks off the GPU.
#include <cstdint>
#include <string>
#include <vector>

#include "sim/spec/plan.h"

namespace starfish {

struct MemoryBudget {
  int64_t gpu_bytes = 0;   // the GPU memory this rank may use: chunks + non-model
  int64_t cpu_bytes = 0;   // host memory for chunks
  int64_t nvme_bytes = 0;  // NVMe space for chunks
};

// One kept param chunk's optimizer states (`state_bytes`) and the chunks its forward and backward
// use (`param_bytes`: the param chunk, with its grad chunk in fp32 training).
struct StateUnit {
  int64_t state_bytes = 0;
  int64_t param_bytes = 0;
  bool operator==(const StateUnit&) const = default;
};

struct UnitPlacementInput {
  int64_t peak_non_model_bytes = 0;
  int64_t working_bytes = 0;  // extra GPU bytes for remote (ZeRO-gathered) chunks at the busiest moment
};

struct UnitPlacement {
  std::vector<Tier> tier;          // per unit, in the order given
  int64_t gpu_margin_bytes = 0;    // before placing states
  int64_t bytes_on[3] = {0, 0, 0};  // states per tier (gpu, cpu, nvme)
  // Param chunks (with fp32 grads) the GPU's chunk room cannot hold: they live on the host and
  // come to the GPU at each use.
  int64_t spilled_param_bytes = 0;
  // Host room kept for param chunks: the spilled ones, or those of units stepped off the GPU
  // (a CPU optimizer step brings its param chunk beside its states), whichever is more.
  int64_t cpu_param_bytes = 0;
  // False when some unit fits no tier: those stay on the CPU (counted in bytes_on, over its
  // budget); the runtime refuses such a plan (fits_nowhere_message), the estimate reports it.
  bool fits = true;
};

// The runtime's one-line refusal of a placement that does not fit.
std::string fits_nowhere_message(const std::vector<StateUnit>& units, const MemoryBudget& budget, const UnitPlacement& p,
                                 bool warmup);

// The placement after the warm-up iteration, when the trace gives the peak non-model memory and
// the working set.
UnitPlacement place_state_units(const std::vector<StateUnit>& units, const MemoryBudget& budget,
                                const UnitPlacementInput& in);

// The warm-up's placement, before any trace says what the GPU's margin is. PatrickStar starts
// every chunk in host memory and puts one on the GPU when the CPU has no room for it: the
// room-making target of a full CPU is the GPU (patrickstar/core/chunk_list.py, prepare_device
// and make_room: `new_device = cpu if target is cuda else self.device`), and before training
// starts the whole GPU is chunkable (memtracer.py, available_chunk_mem). So the states go to the
// CPU (after the param chunks, which start there), then NVMe, and the units neither can hold to
// the GPU, first units first (as the margin placement after the warm-up orders them), within
// `budget.gpu_bytes` (the GPU room the caller leaves for states); not `fits` when even that is
// too small.
UnitPlacement place_state_units_for_warmup(const std::vector<StateUnit>& units, const MemoryBudget& budget);

}  // namespace starfish

#pragma once
// The chunk runtime's side of the optimizer-state placement: the rule over units lives in
// sim/cost/chunk_placement.h (the analytic tier uses it too); here it is mapped onto the
// layout's param chunks, each unit being the master, momentum and variance chunks mirroring one
// param chunk the rank keeps.
#include <cstdint>
#include <vector>

#include "sim/cost/chunk_layout.h"
#include "sim/cost/chunk_placement.h"
#include "sim/spec/plan.h"

namespace starfish {

struct PlacementInput {
  int64_t peak_non_model_bytes = 0;
  int64_t working_bytes = 0;  // extra GPU bytes for remote (ZeRO-gathered) chunks at the busiest moment
  std::vector<int> units;     // param chunks whose states this rank keeps, in placement order
};

struct Placement {
  std::vector<Tier> tier;        // per param chunk (meaningful for the units only)
  int64_t gpu_margin_bytes = 0;  // before placing states
  int64_t bytes_on[3] = {0, 0, 0};
};

// place_state_units over `in.units`. Throws SpecError naming the shortfall when the states fit
// nowhere.
Placement place_optimizer_states(const ChunkLayout& layout, const MemoryBudget& budget, const PlacementInput& in);

// place_state_units_for_warmup over `in.units`.
Placement place_optimizer_states_for_warmup(const ChunkLayout& layout, const MemoryBudget& budget,
                                            const PlacementInput& in);

}  // namespace starfish

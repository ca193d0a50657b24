#include "sim/chunk/placement.h"

#include "sim/spec/error.h"

namespace starfish {
namespace {

Placement on_chunks(const ChunkLayout& l, const std::vector<int>& chunks, const UnitPlacement& u) {
  Placement p;
  p.tier.assign(l.param_chunks(), Tier::cpu);
  for (size_t i = 0; i < chunks.size(); ++i) p.tier[chunks[i]] = u.tier[i];
  p.gpu_margin_bytes = u.gpu_margin_bytes;
  for (int t = 0; t < 3; ++t) p.bytes_on[t] = u.bytes_on[t];
  return p;
}

}  // namespace

Placement place_optimizer_states(const ChunkLayout& l, const MemoryBudget& budget, const PlacementInput& in) {
  const std::vector<StateUnit> units = state_units(l, in.units);
  const UnitPlacement u = place_state_units(units, budget, {in.peak_non_model_bytes, in.working_bytes});
  if (!u.fits) throw SpecError(fits_nowhere_message(units, budget, u, false));
  return on_chunks(l, in.units, u);
}

Placement place_optimizer_states_for_warmup(const ChunkLayout& l, const MemoryBudget& budget, const PlacementInput& in) {
  const std::vector<StateUnit> units = state_units(l, in.units);
  const UnitPlacement u = place_state_units_for_warmup(units, budget);
  if (!u.fits) throw SpecError(fits_nowhere_message(units, budget, u, true));
  return on_chunks(l, in.units, u);
}

}  // namespace starfish

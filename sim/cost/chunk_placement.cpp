#include "sim/cost/chunk_placement.h"

#include <algorithm>
#include <string>


namespace starfish {
namespace {

int64_t total_state_bytes(const std::vector<StateUnit>& units) {
  int64_t b = 0;
  for (const StateUnit& u : units) b += u.state_bytes;
  return b;
}

void put(UnitPlacement& p, const std::vector<StateUnit>& units, size_t i, Tier t) {
  p.tier[i] = t;
  p.bytes_on[static_cast<int>(t)] += units[i].state_bytes;
}

// Places units `which` on the CPU (`cpu_room_bytes` left there after the param chunks), else on
// NVMe, in order, and returns those that fit neither. Units on NVMe are stepped through a CPU
// staging area of one unit, kept free when the CPU cannot hold every unit.
std::vector<size_t> place_off_gpu(const std::vector<StateUnit>& units, int64_t cpu_room_bytes, int64_t nvme_bytes,
                                  const std::vector<size_t>& which, UnitPlacement& p) {
  int64_t states = 0, staging = 0;
  for (size_t i : which) {
    states += units[i].state_bytes;
    staging = std::max(staging, units[i].state_bytes);
  }
  int64_t cpu_left = cpu_room_bytes;
  if (states > cpu_left) cpu_left -= staging;
  int64_t nvme_left = nvme_bytes;
  std::vector<size_t> nowhere;
  for (size_t i : which) {
    const int64_t b = units[i].state_bytes;
    if (b <= cpu_left) {
      put(p, units, i, Tier::cpu);
      cpu_left -= b;
    } else if (b <= nvme_left) {
      put(p, units, i, Tier::nvme);
      nvme_left -= b;
    } else {
      nowhere.push_back(i);
    }
  }
  return nowhere;
}

}  // namespace

UnitPlacement place_state_units(const std::vector<StateUnit>& units, const MemoryBudget& budget,
                                const UnitPlacementInput& in) {
  UnitPlacement p;
  p.tier.assign(units.size(), Tier::cpu);
  int64_t param_bytes = 0;
  for (const StateUnit& u : units) param_bytes += u.param_bytes;
  const int64_t gpu_for_chunks = budget.gpu_bytes - in.peak_non_model_bytes;
  int64_t gpu_left = std::max<int64_t>(0, gpu_for_chunks - param_bytes - in.working_bytes);
  p.gpu_margin_bytes = gpu_left;
  std::vector<size_t> rest;
  for (size_t i = 0; i < units.size(); ++i) {
    if (units[i].state_bytes <= gpu_left) {
      put(p, units, i, Tier::gpu);
      gpu_left -= units[i].state_bytes;
    } else {
      rest.push_back(i);
    }
  }
  // A unit stepped off the GPU leaves its param chunk on the CPU; params that never fit the GPU
  // spill there too. Reserve the larger of the two.
  const int64_t spill = std::max<int64_t>(0, param_bytes + in.working_bytes - std::max<int64_t>(0, gpu_for_chunks));
  p.spilled_param_bytes = std::min(param_bytes, spill);
  int64_t stepped = 0;
  for (size_t i : rest) stepped += units[i].param_bytes;
  p.cpu_param_bytes = std::max(spill, stepped);
  for (size_t i : place_off_gpu(units, budget.cpu_bytes - p.cpu_param_bytes, budget.nvme_bytes, rest, p)) {
    put(p, units, i, Tier::cpu);
    p.fits = false;
  }
  return p;
}

UnitPlacement place_state_units_for_warmup(const std::vector<StateUnit>& units, const MemoryBudget& budget) {
  UnitPlacement p;
  p.tier.assign(units.size(), Tier::cpu);
  p.gpu_margin_bytes = std::max<int64_t>(0, budget.gpu_bytes);
  const int64_t states = total_state_bytes(units);
  int64_t staging = 0, param_bytes = 0;
  for (const StateUnit& u : units) {
    staging = std::max(staging, u.state_bytes);
    param_bytes += u.param_bytes;
  }
  p.cpu_param_bytes = param_bytes;
  // What the CPU (after the param chunks, which start there) and NVMe hold; the rest, first
  // units first, goes to the GPU, where the margin placement after the warm-up puts states first.
  const int64_t cpu_room = budget.cpu_bytes - param_bytes;
  int64_t off_gpu = std::max<int64_t>(0, cpu_room) + budget.nvme_bytes;
  if (states > cpu_room && budget.nvme_bytes > 0) off_gpu -= staging;
  int64_t to_gpu = states - off_gpu;
  int64_t gpu_left = p.gpu_margin_bytes;
  std::vector<size_t> rest;
  auto to_the_gpu = [&](size_t i) {
    put(p, units, i, Tier::gpu);
    gpu_left -= units[i].state_bytes;
    to_gpu -= units[i].state_bytes;
  };
  for (size_t i = 0; i < units.size(); ++i) {
    if (to_gpu > 0 && units[i].state_bytes <= gpu_left)
      to_the_gpu(i);
    else
      rest.push_back(i);
  }
  for (size_t i : place_off_gpu(units, cpu_room, budget.nvme_bytes, rest, p)) {
    if (units[i].state_bytes <= gpu_left) {
      to_the_gpu(i);
    } else {
      put(p, units, i, Tier::cpu);
      p.fits = false;
    }
  }
  return p;
}

std::string fits_nowhere_message(const std::vector<StateUnit>& units, const MemoryBudget& budget, const UnitPlacement& p,
                                 bool warmup) {
  return "chunk placement: optimizer states need " + std::to_string(total_state_bytes(units)) + " bytes but the " +
         (warmup ? "GPU room of the warm-up" : "GPU margin") + " (" + std::to_string(p.gpu_margin_bytes) +
         " bytes), the CPU (" + std::to_string(budget.cpu_bytes) + " bytes, " + std::to_string(p.cpu_param_bytes) +
         " of them for param chunks) and NVMe (" + std::to_string(budget.nvme_bytes) + " bytes) cannot hold them";
}

}  // namespace starfish

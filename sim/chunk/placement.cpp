#include "sim/chunk/placement.h"

#include <algorithm>

#include "sim/spec/error.h"

namespace starfish {
namespace {

[[noreturn]] void fits_nowhere(int64_t states_bytes, int64_t gpu_bytes, const char* gpu_name, const MemoryBudget& budget,
                               int64_t cpu_for_params_bytes) {
  throw SpecError("chunk placement: optimizer states need " + std::to_string(states_bytes) + " bytes but the " +
                  gpu_name + " (" + std::to_string(gpu_bytes) + " bytes), the CPU (" +
                  std::to_string(budget.cpu_bytes) + " bytes, " + std::to_string(cpu_for_params_bytes) +
                  " of them for param chunks) and NVMe (" + std::to_string(budget.nvme_bytes) +
                  " bytes) cannot hold them");
}

// Places `units` on the CPU (`cpu_room_bytes` left there after the param chunks), else on NVMe,
// in order, and returns those that fit neither. Units on NVMe are stepped through a CPU staging
// area of one unit, kept free when the CPU cannot hold every unit.
std::vector<int> place_off_gpu(const ChunkLayout& l, int64_t cpu_room_bytes, int64_t nvme_bytes,
                               const std::vector<int>& units, Placement& p) {
  int64_t states = 0, staging = 0;
  for (int c : units) {
    states += state_unit_bytes(l, c);
    staging = std::max(staging, state_unit_bytes(l, c));
  }
  int64_t cpu_left = cpu_room_bytes;
  if (states > cpu_left) cpu_left -= staging;
  int64_t nvme_left = nvme_bytes;
  std::vector<int> nowhere;
  for (int c : units) {
    const int64_t b = state_unit_bytes(l, c);
    if (b <= cpu_left) {
      p.tier[c] = Tier::cpu;
      cpu_left -= b;
    } else if (b <= nvme_left) {
      p.tier[c] = Tier::nvme;
      nvme_left -= b;
    } else {
      nowhere.push_back(c);
      continue;
    }
    p.bytes_on[static_cast<int>(p.tier[c])] += b;
  }
  return nowhere;
}

int64_t total_state_bytes(const ChunkLayout& l, const std::vector<int>& units) {
  int64_t b = 0;
  for (int c : units) b += state_unit_bytes(l, c);
  return b;
}

}  // namespace

int64_t state_unit_bytes(const ChunkLayout& l, int c) {
  int64_t b = 0;
  for (ChunkKind k : l.mirror_kinds())
    if (k != ChunkKind::grad) b += l.chunk(l.mirror(c, k)).bytes();
  return b;
}

Placement place_optimizer_states(const ChunkLayout& l, const MemoryBudget& budget, const PlacementInput& in) {
  Placement p;
  p.tier.assign(l.param_chunks(), Tier::cpu);
  const int64_t gpu_for_chunks = budget.gpu_bytes - in.peak_non_model_bytes;
  int64_t gpu_left = std::max<int64_t>(0, gpu_for_chunks - in.param_bytes - in.working_bytes);
  p.gpu_margin_bytes = gpu_left;
  auto param_bytes = [&](int c) {
    return l.chunk(c).bytes() + (l.grad_chunk(c) != c ? l.chunk(l.grad_chunk(c)).bytes() : 0);
  };
  std::vector<int> rest;
  for (int c : in.units) {
    const int64_t b = state_unit_bytes(l, c);
    if (b <= gpu_left) {
      p.tier[c] = Tier::gpu;
      gpu_left -= b;
      p.bytes_on[0] += b;
    } else {
      rest.push_back(c);
    }
  }
  // A chunk stepped off the GPU leaves its param chunk on the CPU; params that never fit the
  // GPU spill there too. Reserve the larger of the two.
  const int64_t spill = std::max<int64_t>(0, in.param_bytes + in.working_bytes - std::max<int64_t>(0, gpu_for_chunks));
  int64_t stepped = 0;
  for (int c : rest) stepped += param_bytes(c);
  const int64_t for_params = std::max(spill, stepped);
  if (!place_off_gpu(l, budget.cpu_bytes - for_params, budget.nvme_bytes, rest, p).empty())
    fits_nowhere(total_state_bytes(l, in.units), p.gpu_margin_bytes, "GPU margin", budget, for_params);
  return p;
}

Placement place_optimizer_states_for_warmup(const ChunkLayout& l, const MemoryBudget& budget, const PlacementInput& in) {
  Placement p;
  p.tier.assign(l.param_chunks(), Tier::cpu);
  p.gpu_margin_bytes = std::max<int64_t>(0, budget.gpu_bytes);
  const int64_t states = total_state_bytes(l, in.units);
  int64_t staging = 0;
  for (int c : in.units) staging = std::max(staging, state_unit_bytes(l, c));
  // What the CPU (after the param chunks, which start there) and NVMe hold; the rest, first
  // units first, goes to the GPU, where the margin placement after the warm-up puts states first.
  const int64_t cpu_room = budget.cpu_bytes - in.param_bytes;
  int64_t off_gpu = std::max<int64_t>(0, cpu_room) + budget.nvme_bytes;
  if (states > cpu_room && budget.nvme_bytes > 0) off_gpu -= staging;
  int64_t to_gpu = states - off_gpu;
  int64_t gpu_left = p.gpu_margin_bytes;
  std::vector<int> rest;
  auto to_the_gpu = [&](int c) {
    const int64_t b = state_unit_bytes(l, c);
    p.tier[c] = Tier::gpu;
    gpu_left -= b;
    to_gpu -= b;
    p.bytes_on[0] += b;
  };
  for (int c : in.units) {
    if (to_gpu > 0 && state_unit_bytes(l, c) <= gpu_left)
      to_the_gpu(c);
    else
      rest.push_back(c);
  }
  for (int c : place_off_gpu(l, cpu_room, budget.nvme_bytes, rest, p)) {
    if (state_unit_bytes(l, c) > gpu_left)
      fits_nowhere(states, p.gpu_margin_bytes, "GPU room of the warm-up", budget, in.param_bytes);
    to_the_gpu(c);
  }
  return p;
}

}  // namespace starfish

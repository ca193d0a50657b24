#include "sim/chunk/placement.h"

#include <algorithm>

#include "sim/spec/error.h"

namespace starfish {

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
  int64_t stepped = 0, states = 0, staging = 0;
  for (int c : rest) {
    stepped += param_bytes(c);
    states += state_unit_bytes(l, c);
    staging = std::max(staging, state_unit_bytes(l, c));
  }
  int64_t cpu_left = budget.cpu_bytes - std::max(spill, stepped);
  // Units on NVMe are stepped through a CPU staging area of one unit.
  if (states > cpu_left) cpu_left -= staging;
  int64_t nvme_left = budget.nvme_bytes;
  for (int c : rest) {
    const int64_t b = state_unit_bytes(l, c);
    Tier t;
    if (b <= cpu_left) {
      t = Tier::cpu;
      cpu_left -= b;
    } else if (b <= nvme_left) {
      t = Tier::nvme;
      nvme_left -= b;
    } else {
      throw SpecError("chunk placement: optimizer states need " + std::to_string(states + p.bytes_on[0]) +
                      " bytes but the GPU margin (" + std::to_string(p.gpu_margin_bytes) + " bytes), the CPU (" +
                      std::to_string(budget.cpu_bytes) + " bytes, " + std::to_string(std::max(spill, stepped)) +
                      " of them for param chunks) and NVMe (" + std::to_string(budget.nvme_bytes) +
                      " bytes) cannot hold them");
    }
    p.tier[c] = t;
    p.bytes_on[static_cast<int>(t)] += b;
  }
  return p;
}

}  // namespace starfish

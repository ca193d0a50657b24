#pragma once
// Does a plan's memory fit the hardware? The one rule every tier and verb applies: `estimate`
// (its analytic peaks), `simulate` (its simulated peaks), the search's analytic tier and its
// simulated second tier, and so `maxsize` and `size-cluster` through the search. A plan fits
// when each tier's peak is at most that tier's usable capacity:
//   GPU:  the most loaded GPU's peak, against memory - reserved (CUDA context, NCCL, allocator:
//         the hwprofile's `gpu.reserved`);
//   CPU:  the node's host memory in use, against memory - reserved (the OS and the framework's
//         own process memory: `host.reserved`);
//   NVMe: the node's NVMe in use, against its capacity (0 without an NVMe).
// The tiers are checked in that order and the first that overflows is the verdict's reason.
#include <string>

#include "sim/cost/constraint.h"
#include "sim/cost/memory.h"
#include "sim/spec/hardware.h"

namespace starfish {

// Usable bytes: `gpu` per GPU, `cpu` and `nvme` per node.
TierBytes usable_capacity(const Cluster& cluster);
// The same, exact, as the chunk runtime's budgets take them: one GPU's, and the node's host memory.
int64_t usable_gpu_bytes(const NodeSpec& node);
int64_t usable_host_bytes(const NodeSpec& node);

struct MemoryVerdict {
  bool fits = true;
  // Over the GPU only by the caching allocator's reserve: the tensors themselves (and NCCL's
  // buffers) fit. When cudaMalloc fails, PyTorch's allocator frees its cached blocks and
  // retries (c10/cuda/CUDACachingAllocator.cpp: release_cached_blocks, counted in
  // memory_stats' num_alloc_retries), so such a plan may train -- slower, as every retry
  // synchronises the device -- or still fail on the fragments of live segments, which nothing
  // here bounds (BLOOM's DP32 TP2 PP6 ran out of memory 0.2% inside this band; MosaicML's 40 GB
  // runs trained in it). Said to the user; the plan still does not fit.
  bool within_allocator_reserve = false;
  Tier tier = Tier::gpu;        // when it does not fit: the first tier that overflows
  double needed_bytes = 0;      // that tier's peak
  double capacity_bytes = 0;    // and its usable capacity
  // The tier as a constraint (Constraint::gpu_memory, cpu_memory or nvme): how the search and
  // maxsize name a binding tier.
  Constraint constraint() const { return memory_constraint(tier); }
  // "GPU memory: needs 172 GiB of 78.0 GiB per GPU" ("" when it fits), and what
  // within_allocator_reserve means when it is set.
  std::string text() const;
  static const char* allocator_reserve_note();
};

// `peak`: `gpu` per GPU (the most loaded), `cpu` and `nvme` per node, as usable_capacity.
// `gpu_tensor_bytes`: the GPU peak without the allocator's reserve (< 0: not known).
// Inline: the search's analytic tier calls it for every plan it evaluates.
inline MemoryVerdict check_memory(const TierBytes& peak, const TierBytes& capacity, double gpu_tensor_bytes = -1) {
  MemoryVerdict v;
  for (Tier t : {Tier::gpu, Tier::cpu, Tier::nvme}) {
    if (peak.at(t) > capacity.at(t)) {
      v.fits = false;
      v.tier = t;
      v.needed_bytes = peak.at(t);
      v.capacity_bytes = capacity.at(t);
      v.within_allocator_reserve = t == Tier::gpu && gpu_tensor_bytes >= 0 && gpu_tensor_bytes <= capacity.gpu &&
                                        peak.cpu <= capacity.cpu && peak.nvme <= capacity.nvme;
      return v;
    }
  }
  return v;
}

}  // namespace starfish

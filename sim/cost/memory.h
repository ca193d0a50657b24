#pragma once
// Model-state memory (params, grads, optimizer states) per GPU and where it lives, following
// Rajbhandari et al. 2020 (ZeRO) for mixed-precision Adam: 2 + 2 + 12 = 16 bytes per parameter,
// stage 1 shards the 12 optimizer bytes over DP, stage 2 also the grads, stage 3 also the
// params. With the chunk runtime (PatrickStar), grads reuse the fp16 param chunks: 14 bytes.
#include <cstdint>

#include "sim/spec/plan.h"
#include "sim/spec/training.h"

namespace starfish {

// Bytes per parameter of each model state for a precision and optimizer.
struct StateBytes {
  double params = 0;     // the working copy used by forward/backward
  double grads = 0;
  double optimizer = 0;  // fp32 master (mixed precision) + optimizer moments
  double total() const { return params + grads + optimizer; }
};
StateBytes state_bytes_per_param(const Training& training, bool chunked);

struct TierBytes {
  double gpu = 0, cpu = 0, nvme = 0;
  double& at(Tier t) { return t == Tier::gpu ? gpu : t == Tier::cpu ? cpu : nvme; }
  double at(Tier t) const { return t == Tier::gpu ? gpu : t == Tier::cpu ? cpu : nvme; }
};

struct ModelStates {
  TierBytes params, grads, optimizer;
  double gpu_working_bytes = 0;  // GPU space for offloaded/sharded params in use (see .cpp)
  // A chunked plan's placement, as shares of its states (place_chunked_states): what the time
  // model charges where it runs.
  struct ChunkShares {
    double optimizer_off_gpu = 0;  // optimizer states stepped on the host (CPU Adam)
    double optimizer_nvme = 0;     // of them, those kept on NVMe
    double params_spilled = 0;     // param chunks the GPU's chunk room cannot keep: fetched at each use
  } chunk_shares;
  double total_gpu() const { return params.gpu + grads.gpu + optimizer.gpu + gpu_working_bytes; }
};

struct ChunkFootprint;

// Model states of one GPU holding `shard_params` parameters (its TP/PP shard), with DP degree
// `dp`; `layer_params` is one layer's share on this GPU (for working buffers of offloaded or
// ZeRO-3 params). A chunked plan's states are its chunk layout's (`chunks`, required then:
// plan_chunk_footprint): the chunks each rank keeps, padding and ZeRO group capacity included,
// and room for the chunks of its busiest moment.
ModelStates model_states(const Training& training, const Plan& plan, int dp, double shard_params,
                         double layer_params, const ChunkFootprint* chunks);

// Where a chunked plan's kept states live: the chunk runtime decides, not the plan's offload
// tiers, by its one rule (sim/cost/chunk_placement.h place_state_units, over the footprint's
// units). Its param chunks take the GPU room left beside `gpu_other_bytes` (activations and
// buffers) and the ZeRO working set; whole optimizer-state units what is left of it (the
// margin), then the host -- beside room for the param chunks that spill there or come with a
// unit stepped there -- then NVMe; what none holds stays on the host (the tier then reported
// over). `capacity` is one GPU's share of each tier (the node's host and NVMe divided by its
// GPUs), the GPU's less NCCL's buffers. The runtime fills the GPU's margin with whole units by
// its traced non-model peak, which `gpu_other_bytes` bounds from above: so the GPU figure counts
// the margin as filled (never below the runtime's), the host and NVMe figures and the shares the
// units the rule places with the estimate's margin (never below the runtime's either).
ModelStates place_chunked_states(const ModelStates& states, const ChunkFootprint& chunks, double gpu_other_bytes,
                                 const TierBytes& capacity);

}  // namespace starfish

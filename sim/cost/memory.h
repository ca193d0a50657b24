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
// tiers (sim/chunk/placement.h, place_optimizer_states). Its param chunks take the GPU room
// left beside `gpu_other_bytes` (activations and buffers) and the busiest moment's chunks, the
// optimizer states what is left of it (the margin), then the host -- less room for one
// moment's chunks: evicted ZeRO copies go there, and a CPU optimizer step brings its param chunk
// beside its states -- then NVMe; what none holds
// stays on the host (the tier then reported over). `capacity` is one GPU's share of each tier
// (the node's host and NVMe divided by its GPUs).
ModelStates place_chunked_states(const ModelStates& states, const ChunkFootprint& chunks, double gpu_other_bytes,
                                 const TierBytes& capacity);

}  // namespace starfish

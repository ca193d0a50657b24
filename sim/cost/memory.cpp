#include "sim/cost/memory.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "sim/cost/chunk_layout.h"
#include "sim/cost/chunk_placement.h"
#include "sim/cost/framework.h"
#include "sim/spec/dtype.h"

namespace starfish {

StateBytes state_bytes_per_param(const Training& t, bool chunked) {
  StateBytes b;
  const double p = static_cast<double>(bytes_of(t.dtype));
  b.params = p;
  b.grads = p;
  const bool mixed = t.mixed_precision();
  const double master = mixed ? 4 : 0;  // fp32 copy of the params the optimizer updates
  switch (t.optimizer) {
    case Optimizer::adam:
    case Optimizer::adamw: b.optimizer = master + 8; break;  // fp32 momentum and variance
    case Optimizer::sgd: b.optimizer = master + 4; break;    // fp32 momentum
  }
  // PatrickStar: grads are written into the low-precision param chunks once the param is no
  // longer needed by backward; with fp32 training there is no spare copy to reuse.
  if (chunked && mixed) b.grads = 0;
  return b;
}

namespace {

// The chunk runtime's states on one rank, before placement (place_chunked_states): each kept
// param chunk with its grad (fp32 training) and optimizer mirrors, in the plan's tiers, and the
// GPU room for its ZeRO working set.
ModelStates chunked_model_states(const Training& t, const Plan& plan, const ChunkFootprint& chunks) {
  const StateBytes b = state_bytes_per_param(t, true);
  const double kept = static_cast<double>(chunks.kept_param_elements);
  ModelStates s;
  s.params.at(plan.offload.params) = kept * b.params;
  s.grads.at(plan.offload.params) = kept * b.grads;
  s.optimizer.at(plan.offload.optimizer) = kept * b.optimizer;
  s.gpu_working_bytes = static_cast<double>(chunks.working_bytes);
  // A CPU embedding's fp32 param, grad and moments, on the host (sim/cost/cpu_embedding.h).
  const double embedding = static_cast<double>(chunks.cpu_embedding_elements);
  s.params.cpu += 4 * embedding;
  s.grads.cpu += 4 * embedding;
  s.optimizer.cpu += static_cast<double>(chunks.cpu_embedding_host_bytes) - 8 * embedding;
  return s;
}

}  // namespace

ModelStates model_states(const Training& t, const Plan& plan, int dp, double n, double layer_n, const ChunkFootprint* chunks) {
  if (plan.chunked()) {
    if (!chunks) throw std::logic_error("model_states: a chunked plan needs its chunk footprint");
    return chunked_model_states(t, plan, *chunks);
  }
  StateBytes b = state_bytes_per_param(t, false);
  // The framework decides the gradient buffers' precision (fp32 main grads for bf16).
  b.grads = grad_buffers(t, plan).total();
  const double shard_opt = plan.zero_stage >= 1 ? dp : 1;
  const double shard_grad = plan.zero_stage >= 2 ? dp : 1;
  const double shard_param = plan.zero_stage >= 3 ? dp : 1;
  ModelStates s;
  s.params.at(plan.offload.params) = n * b.params / shard_param;
  s.grads.at(plan.offload.grads) = n * b.grads / shard_grad;
  s.optimizer.at(plan.offload.optimizer) = n * b.optimizer / shard_opt;
  if (is_zero_offload(plan)) {
    // DeepSpeed's ZeRO-Offload: its own host buffers (framework.h), fp32 gradients among them.
    const int64_t micro_batches = t.global_batch / std::max<int64_t>(1, int64_t{plan.micro_batch} * dp);
    const HostOffloadBytes host = zero_offload_host_bytes(t, n / shard_opt, micro_batches);
    s.grads = TierBytes{};
    s.grads.cpu = host.grads;
    s.optimizer.cpu = host.optimizer;
  }
  // torchtitan's pipelined FSDP: the stage's whole gradient, unsharded in the reduce dtype, on the
  // GPU until its last micro-batch's reduction (grads_accumulate_unsharded).
  const int64_t micro_batches = t.global_batch / std::max<int64_t>(1, int64_t{plan.micro_batch} * plan.dp_cp());
  if (grads_accumulate_unsharded(plan, micro_batches)) s.grads.gpu += n * grad_buffers(t, plan).reduce_bytes;
  // Params that are not resident in full on the GPU (offloaded, or ZeRO-3 sharded) still need
  // room there while a layer computes: two layers' worth (one in use, one being fetched).
  const bool params_resident = plan.offload.params == Tier::gpu && plan.zero_stage < 3;
  if (!params_resident) s.gpu_working_bytes = 2 * layer_n * (b.params + b.grads);
  return s;
}

ModelStates place_chunked_states(const ModelStates& in, const ChunkFootprint& chunks, double gpu_other_bytes,
                                 const TierBytes& capacity) {
  // A CPU embedding stays on the host, outside the chunks the runtime places.
  const double embedding = static_cast<double>(chunks.cpu_embedding_elements);
  const double embedding_host = static_cast<double>(chunks.cpu_embedding_host_bytes);
  // The budget the runtime gets (sim/chunk/runtime_config.cpp chunk_plan), and its placement.
  const MemoryBudget budget{static_cast<int64_t>(capacity.gpu), static_cast<int64_t>(std::max(0.0, capacity.cpu - embedding_host)),
                            static_cast<int64_t>(capacity.nvme)};
  const UnitPlacement u =
      place_state_units(chunks.units, budget, {static_cast<int64_t>(std::ceil(gpu_other_bytes)), chunks.working_bytes});
  ModelStates out;
  // Param chunks (with fp32 grads): on the GPU but what spills; the host keeps room for the
  // spilled ones or those of units stepped there, whichever is more.
  auto total = [](const TierBytes& t) { return t.gpu + t.cpu + t.nvme; };
  const double params = total(in.params) - 4 * embedding, grads = total(in.grads) - 4 * embedding;
  const double param_share = params + grads > 0 ? params / (params + grads) : 1;
  const double on_gpu = params + grads - static_cast<double>(u.spilled_param_bytes);
  out.params.gpu = on_gpu * param_share;
  out.grads.gpu = on_gpu * (1 - param_share);
  out.params.cpu = static_cast<double>(u.cpu_param_bytes) * param_share + 4 * embedding;
  out.grads.cpu = static_cast<double>(u.cpu_param_bytes) * (1 - param_share) + 4 * embedding;
  out.chunk_shares.params_spilled = params + grads > 0 ? static_cast<double>(u.spilled_param_bytes) / (params + grads) : 0;
  // The ZeRO working set beside them; and whatever the spill leaves, the GPU still holds each
  // step's chunks at once.
  out.gpu_working_bytes = std::max(static_cast<double>(chunks.working_bytes), static_cast<double>(chunks.step_bytes) - on_gpu);
  double states = 0;
  for (const StateUnit& unit : chunks.units) states += static_cast<double>(unit.state_bytes);
  out.optimizer.gpu = std::min(states, static_cast<double>(u.gpu_margin_bytes));
  out.optimizer.cpu = static_cast<double>(u.bytes_on[1]) + embedding_host - 8 * embedding;
  out.optimizer.nvme = static_cast<double>(u.bytes_on[2]);
  if (states > 0) {
    out.chunk_shares.optimizer_off_gpu = 1 - static_cast<double>(u.bytes_on[0]) / states;
    out.chunk_shares.optimizer_nvme = static_cast<double>(u.bytes_on[2]) / states;
  }
  return out;
}

}  // namespace starfish

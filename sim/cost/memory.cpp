#include "sim/cost/memory.h"

#include <algorithm>
#include <stdexcept>

#include "sim/cost/chunk_layout.h"
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

// The chunk runtime's states on one rank: each kept param chunk with its grad (fp32 training)
// and optimizer mirrors, in the plan's tiers; the GPU keeps room for one moment's chunks (a
// gathered ZeRO group, or the two largest) unless every chunk is resident there unsharded.
ModelStates chunked_model_states(const Training& t, const Plan& plan, const ChunkFootprint& chunks) {
  const StateBytes b = state_bytes_per_param(t, true);
  const double kept = static_cast<double>(chunks.kept_param_elements);
  ModelStates s;
  s.params.at(plan.offload.params) = kept * b.params;
  s.grads.at(plan.offload.params) = kept * b.grads;
  s.optimizer.at(plan.offload.optimizer) = kept * b.optimizer;
  const bool all_resident = plan.offload.params == Tier::gpu && (plan.zero_stage == 0 || plan.dp == 1);
  if (!all_resident) s.gpu_working_bytes = static_cast<double>(chunks.moment_bytes);
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
  // Params that are not resident in full on the GPU (offloaded, or ZeRO-3 sharded) still need
  // room there while a layer computes: two layers' worth (one in use, one being fetched).
  const bool params_resident = plan.offload.params == Tier::gpu && plan.zero_stage < 3;
  if (!params_resident) s.gpu_working_bytes = 2 * layer_n * (b.params + b.grads);
  return s;
}

ModelStates place_chunked_states(const ModelStates& in, const ChunkFootprint& chunks, double gpu_other_bytes,
                                 const TierBytes& capacity) {
  ModelStates out;
  out.gpu_working_bytes = in.gpu_working_bytes;
  // A CPU embedding stays on the host, outside the chunks the runtime places.
  const double embedding = static_cast<double>(chunks.cpu_embedding_elements);
  const double embedding_host = static_cast<double>(chunks.cpu_embedding_host_bytes);
  double room[3] = {std::max(0.0, capacity.gpu - gpu_other_bytes - in.gpu_working_bytes),
                    std::max(0.0, capacity.cpu - static_cast<double>(chunks.moment_bytes) - embedding_host), capacity.nvme};
  const Tier order[3] = {Tier::gpu, Tier::cpu, Tier::nvme};
  auto place = [&](double bytes, TierBytes& where) {
    for (int i = 0; i < 3 && bytes > 0; ++i) {
      const double put = std::min(bytes, room[i]);
      where.at(order[i]) += put;
      room[i] -= put;
      bytes -= put;
    }
    where.cpu += bytes;  // over every tier: reported on the host
  };
  auto total = [](const TierBytes& t) { return t.gpu + t.cpu + t.nvme; };
  place(total(in.params) - 4 * embedding, out.params);
  place(total(in.grads) - 4 * embedding, out.grads);
  place(total(in.optimizer) - (embedding_host - 8 * embedding), out.optimizer);
  out.params.cpu += 4 * embedding;
  out.grads.cpu += 4 * embedding;
  out.optimizer.cpu += embedding_host - 8 * embedding;
  return out;
}

}  // namespace starfish

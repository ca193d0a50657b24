#include "sim/cost/memory.h"

#include <algorithm>

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

ModelStates model_states(const Training& t, const Plan& plan, int dp, double n, double layer_n, double chunk_bytes) {
  StateBytes b = state_bytes_per_param(t, plan.chunked());
  // The framework decides the gradient buffers' precision (fp32 main grads for bf16).
  if (!plan.chunked()) b.grads = grad_buffers(t, plan).total();
  const double shard_opt = plan.zero_stage >= 1 ? dp : 1;
  const double shard_grad = plan.zero_stage >= 2 ? dp : 1;
  const double shard_param = plan.zero_stage >= 3 ? dp : 1;
  ModelStates s;
  s.params.at(plan.offload.params) = n * b.params / shard_param;
  s.grads.at(plan.chunked() ? plan.offload.params : plan.offload.grads) = n * b.grads / shard_grad;
  s.optimizer.at(plan.offload.optimizer) = n * b.optimizer / shard_opt;
  // Params that are not resident in full on the GPU (offloaded, or ZeRO-3 sharded) still need
  // room there while a layer computes: two layers' worth (one in use, one being fetched), or two
  // chunks with the chunk runtime.
  const bool params_resident = plan.offload.params == Tier::gpu && plan.zero_stage < 3;
  if (!params_resident) {
    const double layer_bytes = layer_n * (b.params + b.grads);
    s.gpu_working_bytes = plan.chunked() ? std::max(2 * chunk_bytes, layer_bytes) : 2 * layer_bytes;
  }
  return s;
}

}  // namespace starfish

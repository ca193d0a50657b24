#pragma once
// The host time an eager framework spends dispatching the ops of a transformer layer, on a host
// whose "GPU" is the CPU itself (hwprofiles/cpu-host.yaml): there the dispatching thread also
// does the arithmetic, so dispatch adds to every op's time instead of hiding behind a GPU's
// queue. Zero unless the hwprofile's host gives op_dispatch / backward_op_dispatch.
#include "sim/spec/hardware.h"
#include "sim/spec/plan.h"

namespace starfish {

struct LayerDispatch {
  double forward_s = 0;
  double backward_s = 0;
  double recompute_s = 0;  // the forward run again in backward (recompute: full)
  double output_s = 0;     // the output layer (final norm, logits, cross-entropy), forward + backward
};

// `bmm_matrices`: the matrices each of the layer's batched attention GEMMs multiplies (micro-batch
// x heads / tp, unfused attention; 1 when none), which LibTorch's CPU bmm dispatches one by one.
LayerDispatch layer_dispatch(const HostSpec& host, Recompute recompute, double bmm_matrices = 1);

}  // namespace starfish

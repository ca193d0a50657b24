#include "sim/cost/dispatch.h"

namespace starfish {
namespace {

// Ops one GPT layer dispatches, counted with LibTorch 1.13's RecordFunction hook (the profiler's)
// over the executor's layer (exec/gpt_model.cpp: LayerNorm, QKV, unfused causal attention,
// output projection, residual, LayerNorm, GELU MLP, residual) by exec/bench/op_dispatch:
// every ATen op the dispatcher runs (nested ones included: linear -> t + addmm), and in backward
// every autograd node with the ops it runs. The counts do not depend on the layer's size.
constexpr double kLayerForwardOps = 157;
constexpr double kLayerBackwardOps = 379;
// The output layer: final LayerNorm, logits (linear), fp32 cast, cross-entropy.
constexpr double kOutputForwardOps = 30;
constexpr double kOutputBackwardOps = 67;

}  // namespace

LayerDispatch layer_dispatch(const HostSpec& host, Recompute recompute) {
  LayerDispatch d;
  d.forward_s = kLayerForwardOps * host.op_dispatch_s;
  d.backward_s = kLayerBackwardOps * host.backward_op_dispatch_s;
  // Selective recompute redoes a few attention ops; only the executor's full recompute is counted.
  if (recompute == Recompute::full) d.recompute_s = d.forward_s;
  d.output_s = kOutputForwardOps * host.op_dispatch_s + kOutputBackwardOps * host.backward_op_dispatch_s;
  return d;
}

}  // namespace starfish

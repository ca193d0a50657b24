#include "sim/cost/dispatch.h"

#include <algorithm>

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
// LibTorch's CPU bmm without MKL, as Debian builds it (aten/src/ATen/native/LinearAlgebra.cpp,
// bmm_out_or_baddbmm_), multiplies its batch one matrix at a time, selecting the matrix of the
// result and of both operands (three select ops, each an as_strided underneath) and resolving
// the three's conjugation for the GEMM (resolve_conj): nine dispatches a matrix
// (exec/bench/op_profile counts 96 select, 118 as_strided and 108 resolve_conj in a tiny-gpt
// layer's forward, 2 bmm of 16 matrices). The counts above hold one matrix per bmm (measured at
// one head and one sequence); each further matrix adds nine per bmm: two bmm forward, four
// backward (each one's two gradient products), all plain ATen calls at the forward's per-op cost.
constexpr double kOpsPerBmmMatrix = 9;
constexpr double kForwardBmms = 2;
constexpr double kBackwardBmms = 4;

}  // namespace

LayerDispatch layer_dispatch(const HostSpec& host, Recompute recompute, double bmm_matrices) {
  LayerDispatch d;
  const double per_bmm_s = kOpsPerBmmMatrix * std::max(0.0, bmm_matrices - 1) * host.op_dispatch_s;
  d.forward_s = kLayerForwardOps * host.op_dispatch_s + kForwardBmms * per_bmm_s;
  d.backward_s = kLayerBackwardOps * host.backward_op_dispatch_s + kBackwardBmms * per_bmm_s;
  // Selective recompute redoes a few attention ops; only the executor's full recompute is counted.
  if (recompute == Recompute::full) d.recompute_s = d.forward_s;
  d.output_s = kOutputForwardOps * host.op_dispatch_s + kOutputBackwardOps * host.backward_op_dispatch_s;
  return d;
}

}  // namespace starfish

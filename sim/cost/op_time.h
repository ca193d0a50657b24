#pragma once
// Time of operations on one GPU: roofline x efficiency. GEMMs run at peak(dtype) times the
// hwprofile's efficiency at their FLOP count; element-wise and normalisation kernels are bound
// by HBM bandwidth times its achieved fraction.
#include <cstdint>
#include <vector>

#include "sim/cost/framework.h"
#include "sim/cost/low_precision.h"
#include "sim/spec/hardware.h"
#include "sim/spec/model.h"
#include "sim/spec/plan.h"
#include "sim/spec/training.h"

namespace starfish {

double matmul_time_s(const GpuSpec& gpu, DType dtype, double flop);
double memory_bound_time_s(const GpuSpec& gpu, double bytes);
// A non-GEMM kernel moving `bytes` over `elements`: its memory time, or its arithmetic where the
// device's profile measures that longer per element (gpu.elementwise: a CPU core).
double elementwise_time_s(const GpuSpec& gpu, double bytes, double elements, double per_element_s);

// One operation of a transformer layer on one GPU of a TP group, for one micro-batch: its
// forward and backward time, each from the kernels the framework runs for it (GEMMs at their
// own size, memory-bound kernels at HBM speed). TP communication is costed apart (collectives).
struct LayerOp {
  const char* name = "";
  double forward_s = 0;
  double backward_s = 0;
  bool attention_core = false;  // what selective recomputation redoes by default (core_attn)
  bool gemm = false;
  uint8_t module = 0;  // the recompute_module it belongs to, beyond core_attn (plan.h)
};

struct LayerShape {
  int64_t micro_batch = 1;
  int tp = 1;
  bool sequence_parallel = false;
  Attention attention = Attention::unfused;  // resolved (never framework_default)
  const Plan* moe = nullptr;  // an MoE layer of this plan: its MLP is the experts' (sim/cost/moe.h)
  // What the linear layers' GEMMs run in (sim/cost/low_precision.h: gemm_quantization).
  GemmQuantization quantization = GemmQuantization::none;
  // Context parallel ranks: this rank computes seq_len / cp tokens of each sequence, and its
  // attention runs as cp blocks of ring attention (sim/cost/context_parallel.h).
  int cp = 1;
  bool head_copies = false;   // unfused attention copies its heads' layout (FrameworkTraits)
  LinearBias bias = LinearBias::in_gemm;  // the framework's bias kernels (FrameworkTraits), for biased models
  bool windowed = false;  // a sliding-window layer of the model (Model::windowed_layer)
  // Selective recomputation redoes a fused attention kernel's forward (FrameworkTraits).
  bool selective_redoes_fused_attention = true;
  // A norm's backward reads x and dy a second time for its weight gradients (FrameworkTraits).
  bool norm_backward_rereads = false;
  // Under selective recomputation, the modules it redoes (Plan::recompute_modules).
  uint8_t recompute_modules = recompute_module::core_attn;
};
// The shape of a plan's dense layer, or of its MoE layer (`moe_layer`): the one place a plan's
// fields become a LayerShape (attention kernel resolved through the framework).
LayerShape plan_layer_shape(const Plan& plan, bool moe_layer = false);

// The ops of one layer, in forward order: norm, QKV GEMM, attention core, output projection,
// residual, norm, MLP-in GEMM, activation, MLP-out GEMM, residual.
std::vector<LayerOp> layer_ops(const GpuSpec& gpu, DType dtype, const Model& model, const LayerShape& shape);

// Forward and backward time of one transformer layer: the sum of layer_ops, and the work
// recomputation redoes in backward (full: the whole forward; selective: the attention core).
struct LayerTime {
  double forward_s = 0;
  double backward_s = 0;
  double recompute_s = 0;      // extra forward work redone in backward
  double gemm_forward_s = 0;   // part of forward_s spent in GEMMs
  double elementwise_forward_s = 0;
  double core_forward_s = 0;   // attention's core (scores, softmax, context): part of forward_s
  double core_backward_s = 0;  // and of backward_s
  double total_s() const { return forward_s + backward_s + recompute_s; }  // the layer's whole work
};
LayerTime layer_time(const GpuSpec& gpu, DType dtype, const Model& model, int64_t micro_batch, int tp,
                     bool sequence_parallel, Recompute recompute, Attention attention = Attention::unfused);
LayerTime layer_time(const GpuSpec& gpu, DType dtype, const Model& model, const LayerShape& shape, Recompute recompute);
// `a` less `b`, field by field: a windowed layer is the layer less its window_saving.
LayerTime operator-(const LayerTime& a, const LayerTime& b);
LayerTime operator+(const LayerTime& a, const LayerTime& b);  // a bf16 layer is the fp8 layer plus its bf16_extra

// Output layer (logits GEMM, softmax cross-entropy moving `loss_bytes_per_logit` HBM bytes per
// logit: framework.h's loss_kernel), forward and backward.
// With context parallelism (`cp`) each rank has seq_len / cp of each sequence's tokens.
double output_layer_time_s(const GpuSpec& gpu, DType dtype, const Model& model, int64_t micro_batch, int tp,
                           double loss_bytes_per_logit, int cp = 1);

// The trainer's training-metric passes after one micro-batch's backward (framework.h,
// train_metric_kernel): `bytes_per_logit` over the micro-batch's logits of this rank, at HBM speed.
double train_metric_time_s(const GpuSpec& gpu, const Model& model, int64_t micro_batch, int tp, double bytes_per_logit);

// One micro-batch's dense layer and output layer as a plan runs them on a node: the kernels'
// times above with the framework's attention and loss kernels (framework.h), plus the host's
// per-op dispatch (dispatch.h; zero on GPU hosts). The one home both tiers take them from.
// The fraction of causal FlashAttention's work a sliding window of `window_tokens` keys leaves
// over a sequence of `seq_len`: the kernels (FlashAttention-2's local attention, cuDNN's sliding
// window) skip whole key tiles outside the window but compute every tile it touches, so a query
// tile of 128 rows costs ceil-many 128-wide key tiles -- 2 for a 128-token window, not 1. 1 when
// the window covers the sequence.
double window_tile_fraction(int64_t seq_len, int64_t window_tokens);

// A layer's times per micro-batch as the plan runs it: the dense layer (`layer`), what a
// sliding-window layer saves against it in its attention core (`window_saving`, zero unless the
// model has a window; an MoE layer's attention is the dense one's, so it saves the same), and the
// output layer.
struct PlanLayerTimes {
  LayerTime layer;
  LayerTime window_saving;
  // A layer kept in the training dtype under fp8 (Plan::bf16_layer), over the fp8 layer: dense,
  // and MoE (its experts' GEMMs too); zero unless the plan keeps such layers.
  LayerTime bf16_extra;
  LayerTime moe_bf16_extra;
  double output_s = 0;
  double metric_s = 0;  // the training metrics after the backward (train_metric_time_s), 0 without
};
PlanLayerTimes plan_layer_times(const NodeSpec& node, DType dtype, const Model& model, const Plan& plan);

// The output layer's time `output_s` split into its passes: the forward is a third (the logits
// GEMM), the backward two thirds (the input- and weight-gradient GEMMs); the loss kernel's share
// follows the same split. Every tier splits it here.
inline double output_forward_s(double output_s) { return output_s / 3; }
inline double output_backward_s(double output_s) { return 2 * output_s / 3; }


// Gradient accumulation over micro-batches: from the second micro-batch on, every weight
// gradient the backward pass produces is added into the gradient buffer (PyTorch's
// AccumulateGrad, Megatron's and DeepSpeed's grad buffers): read the buffer, read the new
// gradient, write the buffer, 3 x `grad_bytes` per parameter at HBM speed. Frameworks that fuse
// the addition into the weight-gradient GEMM (beta = 1) avoid it; the eager ones measured in
// ../shared/data do not.
double grad_accumulate_time_s(const GpuSpec& gpu, double params, int64_t grad_bytes);

// The optimizer step of `params` parameters on one GPU: memory bound, moving
// optimizer_step_bytes_per_param (framework.h) per parameter. Every tier costs it here.
double gpu_optimizer_step_time_s(const GpuSpec& gpu, const Training& training, const Plan& plan, double params);

// CPU Adam over `params` parameters (all the host's GPUs' shares together: they step at once and
// share the host's measured throughput, hwprofile host.cpu_adam_params_per_s).
double cpu_adam_time_s(const HostSpec& host, double params);

}  // namespace starfish

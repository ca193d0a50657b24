#pragma once
// Time of operations on one GPU: roofline x efficiency. GEMMs run at peak(dtype) times the
// hwprofile's efficiency at their FLOP count; element-wise and normalisation kernels are bound
// by HBM bandwidth times its achieved fraction.
#include <cstdint>

#include "sim/spec/hardware.h"
#include "sim/spec/model.h"
#include "sim/spec/plan.h"

namespace starfish {

double matmul_time_s(const GpuSpec& gpu, DType dtype, double flop);
double memory_bound_time_s(const GpuSpec& gpu, double bytes);

// Forward and backward time of one transformer layer on one GPU of a TP group of `tp`, for one
// micro-batch; each GEMM is timed at its own size (divided by tp), element-wise traffic at HBM
// speed. Backward GEMMs are two GEMMs of the forward's size each (input and weight grads).
struct LayerTime {
  double forward_s = 0;
  double backward_s = 0;
  double recompute_s = 0;      // extra forward work redone in backward
  double gemm_forward_s = 0;   // part of forward_s spent in GEMMs
  double elementwise_forward_s = 0;
};
LayerTime layer_time(const GpuSpec& gpu, DType dtype, const Model& model, int64_t micro_batch, int tp,
                     bool sequence_parallel, Recompute recompute);

// Output layer (final norm, logits GEMM, softmax cross-entropy), forward and backward.
double output_layer_time_s(const GpuSpec& gpu, DType dtype, const Model& model, int64_t micro_batch, int tp);

// Gradient accumulation over micro-batches: from the second micro-batch on, every weight
// gradient the backward pass produces is added into the gradient buffer (PyTorch's
// AccumulateGrad, Megatron's and DeepSpeed's grad buffers): read the buffer, read the new
// gradient, write the buffer, 3 x `grad_bytes` per parameter at HBM speed. Frameworks that fuse
// the addition into the weight-gradient GEMM (beta = 1) avoid it; the eager ones measured in
// ../shared/data do not.
double grad_accumulate_time_s(const GpuSpec& gpu, double params, int64_t grad_bytes);

// Bytes of element-wise HBM traffic of one layer's forward on one GPU (reads + writes).
double layer_elementwise_bytes(const Model& model, int64_t micro_batch, int tp, bool sequence_parallel,
                               int64_t act_bytes);

}  // namespace starfish

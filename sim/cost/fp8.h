#pragma once
// FP8 GEMMs as TransformerEngine (TE) runs them under Megatron-core's TE layer spec (plan.fp8):
// the linear layers (QKV, attention output, MLP in/out, grouped experts, shared experts) compute
// their forward GEMM and both backward GEMMs (input and weight gradient) on fp8 inputs at the
// GPU's fp8 peak; params, gradients, the optimizer, attention's core, norms, the router and the
// LM head (Megatron-core's output_layer is a plain ColumnParallelLinear) stay in the training
// dtype. What fp8 adds, each with its source:
//  - casts: TE quantizes each GEMM input and each output gradient, writing the fp8 data and, on
//    Hopper, its transpose for the other GEMM that needs it (transformer_engine/pytorch/module/
//    linear.py: the input cast with columnwise usage for wgrad; grad_output cast-transpose in
//    backward, tex.fp8_cast_transpose_fused);
//  - the fp8 weight copies: cast once per iteration, on the first micro-batch, and cached with
//    their transpose until the next (module/base.py get_weight_workspace, is_first_microbatch:
//    Megatron passes it), so 2 bytes per GEMM weight stay on the GPU through the iteration;
//  - scaling state: per fp8 tensor (input, weight, output gradient of each GEMM) a scale, its
//    inverse and an amax history of --fp8-amax-history-len entries (Megatron's default 1), fp32.
// Activations are counted as in 16-bit training: TE keeps some saved inputs in fp8 (smaller), so
// the memory figure stays an upper bound, never under.
#include "sim/spec/hardware.h"
#include "sim/spec/model.h"
#include "sim/spec/plan.h"

namespace starfish {

inline bool fp8_gemms(const Plan& plan) { return plan.fp8 != Fp8::none; }

// A GEMM of `flop` on fp8 inputs: the fp8 peak times the efficiency the hwprofile's (16-bit)
// curve gives the GEMM that runs as long at peak, flop x peak(16-bit) / peak(fp8). The curve is
// the math time against the time beyond it (launch, prologue, wave tail: see the hwprofiles),
// and an fp8 GEMM's main loop runs twice as fast while those stay: smaller fp8 GEMMs fall
// further below their peak than 16-bit ones of the same size.
double fp8_matmul_time_s(const GpuSpec& gpu, DType training_dtype, double flop);

// HBM bytes per element of quantizing a 16-bit tensor to fp8 with its transpose, as the recipe
// runs it: delayed scaling reads 2 and writes 1 + 1 in one kernel that also records the amax;
// tensorwise (current) scaling first reads the tensor for its amax (2 more). `after_norm`: the
// input of a LayerNormLinear (QKV; the dense MLP's first GEMM), whose norm kernel writes fp8
// directly under delayed scaling (no extra traffic: 1 + 1 bytes replace the 2 of a 16-bit
// output); under tensorwise scaling the norm writes 16-bit and the amax and cast follow.
double fp8_cast_bytes_per_element(Fp8Recipe recipe, bool after_norm);

// Time of one fp8 linear layer on one GPU: `count` GEMMs of `flop_each` FLOP (a grouped GEMM of
// `count` experts, or one GEMM), `input_elements` of input and `output_elements` of output in
// all. Forward: the input cast and the GEMMs; backward: the output gradient's cast and twice
// the GEMMs (input and weight gradient).
struct Fp8Linear {
  double forward_s = 0;
  double backward_s = 0;
};
Fp8Linear fp8_linear_time(const GpuSpec& gpu, DType training_dtype, Fp8Recipe recipe, double flop_each, double count,
                          double input_elements, double output_elements, bool after_norm);

// GEMM weights (elements) one GPU of pipeline stage `stage` holds: what TE keeps fp8 copies of.
// Routed-expert biases (GPT-OSS) count with them (a few elements too many, never too few).
double stage_fp8_gemm_weights(const Model& model, const Plan& plan, int stage);

// GPU bytes fp8 adds to a stage for the whole iteration: the cached fp8 weights and their
// transposes (2 bytes per GEMM weight) and the scaling state. 0 without fp8.
double fp8_weight_cache_bytes(const Model& model, const Plan& plan, int stage);

// Time of casting a stage's weights to fp8 once per iteration (first micro-batch): read 2,
// write 1 + 1 per weight (+ 2 for the amax under tensorwise scaling). 0 without fp8.
double fp8_weight_cast_time_s(const GpuSpec& gpu, const Model& model, const Plan& plan, int stage);

// The peak MFU is measured against: the fp8 peak for a plan whose GEMMs run in fp8, else the
// training dtype's (PaLM's definition, Chowdhery et al. 2022 App. B: the hardware's peak at the
// precision the matmuls use), so MFU stays at most 1. TFLOP/s per GPU is the figure to compare
// with Megatron-Bridge's tables.
double mfu_peak_flops(const GpuSpec& gpu, DType training_dtype, const Plan& plan);

}  // namespace starfish

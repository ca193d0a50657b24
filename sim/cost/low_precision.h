#pragma once
// Quantized GEMMs as TransformerEngine (TE) runs them under Megatron-core's TE layer spec: fp8
// (plan.fp8 with plan.fp8_recipe delayed, tensorwise or mxfp8) and fp4 (plan.fp4: nvfp4). The
// linear layers (QKV, attention output, MLP in/out, grouped experts, shared experts) compute
// their forward GEMM and both backward GEMMs (input and weight gradient) on quantized inputs at
// the format's peak; params, gradients, the optimizer, attention's core, norms, the router and
// the LM head (Megatron-core's output_layer is a plain ColumnParallelLinear) stay in the training
// dtype. What quantization adds, each with its source:
//  - casts: TE quantizes each GEMM input and each output gradient, writing the quantized data
//    and the copy the other GEMM that needs it reads (transformer_engine/pytorch/module/linear.py:
//    the input with columnwise usage for wgrad; grad_output quantized rowwise and columnwise in
//    backward), with the recipe's scales (quantized_cast_bytes_per_element);
//  - the quantized weight copies: cast once per iteration, on the first micro-batch, and cached
//    with their columnwise copy until the next (module/base.py get_weight_workspace,
//    is_first_microbatch: Megatron passes it), so they stay on the GPU through the iteration;
//  - scaling state: per quantized tensor of each GEMM (input, weight, output gradient) the
//    per-tensor fp32 scales the recipe keeps.
// Activations: the inputs the linear layers (QKV, MLP-in and MLP-out, the experts' grouped
// GEMMs; the attention output projection under delayed scaling) save for their weight gradients
// are kept quantized (sim/cost/activations.cpp, moe.cpp); the attention core, the activation
// function's input, norms and the router's input stay in the training dtype.
#include "sim/spec/hardware.h"
#include "sim/spec/model.h"
#include "sim/spec/plan.h"
#include "sim/spec/training.h"

namespace starfish {

// What a plan's linear-layer GEMMs run in: the one reading of plan.fp8 / fp8_recipe / fp4.
enum class GemmQuantization { none, fp8_delayed, fp8_tensorwise, mxfp8, nvfp4 };
GemmQuantization gemm_quantization(const Plan& plan);

// The dense peak a quantized GEMM runs at: peak.fp8 (delayed, tensorwise), peak.mxfp8, peak.fp4.
// Throws SpecError naming the hwprofile's missing key (make_job refuses such plans first).
double quantized_peak_flops(const GpuSpec& gpu, GemmQuantization q);

// A GEMM of `flop` on quantized inputs: the format's peak times the efficiency the hwprofile's
// (16-bit) curve gives the GEMM that runs as long at the 16-bit peak, flop x peak(16-bit) /
// peak(format). The curve is the math time against the time beyond it (launch, prologue, wave
// tail: see the hwprofiles), and a quantized GEMM's main loop runs faster while those stay:
// smaller quantized GEMMs fall further below their peak than 16-bit ones of the same size.
double quantized_matmul_time_s(const GpuSpec& gpu, DType training_dtype, GemmQuantization q, double flop);

// What a quantized tensor comes from: an activation or gradient in HBM, a norm's output (the
// input of a LayerNormLinear: QKV, the dense MLP's first GEMM), or a weight.
enum class CastSource { tensor, norm_output, weight };

// HBM bytes per element of quantizing one 16-bit tensor, with its columnwise copy, beyond what
// the 16-bit layer already moves (a norm's 16-bit write is counted with the norm):
//  - delayed: read 2, write 1 + 1 in one kernel that also records the amax; a norm writes fp8
//    directly (its 1 + 1 bytes replace the 2 of a 16-bit output): 0 more;
//  - tensorwise (current scaling): an amax pass first (read 2), then as delayed: 6. After a norm
//    TE >= 2.7 computes the amax inside the norm kernel (FUSED_NORM_AMAX_FP8 in
//    module/layernorm_linear.py): the norm writes 16-bit, the cast reads 2, writes 2: 4;
//  - mxfp8: read 2, write 1 + 1 and an E8M0 scale byte per 32 elements each way, no amax pass
//    (MXFP8Quantizer): 4.0625; TE does not fuse the norm with MXFP8 quantization unless cuDNN
//    norms are asked for (NVTE_NORM_FWD_USE_CUDNN), so after a norm it is the same 4.0625;
//  - nvfp4: an amax pass (the per-tensor fp32 scale, and the post-Hadamard amax of the wgrad
//    copy in the same kernel, nvte_hadamard_transform_amax), read 2, write 0.5 + 0.5 and an E4M3
//    scale byte per 16 elements each way: 5.125, after a norm too (no fused norm for NVFP4).
// Weights take the tensor cost (NVFP4 weights use 16x16 2D blocks: no more bytes than that).
double quantized_cast_bytes_per_element(GemmQuantization q, CastSource source);

// Bytes per element of a cached quantized weight with its columnwise copy: fp8 1 + 1; mxfp8 the
// same and a scale byte per 32 each way (2.0625); nvfp4 0.5 + 0.5 and a scale byte per 16 each
// way (1.125).
double quantized_weight_bytes_per_element(GemmQuantization q);

// Bytes per element of a linear layer's input kept for its weight gradient: TE drops the rowwise
// data after the forward GEMM and keeps one quantized copy (linear.py, layernorm_linear.py:
// update_usage(rowwise_usage=False), or with sequence parallelism the rowwise shard it gathers
// again in backward): fp8 1; mxfp8 1 and a scale byte per 32; nvfp4 0.5 and a scale byte per 16.
double saved_gemm_input_bytes_per_element(GemmQuantization q);

// Whether the attention output projection saves its 16-bit input instead of a quantized copy:
// Megatron-core (>= 0.15 with TE >= 2.6) sets save_original_input on linear_proj for fp8 recipes
// other than delayed ("the output of the fused core_attn is saved by itself, and linear_proj also
// saves the quantized tensor of this output": megatron/core/transformer/attention.py); TE refuses
// it under delayed scaling, and fp4 plans are not fp8 to Megatron's check. True without
// quantized GEMMs (the projection saves the tensor it is given).
bool projection_saves_original_input(GemmQuantization q);

// Time of one quantized linear layer on one GPU: `count` GEMMs of `flop_each` FLOP (a grouped
// GEMM of `count` experts, or one GEMM), `input_elements` of input and `output_elements` of
// output in all. Forward: the input cast and the GEMMs; backward: the output gradient's cast
// and twice the GEMMs (input and weight gradient).
struct QuantizedLinear {
  double forward_s = 0;
  double backward_s = 0;
};
QuantizedLinear quantized_linear_time(const GpuSpec& gpu, DType training_dtype, GemmQuantization q, double flop_each,
                                      double count, double input_elements, double output_elements, CastSource input);

// GEMM weights (elements) one GPU of pipeline stage `stage` holds: what TE keeps quantized
// copies of. Routed-expert biases (GPT-OSS) count with them (a few elements too many, never too
// few). 0 for a plan without quantized GEMMs.
double stage_quantized_gemm_weights(const Model& model, const Plan& plan, int stage);

// GPU bytes quantization adds to a stage for the whole iteration: the cached quantized weights
// with their columnwise copies and the scaling state (with fp8 params, the scaling state only:
// the weights are params). 0 without quantized GEMMs.
double quantized_weight_cache_bytes(const Model& model, const Plan& plan, int stage);

// fp8 params (plan.fp8_params): what the GEMM weights' params on a GPU of stage `stage` change
// by when TE's Float8Tensors replace their 16-bit copies: the fp8 data and, built in the first
// forward and kept to the next step, its transpose (quantized_weight_bytes_per_element) instead
// of training-dtype bytes (negative: saved). 0 without fp8 params.
double fp8_params_bytes_change(const Model& model, const Training& training, const Plan& plan, int stage);

// Bytes the distributed optimizer all-gathers after its step for a GPU of stage `stage` holding
// `params` parameters: the dense ones over DP, the routed experts over expert DP. The params'
// dtype, but 1 byte per fp8 param (Megatron's --fp8-param-gather: its point).
struct ParamGatherBytes {
  double dense_bytes = 0;
  double expert_bytes = 0;
};
ParamGatherBytes zero_param_gather_bytes(const Model& model, const Training& training, const Plan& plan, int stage,
                                         double params);

// Time of casting a stage's weights once per iteration (first micro-batch); with fp8 params,
// casting the master shard to fp8 after the step and building the transposes. 0 without.
double quantized_weight_cast_time_s(const GpuSpec& gpu, const Model& model, const Plan& plan, int stage);

// Whether layer `layer` is one the plan keeps in the training dtype under fp8 (Plan::bf16_layer)
// and of the kind asked: an MoE layer (`moe`) or a dense one. The stage counts of both tiers'
// times (pipeline_slots.cpp) and of the activations (activations.cpp) ask here.
inline bool bf16_layer_of_kind(const Model& model, const Plan& plan, int layer, bool moe) {
  return plan.bf16_layer(layer, model.layers) && model.moe_layer(layer) == moe;
}

// The peak MFU is measured against: the quantized format's peak for a plan whose GEMMs run
// quantized, else the training dtype's (PaLM's definition, Chowdhery et al. 2022 App. B: the
// hardware's peak at the precision the matmuls use), so MFU stays at most 1. TFLOP/s per GPU is
// the figure to compare with Megatron-Bridge's tables.
double mfu_peak_flops(const GpuSpec& gpu, DType training_dtype, const Plan& plan);

}  // namespace starfish

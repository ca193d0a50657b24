#include "sim/cost/low_precision.h"

#include "sim/cost/moe.h"
#include "sim/cost/op_time.h"
#include "sim/cost/params.h"
#include "sim/spec/error.h"
#include "sim/spec/pipeline_layout.h"

namespace starfish {
namespace {

// Megatron's default --fp8-amax-history-len (megatron/training/arguments.py): 1 entry.
constexpr double kAmaxHistory = 1;
// Per-tensor fp32 scaling state of a GEMM's three quantized tensors (input, weight, output
// gradient): fp8 keeps a scale, its inverse and the amax history; NVFP4 a rowwise and a
// columnwise amax (NVFP4Quantizer); MXFP8's scales are per block, counted with the data.
constexpr double kFp8ScalingBytesPerGemm = 3 * 4 * (2 + kAmaxHistory);
constexpr double kNvfp4ScalingBytesPerGemm = 3 * 4 * 2;

double scaling_bytes_per_gemm(GemmQuantization q) {
  switch (q) {
    case GemmQuantization::fp8_delayed:
    case GemmQuantization::fp8_tensorwise: return kFp8ScalingBytesPerGemm;
    case GemmQuantization::nvfp4: return kNvfp4ScalingBytesPerGemm;
    case GemmQuantization::mxfp8:
    case GemmQuantization::none: return 0;
  }
  return 0;
}

}  // namespace

GemmQuantization gemm_quantization(const Plan& p) {
  if (p.fp4 == Fp4::nvfp4) return GemmQuantization::nvfp4;
  if (p.fp8 == Fp8::none) return GemmQuantization::none;
  switch (p.fp8_recipe) {
    case Fp8Recipe::delayed: return GemmQuantization::fp8_delayed;
    case Fp8Recipe::tensorwise: return GemmQuantization::fp8_tensorwise;
    case Fp8Recipe::mxfp8: return GemmQuantization::mxfp8;
  }
  return GemmQuantization::fp8_delayed;
}

double quantized_peak_flops(const GpuSpec& gpu, GemmQuantization q) {
  switch (q) {
    case GemmQuantization::none: break;
    case GemmQuantization::fp8_delayed:
    case GemmQuantization::fp8_tensorwise: return gpu.peak(DType::fp8);
    case GemmQuantization::mxfp8:
      if (gpu.mxfp8_peak_flops <= 0) throw SpecError("GPU " + gpu.name + " has no MXFP8 peak (peak.mxfp8)");
      return gpu.mxfp8_peak_flops;
    case GemmQuantization::nvfp4:
      if (gpu.fp4_peak_flops <= 0) throw SpecError("GPU " + gpu.name + " has no fp4 peak (peak.fp4)");
      return gpu.fp4_peak_flops;
  }
  throw SpecError("quantized_peak_flops: the plan's GEMMs are not quantized");
}

double quantized_matmul_time_s(const GpuSpec& gpu, DType training_dtype, GemmQuantization q, double flop) {
  if (flop <= 0) return 0;
  const double peak = quantized_peak_flops(gpu, q);
  const double same_time_flop = flop * gpu.peak(training_dtype) / peak;
  return flop / (peak * gpu.matmul_efficiency.at(same_time_flop));
}

double quantized_cast_bytes_per_element(GemmQuantization q, CastSource source) {
  switch (q) {
    case GemmQuantization::none: return 0;
    case GemmQuantization::fp8_delayed: return source == CastSource::norm_output ? 0 : 2 + 1 + 1;
    case GemmQuantization::fp8_tensorwise: return source == CastSource::norm_output ? 2 + 1 + 1 : 2 + 2 + 1 + 1;
    case GemmQuantization::mxfp8: return 2 + 2 * (1 + 1.0 / 32);
    case GemmQuantization::nvfp4: return 2 + 2 + 2 * (0.5 + 1.0 / 16);
  }
  return 0;
}

double quantized_weight_bytes_per_element(GemmQuantization q) {
  switch (q) {
    case GemmQuantization::none: return 0;
    case GemmQuantization::fp8_delayed:
    case GemmQuantization::fp8_tensorwise: return 2;
    case GemmQuantization::mxfp8: return 2 * (1 + 1.0 / 32);
    case GemmQuantization::nvfp4: return 2 * (0.5 + 1.0 / 16);
  }
  return 0;
}

double saved_gemm_input_bytes_per_element(GemmQuantization q) { return quantized_weight_bytes_per_element(q) / 2; }

bool projection_saves_original_input(GemmQuantization q) {
  return q == GemmQuantization::none || q == GemmQuantization::fp8_tensorwise || q == GemmQuantization::mxfp8;
}

QuantizedLinear quantized_linear_time(const GpuSpec& gpu, DType training_dtype, GemmQuantization q, double flop_each,
                                      double count, double input_elements, double output_elements, CastSource input) {
  const double gemm = count * quantized_matmul_time_s(gpu, training_dtype, q, flop_each);
  QuantizedLinear out;
  out.forward_s = gemm + memory_bound_time_s(gpu, quantized_cast_bytes_per_element(q, input) * input_elements);
  out.backward_s =
      2 * gemm + memory_bound_time_s(gpu, quantized_cast_bytes_per_element(q, CastSource::tensor) * output_elements);
  return out;
}

double stage_quantized_gemm_weights(const Model& m, const Plan& p, int stage) {
  if (!p.quantized_gemms()) return 0;
  const int layers = stage_layer_count(m.layers, p.pp, p.virtual_stages, p.stage_layers, stage);
  const int moe_layers = stage_moe_layers(m, p, stage);
  const double h = m.hidden, in = m.activation == Activation::swiglu ? 2 : 1;
  const AttentionLinears a = attention_linears(m);
  const double attention = a.replicated_in_macs + (a.split_in_macs + a.out_macs) / p.tp;
  const double dense_mlp = (in + 1) * h * m.ffn_hidden / p.tp;
  double moe_mlp = 0;
  if (moe_layers > 0)
    moe_mlp = m.moe.shared_experts * (in + 1) * h * m.moe.expert_ffn_hidden / p.tp +
              static_cast<double>(moe_layer_expert_params(m, p.ep, p.expert_tp()));
  return layers * attention + (layers - moe_layers) * dense_mlp + moe_layers * moe_mlp;
}

double quantized_weight_cache_bytes(const Model& m, const Plan& p, int stage) {
  const GemmQuantization q = gemm_quantization(p);
  if (q == GemmQuantization::none) return 0;
  const int layers = stage_layer_count(m.layers, p.pp, p.virtual_stages, p.stage_layers, stage);
  const double gemms_per_layer = 4 + (m.is_moe() ? 2 : 0);  // QKV, proj, fc1, fc2 (+ shared experts')
  const double scaling = layers * gemms_per_layer * scaling_bytes_per_gemm(q);
  // fp8 params: the quantized weights are the params (fp8_params_bytes_change), not a cache.
  if (p.fp8_params) return scaling;
  return quantized_weight_bytes_per_element(q) * stage_quantized_gemm_weights(m, p, stage) + scaling;
}

double fp8_params_bytes_change(const Model& m, const Training& t, const Plan& p, int stage) {
  if (!p.fp8_params) return 0;
  const double weights = stage_quantized_gemm_weights(m, p, stage);
  return weights * (quantized_weight_bytes_per_element(gemm_quantization(p)) - static_cast<double>(bytes_of(t.dtype)));
}

ParamGatherBytes zero_param_gather_bytes(const Model& m, const Training& t, const Plan& p, int stage, double params) {
  const double expert = stage_expert_params(m, p, stage), b = static_cast<double>(bytes_of(t.dtype));
  ParamGatherBytes out{(params - expert) * b, expert * b};
  if (!p.fp8_params) return out;
  // Every routed-expert weight is a GEMM weight; the rest of the quantized ones are dense.
  const double dense_fp8 = stage_quantized_gemm_weights(m, p, stage) - expert;
  out.dense_bytes -= dense_fp8 * (b - 1);
  out.expert_bytes = expert;
  return out;
}

double quantized_weight_cast_time_s(const GpuSpec& gpu, const Model& m, const Plan& p, int stage) {
  const GemmQuantization q = gemm_quantization(p);
  if (q == GemmQuantization::none) return 0;
  const double weights = stage_quantized_gemm_weights(m, p, stage);
  if (!p.fp8_params) return memory_bound_time_s(gpu, quantized_cast_bytes_per_element(q, CastSource::weight) * weights);
  // fp8 params: TE's cast_master_weights_to_fp8 reads each fp32 master element of this rank's
  // shard and writes its fp8 byte (current scaling first reads the shard for its amax, all-
  // reduced over DP: 4 + 4 + 1; delayed scaling uses the last scale: 4 + 1); after the gather
  // the first micro-batch's forward builds each weight's fp8 transpose (read 1, write 1):
  // utils.py "We cannot create transpose cache here", Linear's update_usage(columnwise_usage).
  const double shard = optimizer_params_per_gpu(p, weights, stage_expert_params(m, p, stage));
  const double master_read = q == GemmQuantization::fp8_tensorwise ? 8 : 4;
  return memory_bound_time_s(gpu, (master_read + 1) * shard + 2 * weights);
}

double mfu_peak_flops(const GpuSpec& gpu, DType training_dtype, const Plan& plan) {
  const GemmQuantization q = gemm_quantization(plan);
  return q == GemmQuantization::none ? gpu.peak(training_dtype) : quantized_peak_flops(gpu, q);
}

}  // namespace starfish

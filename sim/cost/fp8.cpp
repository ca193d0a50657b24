#include "sim/cost/fp8.h"

#include "sim/cost/moe.h"
#include "sim/cost/op_time.h"
#include "sim/cost/params.h"
#include "sim/spec/pipeline_layout.h"

namespace starfish {
namespace {

// Megatron's default --fp8-amax-history-len (megatron/training/arguments.py): 1 entry.
constexpr double kAmaxHistory = 1;
// fp32 scale, scale_inv and the amax history, for each of a GEMM's three fp8 tensors.
constexpr double kScalingBytesPerGemm = 3 * 4 * (2 + kAmaxHistory);

}  // namespace

double fp8_matmul_time_s(const GpuSpec& gpu, DType training_dtype, double flop) {
  if (flop <= 0) return 0;
  const double fp8_peak = gpu.peak(DType::fp8);
  const double same_time_flop = flop * gpu.peak(training_dtype) / fp8_peak;
  return flop / (fp8_peak * gpu.matmul_efficiency.at(same_time_flop));
}

double fp8_cast_bytes_per_element(Fp8Recipe recipe, bool after_norm) {
  const double amax_pass = recipe == Fp8Recipe::tensorwise ? 2 : 0;
  if (after_norm) return recipe == Fp8Recipe::tensorwise ? 2 + amax_pass + 2 + 2 : 0;  // 16-bit norm output, amax, cast
  return 2 + 1 + 1 + amax_pass;
}

Fp8Linear fp8_linear_time(const GpuSpec& gpu, DType training_dtype, Fp8Recipe recipe, double flop_each, double count,
                          double input_elements, double output_elements, bool after_norm) {
  const double gemm = count * fp8_matmul_time_s(gpu, training_dtype, flop_each);
  Fp8Linear out;
  out.forward_s = gemm + memory_bound_time_s(gpu, fp8_cast_bytes_per_element(recipe, after_norm) * input_elements);
  out.backward_s = 2 * gemm + memory_bound_time_s(gpu, fp8_cast_bytes_per_element(recipe, false) * output_elements);
  return out;
}

double stage_fp8_gemm_weights(const Model& m, const Plan& p, int stage) {
  if (!fp8_gemms(p)) return 0;
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

double fp8_weight_cache_bytes(const Model& m, const Plan& p, int stage) {
  if (!fp8_gemms(p)) return 0;
  const int layers = stage_layer_count(m.layers, p.pp, p.virtual_stages, p.stage_layers, stage);
  const double gemms_per_layer = 4 + (m.is_moe() ? 2 : 0);  // QKV, proj, fc1, fc2 (+ shared experts')
  return 2 * stage_fp8_gemm_weights(m, p, stage) + layers * gemms_per_layer * kScalingBytesPerGemm;
}

double fp8_weight_cast_time_s(const GpuSpec& gpu, const Model& m, const Plan& p, int stage) {
  if (!fp8_gemms(p)) return 0;
  return memory_bound_time_s(gpu, fp8_cast_bytes_per_element(p.fp8_recipe, false) * stage_fp8_gemm_weights(m, p, stage));
}

double mfu_peak_flops(const GpuSpec& gpu, DType training_dtype, const Plan& plan) {
  return gpu.peak(fp8_gemms(plan) ? DType::fp8 : training_dtype);
}

}  // namespace starfish

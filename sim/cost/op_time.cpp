#include "sim/cost/op_time.h"

#include "sim/cost/flops.h"

namespace starfish {

double matmul_time_s(const GpuSpec& gpu, DType dtype, double flop) {
  if (flop <= 0) return 0;
  return flop / (gpu.peak(dtype) * gpu.matmul_efficiency.at(flop));
}

double memory_bound_time_s(const GpuSpec& gpu, double bytes) {
  return bytes / (gpu.hbm_bandwidth_Bps * gpu.hbm_efficiency);
}

double grad_accumulate_time_s(const GpuSpec& gpu, double params, int64_t grad_bytes) {
  return memory_bound_time_s(gpu, 3.0 * static_cast<double>(grad_bytes) * params);
}

double layer_elementwise_bytes(const Model& m, int64_t b, int tp, bool sp, int64_t act_bytes) {
  const double B = static_cast<double>(act_bytes);
  const double T = static_cast<double>(m.seq_len) * b;
  const double h = m.hidden, f = m.ffn_hidden, a = m.heads, s = m.seq_len;
  const double rep = sp ? tp : 1.0;  // norms, residuals and dropouts run on 1/tp of tokens with SP
  double bytes = 0;
  // Two norms (read x, write y) and two residual adds (read 2, write 1), two bias+dropout.
  bytes += (2 * 2 + 2 * 3 + 2 * 2) * B * T * h / rep;
  // Attention core between the GEMMs: scale+mask+softmax (read, write) and dropout (read,
  // write, mask) on a*s*s per sequence, divided over TP ranks (heads split).
  bytes += (2 + 3) * B * a * s * T / tp;
  // MLP activation (GELU: read, write; SwiGLU: read 2, write 1) on the TP-split FFN width.
  bytes += (m.activation == Activation::swiglu ? 3 : 2) * B * T * f / tp;
  return bytes;
}

LayerTime layer_time(const GpuSpec& gpu, DType dtype, const Model& m, int64_t b, int tp, bool sp, Recompute rc) {
  const LayerForwardFlops f = layer_forward_flops(m, b);
  const double t = tp;
  auto g = [&](double flop) { return matmul_time_s(gpu, dtype, flop / t); };
  LayerTime out;
  // The score and context products are batched GEMMs, one per head (s x s x d): their efficiency
  // is that of one head's GEMM, however many heads are batched together.
  const double heads = static_cast<double>(m.heads) / t * static_cast<double>(b);
  auto batched = [&](double flop) {
    const double per_head = flop / t / heads;
    return flop / t / (gpu.peak(dtype) * gpu.matmul_efficiency.at(per_head));
  };
  const double attention_core = batched(f.scores) + batched(f.context);
  out.gemm_forward_s = g(f.qkv) + attention_core + g(f.attn_out) + g(f.mlp_in) + g(f.mlp_out);
  out.elementwise_forward_s = memory_bound_time_s(gpu, layer_elementwise_bytes(m, b, tp, sp, bytes_of(dtype)));
  out.forward_s = out.gemm_forward_s + out.elementwise_forward_s;
  out.backward_s = 2 * out.gemm_forward_s + 2 * out.elementwise_forward_s;
  if (rc == Recompute::full) out.recompute_s = out.forward_s;
  if (rc == Recompute::selective) {
    const double core_bytes = 5.0 * bytes_of(dtype) * m.heads * m.seq_len * static_cast<double>(m.seq_len) * b / t;
    out.recompute_s = attention_core + memory_bound_time_s(gpu, core_bytes);
  }
  return out;
}

double output_layer_time_s(const GpuSpec& gpu, DType dtype, const Model& m, int64_t b, int tp) {
  const double logits = logits_forward_flops(m, b) / tp;
  const double T = static_cast<double>(m.seq_len) * b;
  // Forward GEMM + two backward GEMMs; softmax cross-entropy reads/writes fp32 logits twice.
  const double ce_bytes = 4.0 * 4.0 * T * m.vocab / tp;
  return 3 * matmul_time_s(gpu, dtype, logits) + memory_bound_time_s(gpu, ce_bytes);
}

}  // namespace starfish

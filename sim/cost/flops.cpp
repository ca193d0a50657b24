#include "sim/cost/flops.h"

#include "sim/cost/moe.h"
#include "sim/cost/params.h"
#include "sim/spec/pipeline_layout.h"

namespace starfish {

LayerForwardFlops layer_forward_flops(const Model& m, int64_t micro_batch) {
  const double T = static_cast<double>(micro_batch) * m.seq_len;
  const double h = m.hidden, q = m.q_dim(), f = m.ffn_hidden, s = m.seq_len;
  const double in_mats = m.activation == Activation::swiglu ? 2 : 1;
  const AttentionLinears a = attention_linears(m);
  LayerForwardFlops x;
  x.qkv = 2 * T * (a.replicated_in_macs + a.split_in_macs);  // h (q + 2 kv) without MLA
  x.scores = 2 * T * s * q;
  x.context = 2 * T * s * m.context_dim();
  x.attn_out = 2 * T * a.out_macs;
  x.mlp_in = 2 * T * h * f * in_mats;
  x.mlp_out = 2 * T * f * h;
  return x;
}

double logits_forward_flops(const Model& m, int64_t micro_batch) {
  return 2.0 * static_cast<double>(micro_batch) * m.seq_len * m.hidden * m.vocab;
}

namespace {

// The forward FLOPs of the model's layers for which `counts(layer)` holds, over `global_batch`
// sequences. An MoE layer's MLP computes what each token is routed to (sim/cost/moe.h): active FLOPs.
template <class Predicate>
double layers_forward_flops(const Model& m, int64_t global_batch, Predicate counts) {
  const LayerForwardFlops layer = layer_forward_flops(m, global_batch);
  const double tokens = static_cast<double>(global_batch) * m.seq_len;
  const double moe_extra = m.is_moe() ? moe_mlp_forward_flops(m, tokens) - layer.mlp_in - layer.mlp_out : 0;
  int layers = 0, moe_layers = 0;
  for (int l = 0; l < m.layers; ++l) {
    if (!counts(l)) continue;
    ++layers;
    moe_layers += m.moe_layer(l) ? 1 : 0;
  }
  double total = layer.total() * layers;
  if (moe_layers > 0) total += moe_layers * moe_extra;
  return total;
}

// The GEMM work of the modules selective recomputation redoes (recompute_module bits; the
// others are element-wise), over `global_batch` sequences.
double selective_recompute_flops(const Model& m, int64_t global_batch, uint8_t modules) {
  namespace rm = recompute_module;
  const LayerForwardFlops layer = layer_forward_flops(m, global_batch);
  const double T = static_cast<double>(global_batch) * m.seq_len;
  const int moe_layers = m.moe_layer_count();
  const double in_mats = m.activation == Activation::swiglu ? 2 : 1;
  const double shared = 2 * T * m.hidden * m.moe.expert_ffn_hidden * (in_mats + 1) * m.moe.shared_experts;
  double redone = 0;
  if (modules & rm::core_attn) redone += layer.attention_core() * m.layers;
  if (modules & rm::mlp) redone += (layer.mlp_in + layer.mlp_out) * (m.layers - moe_layers);
  if (modules & rm::mla_up_proj) redone += 2 * T * attention_linears(m).split_in_macs * m.layers;
  if (modules & rm::shared_experts) redone += shared * moe_layers;
  return redone;
}

}  // namespace

IterationFlops plan_iteration_flops(const Model& m, int64_t global_batch, const Plan& plan) {
  IterationFlops out = iteration_flops(m, global_batch, plan.recompute);
  if (plan.recompute == Recompute::selective) {
    out.hardware = out.model + selective_recompute_flops(m, global_batch, plan.recompute_modules);
    return out;
  }
  if (plan.recompute != Recompute::full || plan.recompute_layers == 0) return out;
  const std::vector<bool> recomputing = recomputing_layers(m.layers, plan);
  out.hardware = out.model + layers_forward_flops(m, global_batch, [&](int l) { return recomputing[static_cast<size_t>(l)]; });
  return out;
}

IterationFlops iteration_flops(const Model& m, int64_t global_batch, Recompute recompute) {
  const double layers_fwd = layers_forward_flops(m, global_batch, [](int) { return true; });
  const double logits_fwd = logits_forward_flops(m, global_batch);
  IterationFlops out;
  out.model = 3 * (layers_fwd + logits_fwd);
  double extra = 0;
  if (recompute == Recompute::full) extra = layers_fwd;  // the whole layer forward again
  if (recompute == Recompute::selective) extra = selective_recompute_flops(m, global_batch, recompute_module::core_attn);
  out.hardware = out.model + extra;
  return out;
}

double narayanan_iteration_flops(const Model& m, int64_t B, bool full_recompute) {
  const double s = m.seq_len, L = m.layers, h = m.hidden, V = m.vocab;
  if (full_recompute) return 96 * B * s * L * h * h * (1 + s / (6 * h) + V / (16 * L * h));
  return 72 * B * s * L * h * h * (1 + s / (6 * h) + V / (12 * L * h));
}

double tokens_per_s(const Model& m, int64_t global_batch, double iteration_s) {
  return iteration_s > 0 ? static_cast<double>(global_batch) * m.seq_len / iteration_s : 0.0;
}

}  // namespace starfish

#include "sim/cost/moe.h"

#include <algorithm>

#include "sim/cost/collectives.h"
#include "sim/cost/framework.h"
#include "sim/cost/low_precision.h"
#include "sim/cost/params.h"
#include "sim/spec/pipeline_layout.h"

namespace starfish {
namespace {

double in_matrices(const Model& m) { return m.activation == Activation::swiglu ? 2 : 1; }

// `count` GEMMs of `flop_each` as one grouped kernel: the efficiency of one of them (a grouped
// GEMM runs each expert's tile loop on its own rows; small experts do not batch into a big one).
double grouped_matmul_time_s(const GpuSpec& gpu, DType dtype, double flop_each, double count) {
  if (flop_each <= 0 || count <= 0) return 0;
  return flop_each * count / (gpu.peak(dtype) * gpu.matmul_efficiency.at(flop_each));
}

}  // namespace

int expert_data_parallel(const Plan& p) { return std::max(1, p.tp * std::max(p.dp, 1) * p.cp / (p.ep * p.expert_tp())); }

MoeLayerShape moe_layer_shape(const Model& m, const Plan& p) {
  MoeLayerShape x;
  const Moe& e = m.moe;
  x.tokens = static_cast<double>(m.seq_len) / p.cp * p.micro_batch / p.tp;
  x.routed = x.tokens * e.top_k;
  x.local_experts = e.experts / p.ep;
  const double mean = x.routed * p.ep * p.expert_tp() / e.experts;
  x.load = e.capacity_factor > 0 ? std::min(p.moe_load_imbalance, e.capacity_factor) : p.moe_load_imbalance;
  x.tokens_per_expert = mean * x.load;
  x.expert_ffn = static_cast<double>(e.expert_ffn_hidden) / p.expert_tp();
  x.received = x.local_experts * x.tokens_per_expert;
  return x;
}

double optimizer_params_per_gpu(const Plan& p, double params, double expert_params) {
  return (params - expert_params) / (p.zero_stage >= 1 ? p.dp_cp() : 1) +
         expert_params / (p.zero_stage >= 1 ? expert_data_parallel(p) : 1);
}

void append_moe_mlp_ops(std::vector<LayerOp>& ops, const GpuSpec& gpu, DType dtype, const Model& m, const Plan& p) {
  const MoeLayerShape x = moe_layer_shape(m, p);
  const double B = static_cast<double>(bytes_of(dtype)), h = m.hidden, E = m.moe.experts, in = in_matrices(m);
  uint8_t module = 0;  // the recompute module of the ops being added (plan.h)
  auto add = [&](const char* name, double fwd, double bwd, bool gemm) {
    ops.push_back(LayerOp{name, fwd, bwd, false, gemm, module});
  };
  // The experts' (and shared experts') linear layers, quantized when the plan says so (low_precision.h: the
  // grouped GEMMs are TE's GroupedLinear), of `in`/`out` elements of input and output in all.
  auto linear = [&](const char* name, double flop_each, double count, double in_elements, double out_elements) {
    if (p.quantized_gemms()) {
      const QuantizedLinear t = quantized_linear_time(gpu, dtype, gemm_quantization(p), flop_each, count, in_elements,
                                                      out_elements, CastSource::tensor);
      add(name, t.forward_s, t.backward_s, true);
      return;
    }
    const double fwd = grouped_matmul_time_s(gpu, dtype, flop_each, count);
    add(name, fwd, 2 * fwd, true);  // input gradient and weight gradient
  };
  // Megatron-core weights each routed copy by its fp32 probability inside the experts' activation
  // (framework.h moe_probs_in_expert_activation): a read of the probability forward; backward
  // reads it and writes its gradient. Elsewhere the combine weights the expert outputs.
  const bool probs_in_experts = framework_traits(p.framework).moe_probs_in_expert_activation;
  auto activation = [&](const char* name, double elements, double weighted_rows) {  // as the dense MLP's (op_time.cpp)
    add(name, memory_bound_time_s(gpu, (in == 2 ? 3 : 2) * B * elements + 4 * weighted_rows),
        memory_bound_time_s(gpu, (in == 2 ? 5 : 3) * B * elements + 2 * 4 * weighted_rows), false);
  };
  // Router: logits = x W (h x E) on this GPU's tokens; softmax and top-k over fp32 logits
  // (Megatron-core's router computes them in fp32): read, write; backward reads output and dy.
  // (The router stays in the training dtype: Megatron-core's TopKRouter is no TE module.)
  const double router = grouped_matmul_time_s(gpu, dtype, 2 * x.tokens * h * E, 1);
  add("MoE router GEMM", router, 2 * router, true);
  add("MoE router softmax/top-k", memory_bound_time_s(gpu, 2 * 4 * x.tokens * E), memory_bound_time_s(gpu, 3 * 4 * x.tokens * E),
      false);
  // Permute: gather the tokens into expert order, top_k copies (read tokens, write copies).
  const double permute = memory_bound_time_s(gpu, B * h * (x.tokens + x.routed));
  add("MoE permute", permute, permute, false);
  // With several local experts, the tokens the all-to-all brings from each EP rank arrive in
  // rank order and are regrouped by local expert before the grouped GEMM, and back after it
  // (Megatron-core's MoEAlltoAllTokenDispatcher: sort_chunks_by_idxs in dispatch_postprocess and
  // combine_preprocess): a read and a write of the received copies each way, in both passes.
  const double sort_chunks = x.local_experts > 1 && p.ep > 1 ? memory_bound_time_s(gpu, 2 * B * h * x.received) : 0;
  if (sort_chunks > 0) add("MoE sort chunks by expert", sort_chunks, sort_chunks, false);
  linear("MoE grouped expert GEMM in", 2 * x.tokens_per_expert * h * in * x.expert_ffn, x.local_experts, x.received * h,
         x.received * in * x.expert_ffn);
  module = recompute_module::moe_act;
  activation("MoE expert activation", x.received * x.expert_ffn, probs_in_experts ? x.received : 0);
  module = 0;
  linear("MoE grouped expert GEMM out", 2 * x.tokens_per_expert * x.expert_ffn * h, x.local_experts,
         x.received * x.expert_ffn, x.received * h);
  if (sort_chunks > 0) add("MoE restore chunk order", sort_chunks, sort_chunks, false);
  // Unpermute: sum the top_k copies of a token (weighting each by its routing probability where
  // the experts did not); its backward copies the gradient back to each copy, and when it weighted
  // them, also reads the expert outputs for the probabilities' gradient.
  add("MoE unpermute", memory_bound_time_s(gpu, B * h * (x.routed + x.tokens)),
      memory_bound_time_s(gpu, B * h * ((probs_in_experts ? 1 : 2) * x.routed + x.tokens)), false);
  if (m.moe.shared_experts > 0) {
    // Shared experts: a dense MLP of shared x expert FFN columns, tensor-parallel on all tokens.
    const double T = static_cast<double>(m.seq_len) / p.cp * p.micro_batch, f = m.moe.shared_experts * m.moe.expert_ffn_hidden / p.tp;
    const double shard = p.sequence_parallel ? p.tp : 1;  // TE casts before the sequence-parallel gather
    module = recompute_module::shared_experts;
    linear("MoE shared expert GEMM in", 2 * T * h * in * f, 1, T * h / shard, T * in * f);
    activation("MoE shared expert activation", T * f, 0);
    linear("MoE shared expert GEMM out", 2 * T * f * h, 1, T * f, T * h);
    module = 0;
  }
}

double moe_dispatch_bytes(const Model& m, const Plan& p, int64_t act_bytes) {
  const MoeLayerShape x = moe_layer_shape(m, p);
  return x.routed * x.load * m.hidden * static_cast<double>(act_bytes);
}

double moe_all_to_all_time_s(const Cluster& c, const Model& m, const Plan& p, int64_t act_bytes) {
  // The EP group's members are ETP apart in the stage's rank order (expert layout: ETP innermost,
  // then EP, then expert DP -- Megatron-core's expert rank generator).
  return all_to_all_time_s(c, p.ep, p.expert_tp(), moe_dispatch_bytes(m, p, act_bytes));
}

double moe_etp_gather_time_s(const Cluster& c, const Model& m, const Plan& p, int64_t act_bytes) {
  const int etp = p.expert_tp();
  if (etp <= 1) return 0;
  const double bytes = moe_dispatch_bytes(m, p, act_bytes) * etp;  // every ETP rank's tokens, gathered
  return collective_time_s(CollectiveKind::all_gather, CollectiveAlgorithm::ring, etp, bytes, link_for_group(c, etp, 1));
}

namespace {

// What an MoE layer's router, experts and shared experts keep for backward in place of a dense
// MLP's intermediates (without full recomputation, which keeps only the layer's input).
double experts_activation_bytes(const Model& m, const Plan& p, const ActivationOptions& o) {
  const MoeLayerShape x = moe_layer_shape(m, p);
  const double B = static_cast<double>(o.act_bytes), h = m.hidden, E = m.moe.experts;
  // A GEMM's saved input (quantized under fp8/fp4: TE's GroupedLinear and Linear keep the
  // columnwise copy, grouped_linear.py) and what the activation function keeps (its input).
  const double q = o.gemm_input_bytes(), activation_input = in_matrices(m) == 2 ? 2 : 1;
  double moe = x.tokens * E * (4 + 1) + x.routed * (4 + 8);  // fp32 probabilities, routing map; top-k weights, indices
  moe += x.received * h * q;                                  // expert inputs (the grouped fc1's)
  // Expert intermediates: the activation's input, and its output as fc2's input unless the
  // moe_act module discards it (Megatron-core's TEGroupedMLP: CheckpointWithoutOutput, fc2 set to
  // save that original output, which is then dropped and rebuilt before fc2's backward).
  const double fc2_input = o.recomputes(recompute_module::moe_act) ? 0 : q;
  moe += (activation_input * B + fc2_input) * x.received * x.expert_ffn;
  // The routing weights' gradient needs what they multiplied: the expert outputs, saved by the
  // combine, or (Megatron-core) the activation's input, saved already, and each copy's fp32 weight.
  moe += framework_traits(p.framework).moe_probs_in_expert_activation ? 4 * x.received : x.routed * h * B;
  // The MLP norm's output is the router's input, saved in 16 bits (the dense count has it as
  // MLP-in's, quantized under fp8); a quantized shared expert saves its own copy besides. The
  // layernorm module discards that output (Megatron-core's pre_mlp_layernorm checkpoint; under
  // fp8 set_for_recompute_pre_mlp_layernorm has the shared experts save it, not a copy): none of
  // it is kept, the dense count's share taken back.
  const bool norm_rebuilt = o.recomputes(recompute_module::layernorm);
  moe += (norm_rebuilt ? -q : B - q) * x.tokens * h;
  // Shared experts (kept unless their module reruns them from that input).
  if (m.moe.shared_experts > 0 && !o.recomputes(recompute_module::shared_experts)) {
    const double tokens = static_cast<double>(m.seq_len) / p.cp * p.micro_batch;
    moe += (activation_input * B + q) * tokens * (m.moe.shared_experts * m.moe.expert_ffn_hidden / p.tp);
    if (o.quantized_input_bytes > 0 && !norm_rebuilt) moe += q * x.tokens * h;
  }
  return moe;
}

}  // namespace

double moe_layer_activation_bytes(const Model& m, const Plan& p, const ActivationOptions& o) {
  ActivationOptions dense_part = o;  // an MoE layer has no dense MLP for the mlp module to redo
  dense_part.recompute_modules &= static_cast<uint8_t>(~recompute_module::mlp);
  const double dense = layer_activation_bytes(m, p.micro_batch, dense_part);
  if (o.recompute == Recompute::full) return dense;  // only the layer input, as a dense layer
  return dense - mlp_activation_bytes(m, p.micro_batch, dense_part) + experts_activation_bytes(m, p, o);
}

double moe_dispatch_buffer_bytes(const Model& m, const Plan& p, int64_t act_bytes) {
  return m.is_moe() ? 2 * moe_dispatch_bytes(m, p, act_bytes) * p.expert_tp() : 0;
}

double moe_layer_backward_transient_bytes(const Model& m, const Plan& p, const ActivationOptions& o) {
  const MoeLayerShape x = moe_layer_shape(m, p);
  const double B = static_cast<double>(o.act_bytes), h = m.hidden, in = in_matrices(m);
  const double residual_grad = B * x.tokens * h;  // x.tokens: this rank's, split by TP under SP
  // The experts' MLP backward, first thing in the layer's: the combine's all-to-all moves the
  // copies' gradient (the unpermute's backward gathers it from the tokens') into a received
  // buffer, both alive; the second grouped GEMM's input gradient beside its output gradient;
  // the activation's input gradient beside that, the GEMM's saved input freed.
  const double exchange = B * h * (x.routed * x.load + x.received);
  // Under the moe_act module the activation's output is rebuilt for fc2's backward in 16 bits,
  // where under fp8 fc2 would have kept a quantized copy: the difference is alive here too.
  const double rebuilt_over_kept = o.recomputes(recompute_module::moe_act) ? B - o.gemm_input_bytes() : 0;
  const double second_gemm = B * x.received * (h + x.expert_ffn) + rebuilt_over_kept * x.received * x.expert_ffn;
  const double activation = x.received * x.expert_ffn * ((1 + in) * B - o.gemm_input_bytes());
  // The dispatch buffers held for the iteration (moe_dispatch_buffer_bytes) hold an exchange's
  // send and receive sides already.
  const double experts =
      residual_grad + std::max({exchange, second_gemm, activation}) - moe_dispatch_buffer_bytes(m, p, o.act_bytes);
  // Unfused attention's moment comes after the experts' saved tensors (all there, kept or
  // rebuilt) are freed.
  ActivationOptions rebuilt = o;
  rebuilt.recompute = Recompute::none;
  return std::max({0.0, experts, attention_backward_transient_bytes(m, p.micro_batch, o, experts_activation_bytes(m, p, rebuilt))});
}

double moe_mlp_forward_flops(const Model& m, double tokens) {
  const double h = m.hidden, fe = m.moe.expert_ffn_hidden, expert = 2 * tokens * h * fe * (in_matrices(m) + 1);
  return 2 * tokens * h * m.moe.experts + (m.moe.top_k + m.moe.shared_experts) * expert;
}

double moe_expert_reduce_time_s(const Cluster& c, const Plan& p, double grad_bytes, double gather_bytes,
                                int64_t micro_batches) {
  const int edp = expert_data_parallel(p);
  if (edp <= 1 || grad_bytes <= 0) return 0;
  const LinkParams link = link_for_group(c, edp, p.ep * p.expert_tp());
  auto ring = [&](CollectiveKind k, double bytes) { return collective_time_s(k, CollectiveAlgorithm::ring, edp, bytes, link); };
  if (p.zero_stage == 0) return ring(CollectiveKind::all_reduce, grad_bytes);
  const double reductions = p.zero_stage == 1 ? 1 : static_cast<double>(micro_batches);
  return reductions * ring(CollectiveKind::reduce_scatter, grad_bytes) + ring(CollectiveKind::all_gather, gather_bytes);
}

ModelStates stage_model_states(const Model& m, const Training& t, const Plan& p, int stage, double params,
                               double layer_params, const ChunkFootprint* chunks) {
  const double expert_params = stage_expert_params(m, p, stage);
  ModelStates states = model_states(t, p, p.dp_cp(), params - expert_params, layer_params, chunks);
  if (expert_params > 0) {
    const ModelStates experts = model_states(t, p, expert_data_parallel(p), expert_params, 0, nullptr);
    for (Tier tier : {Tier::gpu, Tier::cpu, Tier::nvme}) {
      states.params.at(tier) += experts.params.at(tier);
      states.grads.at(tier) += experts.grads.at(tier);
      states.optimizer.at(tier) += experts.optimizer.at(tier);
    }
  }
  states.params.gpu += fp8_params_bytes_change(m, t, p, stage);
  return states;
}

int stage_moe_layers(const Model& m, const Plan& p, int stage) {
  if (!m.is_moe()) return 0;
  return stage_layers_where(m.layers, p.pp, p.virtual_stages, p.stage_layers, stage,
                            [&m](int l) { return m.moe_layer(l); });
}

double stage_expert_params(const Model& m, const Plan& p, int stage) {
  if (!m.is_moe()) return 0;
  return static_cast<double>(stage_moe_layers(m, p, stage)) *
         static_cast<double>(moe_layer_expert_params(m, p.ep, p.expert_tp()));
}

}  // namespace starfish

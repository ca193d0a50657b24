#include "sim/cost/activations.h"

#include <algorithm>

#include "sim/cost/framework.h"
#include "sim/cost/low_precision.h"
#include "sim/cost/moe.h"
#include "sim/cost/params.h"
#include "sim/cost/pipeline_order.h"
#include "sim/cost/pipeline_slots.h"
#include "sim/spec/pipeline_layout.h"

namespace starfish {

double mlp_activation_bytes(const Model& m, int64_t micro_batch, const ActivationOptions& o) {
  if (o.recompute == Recompute::full || o.recomputes(recompute_module::mlp)) return 0;
  const double sb = static_cast<double>(m.seq_len) / o.cp * micro_batch, f = m.ffn_hidden, B = static_cast<double>(o.act_bytes);
  // The activation keeps its input (SwiGLU: gate and up; GELU: one tensor: Megatron's
  // bias_swiglu / bias_gelu save it in the training dtype), the second GEMM its input (the
  // product; quantized under TE's fp8/fp4 GEMMs). Split over TP.
  const double kept_by_activation = m.activation == Activation::swiglu ? 2 : 1;
  return (kept_by_activation * B + o.gemm_input_bytes()) * sb * f / o.tp;
}

double layer_activation_bytes(const Model& m, int64_t micro_batch, const ActivationOptions& o) {
  const double sb = static_cast<double>(m.seq_len) / o.cp * micro_batch;  // this rank's tokens
  const double h = m.hidden, a = m.heads, s = m.seq_len;
  const double t = o.tp, B = static_cast<double>(o.act_bytes), mask = m.dropout ? 1.0 : 0.0;
  const double sp = o.sequence_parallel ? t : 1.0;  // SP splits the otherwise replicated parts

  if (o.recompute == Recompute::full) return B * sb * h / sp;  // only the layer input is kept

  // Parts replicated across TP ranks without SP (divided by t with SP): the inputs of the two
  // norms and of the two TP regions (QKV and MLP-in GEMMs), and the two output dropout masks.
  // A parallel layer with one input norm (shared_input_norm) saves one norm input fewer (its two
  // GEMMs' shared input is still counted twice: an upper bound); post-norms save their inputs,
  // attention's and the MLP's outputs (Gemma 2).
  // The two TP regions' inputs are the norms' outputs the QKV and MLP-in GEMMs save for their
  // weight gradients: quantized under fp8/fp4 (TE's LayerNormLinear keeps ln_out in fp8, only
  // the columnwise copy, or with SP the rowwise shard it gathers again: layernorm_linear.py).
  // Recomputing the MLP (Megatron-core's mlp module: a checkpoint of the MLP, TE's fused norm and
  // fc1 inside it) keeps only its input, the norm's input counted above: not MLP-in's. MLA's
  // input norm is a module of its own, whose output (the down projections' input; under fp8
  // they save it unquantized, set_for_recompute_input_layernorm) the layernorm module discards.
  const double gemm_inputs = 2 - (o.recomputes(recompute_module::mlp) ? 1 : 0) -
                             (m.is_mla() && o.recomputes(recompute_module::layernorm) ? 1 : 0);
  // Under SP a framework that keeps the gathered GEMM inputs (torchtitan) keeps them whole.
  const double gemm_input_total = gemm_inputs * o.gemm_input_bytes() * sb * h;
  const bool gathered = o.sequence_parallel && o.sequence_parallel_saves_gathered_inputs;
  double replicated = m.norms_per_layer() * B * sb * h + (gathered ? 0 : gemm_input_total) + 2 * mask * sb * h;
  // MLA: the latents' norm inputs and the up projections' inputs (Megatron saves them before the
  // sequence-parallel gather, like every column-parallel GEMM's input).
  if (m.is_mla()) replicated += B * sb * (m.mla.q_lora_rank + m.mla.kv_lora_rank + attention_linears(m).latent_width);

  // Parts split across TP ranks (heads and FFN columns are divided). Q, K, V, kept for the score
  // and context GEMMs; MLA's, the up projections' outputs with RoPE applied, are discarded and
  // rebuilt under the mla_up_proj module.
  double split = o.recomputes(recompute_module::mla_up_proj) ? 0 : B * sb * (m.q_dim() + m.k_dim() + m.v_dim());
  if (m.qk_norm) split += B * sb * (m.q_dim() + m.k_dim());       // the query/key norms' inputs
  // The attention output projection's input (the context). Flash attention keeps it as its
  // output; the projection saves that same tensor, or under fp8 delayed scaling and NVFP4 a
  // quantized copy of it beside it (TE's Linear: the input's columnwise data, linear.py).
  // Unfused attention keeps no copy of its own: the projection's saved input is all.
  const double flash_output = fused(o.attention) ? B : 0;
  const double projection_copy = o.projection_saves_original_input ? (fused(o.attention) ? 0 : B) : o.gemm_input_bytes();
  split += (flash_output + projection_copy) * sb * m.context_dim();
  split += mlp_activation_bytes(m, micro_batch, o) * t;
  if (fused(o.attention)) {
    // FlashAttention keeps its output (the context, counted above) and the softmax statistics,
    // one fp32 log-sum-exp per query and head (Dao 2022, Algorithm 2): no s x s tensor.
    split += 4.0 * a * sb;
  } else if (!o.recomputes(recompute_module::core_attn)) {
    const double scores = a * s * sb;  // a * s^2 * b elements (this rank's queries, all keys)
    split += B * scores;               // softmax output
    split += mask * scores;            // attention dropout mask
    if (m.dropout) split += B * scores;  // dropout output (input of the context GEMM)
  }
  return replicated / sp + (gathered ? gemm_input_total : 0) + split / t;
}

namespace {

// Gradient bytes at the fullest moment of a layer's MLP backward (layer_backward_transient_bytes):
// the arriving gradient, the dropout-add's branch gradient and the second GEMM's input gradient;
// then the activation's input gradient beside that one, the second GEMM's saved input freed.
double mlp_backward_transient_bytes(const Model& m, int64_t micro_batch, const ActivationOptions& o) {
  const double T = static_cast<double>(m.seq_len) / o.cp * micro_batch;  // this rank's tokens
  const double B = static_cast<double>(o.act_bytes), sp = o.sequence_parallel ? o.tp : 1.0;
  const double mask = m.dropout ? 1.0 : 0.0, in = m.activation == Activation::swiglu ? 2 : 1;
  const double residual_grad = B * T * m.hidden / sp, f = T * m.ffn_hidden / o.tp;  // f: the MLP's width, in elements
  const double second_gemm = residual_grad + mask * residual_grad + B * f;
  const double activation = residual_grad + B * f + in * B * f - o.gemm_input_bytes() * f;
  return std::max(second_gemm, activation);
}

}  // namespace

double attention_backward_transient_bytes(const Model& m, int64_t micro_batch, const ActivationOptions& o,
                                          double mlp_intermediate_bytes) {
  if (fused(o.attention)) return 0;
  const double T = static_cast<double>(m.seq_len) / o.cp * micro_batch;
  const double B = static_cast<double>(o.act_bytes), t = o.tp, sp = o.sequence_parallel ? t : 1.0;
  const double mask = m.dropout ? 1.0 : 0.0;
  const double scores = static_cast<double>(m.heads) * m.seq_len * T / t;  // this rank's s x s elements
  // Freed by now: the MLP's norm input, its first GEMM's input, its dropout mask, its
  // intermediates, and the attention projection's input.
  const double freed = (B + o.gemm_input_bytes() + mask) * T * m.hidden / sp + mlp_intermediate_bytes +
                       o.gemm_input_bytes() * T * m.context_dim() / t;
  return B * T * m.hidden / sp + (1 + mask) * B * scores + B * T * m.v_dim() / t - freed;
}

double layer_backward_transient_bytes(const Model& m, int64_t micro_batch, const ActivationOptions& o) {
  ActivationOptions rebuilt = o;  // kept or rebuilt, the layer's tensors are all there when its backward starts
  rebuilt.recompute = Recompute::none;
  return std::max({0.0, mlp_backward_transient_bytes(m, micro_batch, o),
                   attention_backward_transient_bytes(m, micro_batch, o, mlp_activation_bytes(m, micro_batch, rebuilt))});
}

double korthikanti_layer_bytes(const Model& m, int64_t b, const ActivationOptions& o) {
  const double s = m.seq_len, h = m.hidden, a = m.heads, t = o.tp;
  const double sbh = s * b * h;
  const bool sp = o.sequence_parallel;
  switch (o.recompute) {
    case Recompute::full: return sp ? 2 * sbh / t : 2 * sbh;
    case Recompute::selective: return sp ? 34 * sbh / t : sbh * (10 + 24 / t);
    case Recompute::none: return sp ? sbh / t * (34 + 5 * a * s / h) : sbh * (10 + 24 / t + 5 * a * s / (h * t));
  }
  return 0;
}

ActivationOptions plan_activation_options(const Plan& plan, int64_t act_bytes, Recompute recompute) {
  const GemmQuantization q = gemm_quantization(plan);
  const double quantized_input_bytes = q == GemmQuantization::none ? 0 : saved_gemm_input_bytes_per_element(q);
  return ActivationOptions{plan.tp,        plan.sequence_parallel, recompute, act_bytes, attention_kernel(plan),
                           plan.cp,        quantized_input_bytes,  projection_saves_original_input(q),
                           plan.recompute_modules,
                           !framework_traits(running_framework(plan)).sequence_parallel_regathers_inputs};
}

double embedding_activation_bytes(const Model& m, const Plan& plan, int64_t act_bytes) {
  const double sbh = static_cast<double>(m.seq_len) / plan.cp * plan.micro_batch * m.hidden;
  // The embedding dropout's 1-byte mask, and the input of an embedding norm (BLOOM).
  const double per_element = (m.dropout ? 1.0 : 0.0) + (m.embedding_norm ? static_cast<double>(act_bytes) : 0.0);
  return per_element * sbh / (plan.sequence_parallel ? plan.tp : 1.0);
}

Bf16LayerBytes bf16_layer_extra_bytes(const Model& m, const Plan& plan, int64_t act_bytes) {
  Bf16LayerBytes out;
  if (!plan.has_bf16_layers()) return out;
  auto extra = [&](Recompute r, bool moe) {
    const ActivationOptions q = plan_activation_options(plan, act_bytes, r);
    ActivationOptions plain = q;
    plain.quantized_input_bytes = 0;
    plain.projection_saves_original_input = true;
    return moe ? moe_layer_activation_bytes(m, plan, plain) - moe_layer_activation_bytes(m, plan, q)
               : layer_activation_bytes(m, plan.micro_batch, plain) - layer_activation_bytes(m, plan.micro_batch, q);
  };
  out.stored = extra(plan.recompute, false);
  out.full = extra(Recompute::none, false);
  if (m.is_moe()) {
    out.moe_stored = extra(plan.recompute, true);
    out.moe_full = extra(Recompute::none, true);
  }
  return out;
}

namespace {

// What a stage's bf16 layers hold at its peak over fp8 ones (bf16_layer_extra_bytes):
//  - `layers_bytes`: each layer's extra for as many micro-batches as its virtual stage can hold:
//    under 1F1B the stage's in-flight ones; under interleaving a virtual stage can hold up to two
//    rounds of p micro-batches (Megatron's interleaved warm-up runs 2 (p - 1) + (v - 1) p
//    forwards, virtual stage by virtual stage in groups of p, before its first backward, which is
//    the last virtual stage's), more than the stage's average; under block recomputation some
//    layers keep everything, so each counts its full bytes, the larger;
//  - `recompute_working_bytes`: a bf16 layer rebuilds more than an fp8 one, the worst of them.
struct Bf16StageBytes {
  double layers_bytes = 0, recompute_working_bytes = 0;
};
Bf16StageBytes bf16_stage_bytes(const Model& m, const Plan& plan, int64_t act_bytes, int stage, int64_t micro_batches) {
  Bf16StageBytes out;
  if (!plan.has_bf16_layers()) return out;
  auto count = [&](bool moe) {
    return static_cast<double>(stage_layers_where(m.layers, plan.pp, plan.virtual_stages, plan.stage_layers, stage,
                                                  [&](int l) { return bf16_layer_of_kind(m, plan, l, moe); }));
  };
  const double dense_layers = count(false), moe_layers = count(true);
  if (dense_layers + moe_layers == 0) return out;
  // The stage's in-flight micro-batches; under interleaving the most any one virtual stage holds,
  // its first's 2p (pipeline_slots.h).
  const double in_flight =
      plan.schedule == Schedule::interleaved
          ? static_cast<double>(first_virtual_stage_in_flight(plan.schedule, plan.pp, micro_batches, plan.virtual_stages))
          : peak_in_flight_micro_batches(plan.schedule, plan.pp, stage, micro_batches, 1);
  const Bf16LayerBytes b = bf16_layer_extra_bytes(m, plan, act_bytes);
  const bool every_layer_recomputes = plan.recompute_layers == 0;
  const double dense = every_layer_recomputes ? b.stored : b.full, moe = every_layer_recomputes ? b.moe_stored : b.moe_full;
  out.layers_bytes = in_flight * (dense_layers * dense + moe_layers * moe);
  if (plan.recompute != Recompute::none) out.recompute_working_bytes = std::max(b.full - b.stored, b.moe_full - b.moe_stored);
  return out;
}

}  // namespace

LayerActivations plan_layer_activations(const Model& m, const Plan& plan, int64_t act_bytes) {
  LayerActivations out;
  const ActivationOptions o = plan_activation_options(plan, act_bytes, plan.recompute);
  out.kept = layer_activation_bytes(m, plan.micro_batch, o);
  const ActivationOptions rebuilt = plan_activation_options(plan, act_bytes, Recompute::none);
  out.full = plan.recompute != Recompute::none ? layer_activation_bytes(m, plan.micro_batch, rebuilt) : out.kept;
  out.backward_transient = layer_backward_transient_bytes(m, plan.micro_batch, o);
  if (m.is_moe()) {
    out.moe_kept = moe_layer_activation_bytes(m, plan, o);
    out.moe_full = plan.recompute != Recompute::none ? moe_layer_activation_bytes(m, plan, rebuilt) : out.moe_kept;
    out.moe_backward_transient = moe_layer_backward_transient_bytes(m, plan, o);
  }
  return out;
}

StageActivations peak_stage_activations(const Model& m, const Plan& plan, int64_t micro_batches, int64_t act_bytes,
                                        int stage) {
  return peak_stage_activations(m, plan, micro_batches, act_bytes, stage, plan_layer_activations(m, plan, act_bytes));
}

StageActivations peak_stage_activations(const Model& m, const Plan& plan, int64_t micro_batches, int64_t act_bytes,
                                        int stage, const LayerActivations& layer) {
  const int p = plan.pp, v = plan.virtual_stages;
  const double per_layer = layer.kept, full_layer = layer.full;
  const double layers_per_stage = stage_layer_count(m.layers, p, v, plan.stage_layers, stage);
  // MoE layers keep their experts' activations instead of a dense MLP's.
  const double moe_layers = m.is_moe() ? stage_moe_layers(m, plan, stage) : 0;
  const double moe_extra = moe_layers > 0 ? layer.moe_kept - per_layer : 0;
  // Block recomputation: the layers that do not recompute keep all of theirs (their dense and
  // MoE bytes over what a recomputing layer keeps).
  double kept_extra = 0;
  if (plan.recompute_layers > 0) {
    const double kept = layers_per_stage - stage_recomputing_layers_where(m.layers, plan, stage, [](int) { return true; });
    const double kept_moe =
        m.is_moe() ? moe_layers - stage_recomputing_layers_where(m.layers, plan, stage, [&m](int l) { return m.moe_layer(l); }) : 0;
    kept_extra = kept * (full_layer - per_layer);
    if (kept_moe > 0) kept_extra += kept_moe * (layer.moe_full - full_layer - moe_extra);
  }

  StageActivations out;
  // Micro-batches of its layers whose activations a stage holds at its peak (pipeline_slots.h):
  // under interleaving the first stage's p (1 + (p - 1) / (p v)) of Korthikanti sec. 4.2.3, the
  // last stage's p - (p - 1) / v, nearly as many.
  const double in_flight = peak_in_flight_micro_batches(plan.schedule, p, stage, micro_batches, v);
  out.in_flight_micro_batches = in_flight;
  // Those are v in_flight virtual stages' forwards; where the stage's virtual stages differ in
  // size (the embedding and loss slots, explicit layouts) which ones are held at the peak is the
  // schedule's order (the last stage holds its lighter loss virtual stage once, the others
  // twice): the layers the order holds at its most, over the even share.
  double held_layers_scale = 1;
  if (v > 1 && !plan.stage_layers.even() && layers_per_stage > 0 && in_flight > 0) {
    const double held = peak_held_layers(plan.schedule, p, stage, micro_batches, v, [&](int c) {
      return virtual_stage_layer_count(m.layers, p, v, plan.stage_layers, stage, c);
    });
    held_layers_scale = held / (in_flight * layers_per_stage);
  }
  out.layers_bytes = in_flight * held_layers_scale * (layers_per_stage * per_layer + moe_layers * moe_extra + kept_extra);
  const Bf16StageBytes bf16 = bf16_stage_bytes(m, plan, act_bytes, stage, micro_batches);
  out.layers_bytes += bf16.layers_bytes;

  // The layer being back-propagated, the larger of a dense and an MoE layer of the stage's: what
  // its recomputation rebuilds beside what it kept, and its gradients at their most.
  const bool dense_layers = layers_per_stage > moe_layers;
  if (plan.recompute != Recompute::none) {
    double rebuilt = dense_layers ? full_layer - per_layer : 0;
    if (moe_layers > 0) rebuilt = std::max(rebuilt, layer.moe_full - layer.moe_kept);
    out.recompute_working_bytes = rebuilt + bf16.recompute_working_bytes;
  }
  if (dense_layers) out.backward_transient_bytes = layer.backward_transient;
  if (moe_layers > 0) out.backward_transient_bytes = std::max(out.backward_transient_bytes, layer.moe_backward_transient);
  if (stage == 0)
    out.embedding_bytes = static_cast<double>(first_virtual_stage_in_flight(plan.schedule, p, micro_batches, v)) *
                          embedding_activation_bytes(m, plan, act_bytes);
  if (stage == p - 1) {
    // The output layer of each micro-batch between its loss and its backward: under GPipe all
    // of them (every forward, loss included, runs before the first backward); under 1F1B and
    // interleaving one, as the last stage runs each micro-batch's backward (its last virtual
    // stage's) right after its forward. The simulator holds them the same way.
    const double output_in_flight = plan.schedule == Schedule::gpipe ? in_flight : 1.0;
    const double output_layer = output_layer_activation_bytes(m, plan, act_bytes);
    out.output_bytes = output_in_flight * output_layer;
    out.output_held_in_backward_bytes = (output_in_flight - 1) * output_layer;
    const double logits = rank_logits(m, plan.micro_batch, plan.tp, plan.cp);
    out.metric_bytes = train_metric_kernel(act_bytes, plan).peak_bytes_per_logit * logits;
  }
  return out;
}

double output_layer_activation_bytes(const Model& m, const Plan& plan, int64_t act_bytes) {
  // Final norm input and head input (act_bytes each, split by SP), and the loss's logits at
  // their most (framework.h, loss_kernel).
  const double sbh = static_cast<double>(m.seq_len) / plan.cp * plan.micro_batch * m.hidden;
  const double sp = plan.sequence_parallel ? plan.tp : 1.0;
  const double logits = rank_logits(m, plan.micro_batch, plan.tp, plan.cp);
  return 2.0 * act_bytes * sbh / sp + loss_kernel(plan).peak_bytes_per_logit * logits;
}

ChunkedStepActivations chunked_step_activations(const Model& m, const Plan& p, int64_t act_bytes,
                                                const LayerActivations& layer) {
  return ChunkedStepActivations{m.layers,         p.recompute != Recompute::none,
                                boundary_bytes(m, p, act_bytes), layer.kept, layer.full,
                                output_layer_activation_bytes(m, p, act_bytes), layer.backward_transient};
}

double chunked_step_non_model_bytes(const ChunkedStepActivations& a, bool forward, int layer) {
  const int L = a.layers;
  double bytes = a.boundary_bytes;
  if (forward) {
    bytes += std::clamp(layer + 1, 0, L) * a.stored_bytes;
    if (layer >= L) bytes += a.output_bytes;
  } else if (layer >= L) {
    bytes += L * a.stored_bytes + a.output_bytes;
  } else if (layer >= 0) {
    bytes += layer * a.stored_bytes + (a.recompute ? a.full_bytes : a.stored_bytes) + a.backward_transient_bytes;
  }
  return bytes;
}

double chunked_peak_non_model_bytes(const ChunkedStepActivations& a) {
  double peak = 0;
  for (int layer = -1; layer <= a.layers; ++layer)
    for (bool forward : {true, false}) peak = std::max(peak, chunked_step_non_model_bytes(a, forward, layer));
  return peak;
}

double boundary_bytes(const Model& m, const Plan& p, int64_t act_bytes) {
  return static_cast<double>(act_bytes) * m.seq_len / p.cp * p.micro_batch * m.hidden;
}

double pipeline_buffer_bytes(const Model& m, const Plan& p, int64_t act_bytes) {
  return p.pp > 1 ? 2 * boundary_bytes(m, p, act_bytes) : 0;
}

}  // namespace starfish

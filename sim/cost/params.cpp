#include "sim/cost/params.h"

#include <algorithm>

#include "sim/spec/pipeline_layout.h"

namespace starfish {
namespace {

int64_t norm_elements(const Model& m) { return m.norm == Norm::layernorm ? 2LL * m.hidden : int64_t{m.hidden}; }


// An MoE layer's MLP: the router (replicated: Megatron-core's TopKRouter weight), the shared
// experts (tensor-parallel like a dense MLP) and the routed experts, each kind as one tensor of
// all experts (Megatron-core's grouped-GEMM weights), biases where the model has them (GPT-OSS).
void add_moe_mlp(std::vector<ParamTensor>& out, const Model& m, int layer) {
  const int64_t h = m.hidden, fe = m.moe.expert_ffn_hidden, E = m.moe.experts, S = m.moe.shared_experts;
  const int64_t in_mats = m.activation == Activation::swiglu ? 2 : 1;
  const std::string p = "layers." + std::to_string(layer) + ".moe.";
  auto add = [&](const std::string& name, int64_t n, ParamRole role, bool split, bool expert) {
    out.push_back(ParamTensor{p + name, n, layer, role, split, expert});
  };
  add("router.weight", h * E, ParamRole::moe_router, false, false);
  if (m.bias) add("router.bias", E, ParamRole::moe_router, false, false);
  if (S > 0) {
    add("shared.in.weight", S * in_mats * h * fe, ParamRole::mlp_in, true, false);
    add("shared.out.weight", S * fe * h, ParamRole::mlp_out, true, false);
  }
  add("experts.in.weight", E * in_mats * h * fe, ParamRole::expert_in, false, true);
  if (m.bias) add("experts.in.bias", E * in_mats * fe, ParamRole::expert_in, false, true);
  add("experts.out.weight", E * fe * h, ParamRole::expert_out, false, true);
  if (m.bias) add("experts.out.bias", E * h, ParamRole::expert_out, false, true);
}

// Multi-head latent attention's projections (Megatron-core's MLASelfAttention; DeepSeek-V3's
// q_a_proj, q_a_layernorm, q_b_proj, kv_a_proj_with_mqa, kv_a_layernorm, kv_b_proj): the down
// projections and their norms whole on every TP rank, the up projections split by heads.
void add_mla(std::vector<ParamTensor>& out, const Model& m, int layer, const std::string& p) {
  const int64_t h = m.hidden, q = m.q_dim(), heads = m.heads;
  const Mla& a = m.mla;
  auto add = [&](const char* name, int64_t n, ParamRole role, bool split) {
    out.push_back(ParamTensor{p + name, n, layer, role, split});
  };
  if (a.q_lora_rank > 0) {
    add("attn.q_down.weight", h * a.q_lora_rank, ParamRole::attention_qkv, false);
    add("attn.q_norm.weight", a.q_lora_rank, ParamRole::norm, false);
    add("attn.q_up.weight", int64_t{a.q_lora_rank} * q, ParamRole::attention_qkv, true);
  } else {
    add("attn.q.weight", h * q, ParamRole::attention_qkv, true);
  }
  add("attn.kv_down.weight", h * (a.kv_lora_rank + a.qk_rope_head_dim), ParamRole::attention_qkv, false);
  add("attn.kv_norm.weight", a.kv_lora_rank, ParamRole::norm, false);
  add("attn.kv_up.weight", int64_t{a.kv_lora_rank} * heads * (a.qk_nope_head_dim + a.v_head_dim), ParamRole::attention_qkv,
      true);
}

// One transformer layer's tensors. Sizes are full (tp = 1) and split by the caller.
// A norm of the model's kind over `width` (its weight, and LayerNorm's bias), whole on every
// TP rank.
void add_norm(std::vector<ParamTensor>& out, const Model& m, int layer, const std::string& name, int64_t width) {
  out.push_back(ParamTensor{name + ".weight", width, layer, ParamRole::norm, false});
  if (m.norm == Norm::layernorm) out.push_back(ParamTensor{name + ".bias", width, layer, ParamRole::norm, false});
}

void add_attention(std::vector<ParamTensor>& out, const Model& m, int layer, const std::string& p) {
  const int64_t h = m.hidden, kv = m.kv_dim(), q = m.q_dim();
  auto add = [&](std::string name, int64_t n, ParamRole role, bool split) {
    out.push_back(ParamTensor{p + std::move(name), n, layer, role, split});
  };
  if (m.is_mla()) {
    add_mla(out, m, layer, p);
  } else {
    add("attn.qkv.weight", h * (q + 2 * kv), ParamRole::attention_qkv, true);
    if (m.has_qkv_bias()) add("attn.qkv.bias", q + 2 * kv, ParamRole::attention_qkv, true);
  }
  // One head_dim-wide weight each for queries and keys, shared by the heads (HF Qwen3RMSNorm(
  // head_dim); Megatron-core's q_layernorm/k_layernorm over kv_channels).
  if (m.qk_norm) {
    add_norm(out, m, layer, p + "attn.q_norm", m.qk_head_dim());
    add_norm(out, m, layer, p + "attn.k_norm", m.qk_head_dim());
  }
  add("attn.out.weight", int64_t{m.context_dim()} * h, ParamRole::attention_out, true);
  if (m.bias) add("attn.out.bias", h, ParamRole::attention_out, false);
}

// One transformer layer's tensors. Sizes are full (tp = 1) and split by the caller.
void add_layer(std::vector<ParamTensor>& out, const Model& m, int layer) {
  const int64_t h = m.hidden, f = m.ffn_hidden;
  const std::string p = "layers." + std::to_string(layer) + ".";
  auto add = [&](std::string name, int64_t n, ParamRole role, bool split) {
    out.push_back(ParamTensor{p + std::move(name), n, layer, role, split});
  };
  add_norm(out, m, layer, p + "attn_norm", h);
  add_attention(out, m, layer, p);
  if (m.post_norms) add_norm(out, m, layer, p + "attn_post_norm", h);
  if (!m.shared_input_norm) add_norm(out, m, layer, p + "mlp_norm", h);
  if (m.post_norms) add_norm(out, m, layer, p + "mlp_post_norm", h);
  const int64_t in_mats = m.activation == Activation::swiglu ? 2 : 1;  // SwiGLU: gate and up
  if (m.moe_layer(layer)) {
    add_moe_mlp(out, m, layer);
    return;
  }
  add("mlp.in.weight", in_mats * h * f, ParamRole::mlp_in, true);
  if (m.bias) add("mlp.in.bias", in_mats * f, ParamRole::mlp_in, true);
  add("mlp.out.weight", f * h, ParamRole::mlp_out, true);
  if (m.bias) add("mlp.out.bias", h, ParamRole::mlp_out, false);
}

}  // namespace

AttentionLinears attention_linears(const Model& m) {
  AttentionLinears a;
  const double h = m.hidden, q = m.q_dim();
  a.out_macs = static_cast<double>(m.context_dim()) * h;
  if (!m.is_mla()) {
    a.split_in_macs = h * (q + m.k_dim() + m.v_dim());
    return a;
  }
  const Mla& x = m.mla;
  const double heads = m.heads, q_lora = x.q_lora_rank, kv_lora = x.kv_lora_rank, rope = x.qk_rope_head_dim;
  a.replicated_in_macs = h * (q_lora + kv_lora + rope);
  a.split_in_macs = (q_lora > 0 ? q_lora : h) * q + kv_lora * heads * (x.qk_nope_head_dim + x.v_head_dim);
  a.latent_width = q_lora + kv_lora + rope;
  return a;
}

std::vector<int> stage_layers(const Model& model, const Shard& s) {
  // Megatron's assignment: virtual stage c (of pp*v, in model order) goes to stage c % pp;
  // sim/spec/pipeline_layout.h says how many layers each holds.
  std::vector<int> layers;
  for (int v = 0; v < s.virtual_stages; ++v) {
    const LayerRange r = virtual_stage_layer_range(model.layers, s.pp, s.virtual_stages, s.layout, s.stage, v);
    for (int l = r.first; l < r.first + r.count; ++l) layers.push_back(l);
  }
  return layers;
}

Shard plan_shard(const Plan& p, int stage) {
  return Shard{p.tp, p.pp, stage, p.virtual_stages, p.stage_layers, p.ep, p.expert_tp()};
}

std::vector<ParamTensor> parameter_tensors(const Model& m, const Shard& s) {
  std::vector<ParamTensor> all;
  const int64_t h = m.hidden;
  const bool first = s.stage == 0, last = s.stage == s.pp - 1;
  if (first) {
    all.push_back({"embed.word.weight", int64_t{m.vocab} * h, -1, ParamRole::word_embedding, true});
    if (m.position == PositionEmbedding::learned)
      all.push_back({"embed.position.weight", m.position_rows() * h, -1, ParamRole::position_embedding, false});
    if (m.embedding_norm) add_norm(all, m, -1, "embed.norm", h);
  }
  for (int l : stage_layers(m, s)) add_layer(all, m, l);
  if (last) {
    add_norm(all, m, m.layers, "final_norm", h);
    // An untied head always has its own matrix; a tied one needs a copy when it lives on
    // another stage than the embedding.
    if (!m.tied_embeddings || !first)
      all.push_back({m.tied_embeddings ? "head.word_embedding_copy" : "head.weight", int64_t{m.vocab} * h, m.layers,
                     ParamRole::output_head, true});
  }
  for (ParamTensor& t : all) {
    if (t.tp_split) t.elements = (t.elements + s.tp - 1) / s.tp;
    // experts / ep whole experts on this rank (make_job checks ep divides them), each split etp ways.
    if (t.expert) t.elements = (t.elements / s.ep + s.etp - 1) / s.etp;
  }
  return all;
}

int64_t word_embedding_params(const Model& m) { return int64_t{m.vocab} * m.hidden; }

ParamCount count_parameters(const Model& m) {
  ParamCount c;
  c.layers = m.layers;
  c.word_embedding = word_embedding_params(m);
  c.position_embedding = m.position == PositionEmbedding::learned ? m.position_rows() * m.hidden : 0;
  c.embedding_norm = m.embedding_norm ? norm_elements(m) : 0;
  Model dense = m;
  dense.moe = Moe{};
  std::vector<ParamTensor> one;
  add_layer(one, dense, 0);
  for (const auto& t : one) c.per_layer += t.elements;
  c.moe_layers = m.moe_layer_count();
  if (c.moe_layers > 0) {
    one.clear();
    const int first_moe = m.moe.first_dense_layers;
    add_layer(one, m, first_moe);
    for (const auto& t : one) {
      c.per_moe_layer += t.elements;
      if (t.expert) c.experts_per_moe_layer += t.elements;
    }
  }
  c.final_norm = norm_elements(m);
  c.output_head = m.tied_embeddings ? 0 : int64_t{m.vocab} * m.hidden;
  c.total = c.word_embedding + c.position_embedding + c.embedding_norm + c.layers_total() + c.final_norm + c.output_head;
  // Each token runs top_k of the experts' routed parameters.
  const int64_t idle_experts = m.is_moe() ? c.experts_per_moe_layer / m.moe.experts * (m.moe.experts - m.moe.top_k) : 0;
  c.active = c.total - int64_t{c.moe_layers} * idle_experts;
  return c;
}

int64_t moe_layer_expert_params(const Model& m, int ep, int etp) {
  if (!m.is_moe()) return 0;
  std::vector<ParamTensor> moe;
  add_moe_mlp(moe, m, m.moe.first_dense_layers);
  int64_t n = 0;
  for (const ParamTensor& t : moe)
    if (t.expert) n += (t.elements / ep + etp - 1) / etp;
  return n;
}

int64_t shard_parameters(const Model& model, const Shard& shard) {
  int64_t n = 0;
  for (const auto& t : parameter_tensors(model, shard)) n += t.elements;
  return n;
}

}  // namespace starfish

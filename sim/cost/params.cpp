#include "sim/cost/params.h"

#include <algorithm>

#include "sim/spec/pipeline_layout.h"

namespace starfish {
namespace {

int64_t norm_elements(const Model& m) { return m.norm == Norm::layernorm ? 2LL * m.hidden : int64_t{m.hidden}; }


// One transformer layer's tensors. Sizes are full (tp = 1) and split by the caller.
void add_layer(std::vector<ParamTensor>& out, const Model& m, int layer) {
  const int64_t h = m.hidden, f = m.ffn_hidden, kv = m.kv_dim();
  const std::string p = "layers." + std::to_string(layer) + ".";
  auto add = [&](std::string name, int64_t n, ParamRole role, bool split) {
    out.push_back(ParamTensor{p + std::move(name), n, layer, role, split});
  };
  add("attn_norm.weight", h, ParamRole::norm, false);
  if (m.norm == Norm::layernorm) add("attn_norm.bias", h, ParamRole::norm, false);
  add("attn.qkv.weight", h * (h + 2 * kv), ParamRole::attention_qkv, true);
  if (m.bias) add("attn.qkv.bias", h + 2 * kv, ParamRole::attention_qkv, true);
  add("attn.out.weight", h * h, ParamRole::attention_out, true);
  if (m.bias) add("attn.out.bias", h, ParamRole::attention_out, false);
  add("mlp_norm.weight", h, ParamRole::norm, false);
  if (m.norm == Norm::layernorm) add("mlp_norm.bias", h, ParamRole::norm, false);
  const int64_t in_mats = m.activation == Activation::swiglu ? 2 : 1;  // SwiGLU: gate and up
  add("mlp.in.weight", in_mats * h * f, ParamRole::mlp_in, true);
  if (m.bias) add("mlp.in.bias", in_mats * f, ParamRole::mlp_in, true);
  add("mlp.out.weight", f * h, ParamRole::mlp_out, true);
  if (m.bias) add("mlp.out.bias", h, ParamRole::mlp_out, false);
}

}  // namespace

std::vector<int> stage_layers(const Model& model, const Shard& s) {
  // Megatron's assignment: model chunk c (of pp*v, in model order) goes to stage c % pp;
  // sim/spec/pipeline_layout.h says how many layers each holds.
  std::vector<int> layers;
  for (int chunk = 0; chunk < s.virtual_stages; ++chunk) {
    const LayerRange r = chunk_layer_range(model.layers, s.pp, s.virtual_stages, s.layout, s.stage, chunk);
    for (int l = r.first; l < r.first + r.count; ++l) layers.push_back(l);
  }
  return layers;
}

Shard plan_shard(const Plan& p, int stage) { return Shard{p.tp, p.pp, stage, p.virtual_stages, p.stage_layers}; }

std::vector<ParamTensor> parameter_tensors(const Model& m, const Shard& s) {
  std::vector<ParamTensor> all;
  const int64_t h = m.hidden;
  const bool first = s.stage == 0, last = s.stage == s.pp - 1;
  if (first) {
    all.push_back({"embed.word.weight", int64_t{m.vocab} * h, -1, ParamRole::word_embedding, true});
    if (m.position == PositionEmbedding::learned)
      all.push_back({"embed.position.weight", int64_t{m.seq_len} * h, -1, ParamRole::position_embedding, false});
  }
  for (int l : stage_layers(m, s)) add_layer(all, m, l);
  if (last) {
    all.push_back({"final_norm.weight", h, m.layers, ParamRole::norm, false});
    if (m.norm == Norm::layernorm) all.push_back({"final_norm.bias", h, m.layers, ParamRole::norm, false});
    // An untied head always has its own matrix; a tied one needs a copy when it lives on
    // another stage than the embedding.
    if (!m.tied_embeddings || !first)
      all.push_back({m.tied_embeddings ? "head.word_embedding_copy" : "head.weight", int64_t{m.vocab} * h, m.layers,
                     ParamRole::output_head, true});
  }
  for (ParamTensor& t : all)
    if (t.tp_split) t.elements = (t.elements + s.tp - 1) / s.tp;
  return all;
}

ParamCount count_parameters(const Model& m) {
  ParamCount c;
  c.layers = m.layers;
  c.word_embedding = int64_t{m.vocab} * m.hidden;
  c.position_embedding = m.position == PositionEmbedding::learned ? int64_t{m.seq_len} * m.hidden : 0;
  std::vector<ParamTensor> one;
  add_layer(one, m, 0);
  for (const auto& t : one) c.per_layer += t.elements;
  c.final_norm = norm_elements(m);
  c.output_head = m.tied_embeddings ? 0 : int64_t{m.vocab} * m.hidden;
  c.total = c.word_embedding + c.position_embedding + c.per_layer * m.layers + c.final_norm + c.output_head;
  return c;
}

int64_t shard_parameters(const Model& model, const Shard& shard) {
  int64_t n = 0;
  for (const auto& t : parameter_tensors(model, shard)) n += t.elements;
  return n;
}

}  // namespace starfish

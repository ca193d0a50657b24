#include "exec/gpt_model.h"

#include <cmath>

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include "sim/spec/error.h"

namespace starfish::exec {
namespace {

// Model shape of a tensor from params.h, whose element counts it must reproduce.
std::vector<int64_t> shape_of(const ParamTensor& t, const Model& m) {
  const int64_t h = m.hidden, f = m.ffn_hidden, kv = m.kv_dim(), in_mats = m.activation == Activation::swiglu ? 2 : 1;
  const std::string& n = t.name;
  auto ends = [&](const char* s) { return n.size() >= std::char_traits<char>::length(s) && n.ends_with(s); };
  if (n == "embed.word.weight" || n == "head.weight" || n == "head.word_embedding_copy") return {m.vocab, h};
  if (n == "embed.position.weight") return {m.position_rows(), h};
  if (ends("attn.qkv.weight")) return {h + 2 * kv, h};
  if (ends("attn.qkv.bias")) return {h + 2 * kv};
  if (ends("attn.out.weight")) return {h, h};
  if (ends("mlp.in.weight")) return {in_mats * f, h};
  if (ends("mlp.in.bias")) return {in_mats * f};
  if (ends("mlp.out.weight")) return {h, f};
  return {h};  // norms and the biases of width hidden
}

uint64_t fnv1a(const std::string& s) {
  uint64_t x = 1469598103934665603ULL;
  for (unsigned char c : s) x = (x ^ c) * 1099511628211ULL;
  return x;
}

}  // namespace

Gpt::Gpt(Model model, std::optional<at::ScalarType> embedding_output)
    : model_(std::move(model)), embedding_output_(embedding_output) {
  if (model_.position != PositionEmbedding::learned)
    throw SpecError("model '" + model_.name + "': starfish-run implements learned position embeddings only, not RoPE");
  if (model_.ffn_hidden == 0) model_.ffn_hidden = 4 * model_.hidden;
  if (model_.kv_heads == 0) model_.kv_heads = model_.heads;
  for (const ParamTensor& t : parameter_tensors(model_)) {
    GptParam p{t.name, shape_of(t, model_), t.elements, t.role, t.layer};
    int64_t n = 1;
    for (int64_t d : p.shape) n *= d;
    if (n != t.elements)
      throw std::logic_error("gpt_model: shape of " + t.name + " has " + std::to_string(n) + " elements, params.h says " +
                             std::to_string(t.elements));
    params_.push_back(std::move(p));
  }
  segment_params_.resize(segments());
  for (const GptParam& p : params_) segment_params_[p.layer + 1].push_back(p.name);
  // A tied head computes with the word embedding: the head segment uses it a second time.
  if (model_.tied_embeddings) segment_params_.back().push_back("embed.word.weight");
}

const GptParam& Gpt::param(const std::string& name) const {
  for (const GptParam& p : params_)
    if (p.name == name) return p;
  throw std::out_of_range("gpt_model: no parameter named " + name);
}

int64_t Gpt::parameter_count() const {
  int64_t n = 0;
  for (const GptParam& p : params_) n += p.elements;
  return n;
}

std::string Gpt::segment_name(int segment) const {
  if (segment == 0) return "embed";
  if (segment == model_.layers + 1) return "head";
  return "layers." + std::to_string(segment - 1);
}

at::Tensor Gpt::norm(const at::Tensor& x, const at::Tensor& w, const at::Tensor* b) const {
  constexpr double eps = 1e-5;
  if (model_.norm == Norm::layernorm) return at::layer_norm(x, {model_.hidden}, w, *b, eps);
  return x * at::rsqrt(x.pow(2).mean(-1, true) + eps) * w;
}

at::Tensor Gpt::layer_forward(const at::Tensor& x, const std::vector<at::Tensor>& p) const {
  const bool ln = model_.norm == Norm::layernorm, bias = model_.bias;
  size_t i = 0;
  auto next = [&]() -> const at::Tensor& { return p.at(i++); };
  auto optional = [&](bool present) { return present ? next() : at::Tensor(); };
  const at::Tensor& n1w = next();
  const at::Tensor n1b = optional(ln);
  const at::Tensor& qkv_w = next();
  const at::Tensor qkv_b = optional(bias);
  const at::Tensor& out_w = next();
  const at::Tensor out_b = optional(bias);
  const at::Tensor& n2w = next();
  const at::Tensor n2b = optional(ln);
  const at::Tensor& in_w = next();
  const at::Tensor in_b = optional(bias);
  const at::Tensor& mo_w = next();
  const at::Tensor mo_b = optional(bias);

  const int64_t B = x.size(0), T = x.size(1), H = model_.hidden, nh = model_.heads, nkv = model_.kv_heads,
                hd = model_.head_dim(), kv = model_.kv_dim();
  // Attention.
  at::Tensor a = norm(x, n1w, &n1b);
  at::Tensor qkv = at::linear(a, qkv_w, qkv_b);
  at::Tensor q = qkv.narrow(-1, 0, H).reshape({B, T, nh, hd}).transpose(1, 2);
  at::Tensor k = qkv.narrow(-1, H, kv).reshape({B, T, nkv, hd}).transpose(1, 2);
  at::Tensor v = qkv.narrow(-1, H + kv, kv).reshape({B, T, nkv, hd}).transpose(1, 2);
  if (nkv != nh) {
    k = k.repeat_interleave(nh / nkv, 1);
    v = v.repeat_interleave(nh / nkv, 1);
  }
  at::Tensor scores = at::matmul(q, k.transpose(-2, -1)) * (1.0 / std::sqrt(double(hd)));
  const at::Tensor future = at::ones({T, T}, x.options().dtype(at::kBool)).triu(1);
  scores = scores.masked_fill(future, -std::numeric_limits<float>::infinity());
  at::Tensor att = at::softmax(scores, -1);
  at::Tensor y = at::matmul(att, v).transpose(1, 2).reshape({B, T, H});
  at::Tensor h = x + at::linear(y, out_w, out_b);
  // MLP.
  at::Tensor m = norm(h, n2w, &n2b);
  m = at::linear(m, in_w, in_b);
  if (model_.activation == Activation::gelu) {
    m = at::gelu(m, "tanh");
  } else {
    std::vector<at::Tensor> gate_up = m.chunk(2, -1);
    m = at::silu(gate_up[0]) * gate_up[1];
  }
  return h + at::linear(m, mo_w, mo_b);
}

at::Tensor Gpt::forward_segment(int segment, const at::Tensor& input, const std::vector<at::Tensor>& p,
                                const at::Tensor& targets) const {
  if (p.size() != segment_params(segment).size())
    throw std::logic_error("gpt_model: segment " + segment_name(segment) + " needs " +
                           std::to_string(segment_params(segment).size()) + " tensors, got " + std::to_string(p.size()));
  if (segment == 0) {
    const int64_t T = input.size(1);
    if (T > model_.seq_len)
      throw std::invalid_argument("gpt_model: sequence of " + std::to_string(T) + " tokens exceeds seq_len " +
                                  std::to_string(model_.seq_len));
    const at::Tensor h = at::embedding(p[0], input.to(p[0].device())) + p[1].narrow(0, 0, T);
    return h.to(input.device(), embedding_output_.value_or(h.scalar_type()));
  }
  if (segment <= model_.layers) return layer_forward(input, p);
  const bool ln = model_.norm == Norm::layernorm;
  const at::Tensor b = ln ? p[1] : at::Tensor();
  at::Tensor x = norm(input, p[0], &b);
  at::Tensor logits = at::linear(x, p.back());  // tied: the word embedding; else head.weight
  return at::cross_entropy_loss(logits.to(at::kFloat).reshape({-1, model_.vocab}), targets.reshape({-1}));
}

at::Tensor Gpt::initial_value(const GptParam& p, uint64_t seed) const {
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(seed ^ fnv1a(p.name));
  const bool is_bias = p.name.ends_with(".bias");
  if (p.role == ParamRole::norm) return is_bias ? at::zeros(p.shape) : at::ones(p.shape);
  if (is_bias) return at::zeros(p.shape);
  double std = 0.02;
  if (p.role == ParamRole::attention_out || p.role == ParamRole::mlp_out) std /= std::sqrt(2.0 * model_.layers);
  return at::empty(p.shape).normal_(0.0, std, gen);
}

}  // namespace starfish::exec

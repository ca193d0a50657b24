#include "sim/spec/hf_import.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>

#include "sim/spec/error.h"
#include "sim/spec/input_file.h"
#include "sim/spec/limits.h"
#include "sim/spec/json_reader.h"
#include "sim/spec/units.h"
#include "sim/spec/yaml_reader.h"  // require_utf8_text

namespace starfish {
namespace {

constexpr const char* kFamilies =
    "llama, mistral, qwen2, qwen3, gemma, gemma2, gemma3_text, phi3, falcon, gpt_neox, opt, bloom, gpt2, gpt_bigcode, "
    "mixtral, qwen3_moe, deepseek_v2, deepseek_v3, gpt_oss";

[[noreturn]] void fail_file(const SourceLoc& loc, const std::string& message) {
  throw SpecError(loc.to_string() + ": " + message);
}

// The top-level fields of a config.json, each error naming the field and where its value starts.
class JsonFields {
 public:
  JsonFields(const JsonValue& root, std::string file) : root_(root), file_(std::move(file)) {}

  bool has(const char* key) const { return get(key) != nullptr; }
  const JsonValue* value(const char* key) const { return get(key); }  // nullptr: absent or null

  // A positive integer up to `max` (the Model field's limit, limits.h).
  int integer(const char* key, int64_t max) const {
    if (!has(key)) fail_at(where(), key, "missing (required for this model_type)");
    const JsonValue& n = *get(key);
    if (!is_integer(key) || n.number < 1) fail_at(where(n), key, "expected a positive integer, got " + shown(n));
    if (n.number > static_cast<double>(max))
      fail_at(where(n), key, "must be at most " + std::to_string(max) + " (Starfish's limit), got " + shown(n));
    return static_cast<int>(n.number);
  }
  int integer_or(const char* key, int64_t max, int fallback) const { return has(key) ? integer(key, max) : fallback; }

  bool boolean_or(const char* key, bool fallback) const {
    if (!has(key)) return fallback;
    const JsonValue& n = *get(key);
    if (n.type != JsonValue::Type::boolean) fail_at(where(n), key, "expected true or false, got " + shown(n));
    return n.boolean;
  }

  // A whole number (written as one: "4096", not "4096.0").
  bool is_integer(const char* key) const {
    const JsonValue* n = get(key);
    return n && n->type == JsonValue::Type::number && n->integer;
  }
  long long integer_value(const char* key) const { return static_cast<long long>(get(key)->number); }

  // A number (rope_theta: 500000.0); a fallback when absent.
  double real_or(const char* key, double fallback) const {
    if (!has(key)) return fallback;
    const JsonValue& n = *get(key);
    if (n.type != JsonValue::Type::number || n.number < 0)
      fail_at(where(n), key, "expected a non-negative number, got " + shown(n));
    return n.number;
  }

  std::string text_or(const char* key, const std::string& fallback) const {
    if (!has(key)) return fallback;
    const JsonValue& n = *get(key);
    if (n.type != JsonValue::Type::string) fail_at(where(n), key, "expected a string");
    return n.string;
  }

  SourceLoc where(const JsonValue& n) const { return SourceLoc{file_, n.line, n.column}; }
  SourceLoc where(const char* key) const { return has(key) ? where(*get(key)) : where(); }
  SourceLoc where() const { return SourceLoc{file_, 1, 1}; }  // a field the file lacks: its top

 private:
  // A field that is present and not null (HF writes null for "not set": n_inner: null).
  const JsonValue* get(const char* key) const {
    const JsonValue* n = root_.find(key);
    return n && n->type != JsonValue::Type::null ? n : nullptr;
  }
  // A value as the user wrote it, for a message: 'big', '4096.5', or what kind of value it is.
  static std::string shown(const JsonValue& n) {
    switch (n.type) {
      case JsonValue::Type::string: return quote_value(n.string);
      case JsonValue::Type::number: return quote_value(units::format_number(n.number));
      case JsonValue::Type::boolean: return n.boolean ? "true" : "false";
      default: return "a structure";
    }
  }

  const JsonValue& root_;
  std::string file_;
};

// "meta-llama/Llama-2-7b-hf" -> "llama-2-7b-hf": Starfish names are file-name friendly.
std::string model_name(const JsonFields& f, const std::string& fallback) {
  std::string name = f.text_or("_name_or_path", "");
  if (const auto slash = name.find_last_of('/'); slash != std::string::npos) name = name.substr(slash + 1);
  if (name.empty()) name = fallback;
  std::string out;
  for (char c : name) {
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    else
      out += '-';
  }
  return out.empty() ? "imported" : out;
}

bool is_moe_type(const std::string& type) {
  return type == "mixtral" || type == "qwen3_moe" || type == "deepseek_v2" || type == "deepseek_v3" || type == "gpt_oss";
}

// Mixture-of-experts layouts the model format cannot hold, and expert keys in a dense family's
// config (a fork that added experts), refused naming the field.
void refuse_unknown_moe(const JsonFields& f, const std::string& type) {
  static const std::pair<const char*, const char*> kMoeTypes[] = {
      {"qwen2_moe", "its shared expert's sigmoid gate"},
      {"dbrx", "DBRX's clipped-QKV fused layout"},
      {"olmoe", "OLMoE's full-width q/k norms"},
      {"jamba", "Mamba layers"},
      {"phimoe", "PhiMoE's sparsemixer routing"},
      {"granitemoe", "Granite's scaled residuals"}};
  for (const auto& [t, why] : kMoeTypes)
    if (type == t)
      fail_at(f.where("model_type"), "model_type",
              "'" + type + "' is a mixture-of-experts model with " + why + ", which Starfish's model format does not hold");
  if (is_moe_type(type)) return;
  static const char* const kExpertKeys[] = {"num_local_experts", "num_experts", "n_routed_experts", "moe_intermediate_size",
                                            "num_experts_per_tok"};
  for (const char* key : kExpertKeys)
    if (f.has(key) && !(f.is_integer(key) && f.integer_value(key) <= 1))
      fail_at(f.where(key), key, "a mixture-of-experts key in a '" + type + "' config, whose layout has no experts");
}

// Each head is hidden / heads wide unless the config gives head_dim (Gemma 7B: 16 heads of 256,
// 4096 against hidden 3072): then the model file's head_dim, which sizes Q/K/V and the output
// projection (sim/cost/params.h).
void check_head_dim(const JsonFields& f, Model& m, const char* heads_key) {
  if (f.has("head_dim")) {
    const int head_dim = f.integer("head_dim", limits::kMaxHidden);
    if (int64_t{m.heads} * head_dim > limits::kMaxAttentionWidth)
      fail_at(f.where("head_dim"), "head_dim",
              std::to_string(m.heads) + " heads x " + std::to_string(head_dim) + " is above " +
                  std::to_string(limits::kMaxAttentionWidth) + ", the widest attention Starfish models");
    if (int64_t{m.heads} * head_dim != m.hidden) m.attention_head_dim = head_dim;
  } else if (m.hidden % m.heads != 0) {
    fail_at(f.where(heads_key), heads_key, std::to_string(m.heads) + " heads do not divide hidden " + std::to_string(m.hidden));
  }
  if (m.kv_heads > m.heads || m.heads % m.kv_heads != 0)
    fail_at(f.where("num_key_value_heads"), "num_key_value_heads",
            std::to_string(m.kv_heads) + " must divide heads " + std::to_string(m.heads));
}

// DeepSeek-V2/V3's multi-head latent attention (their config's q_lora_rank: null projects
// queries directly, DeepSeek-V2-Lite).
void import_mla(const JsonFields& f, Model& m, std::vector<std::string>& notes) {
  if (m.kv_heads != m.heads)
    fail_at(f.where("num_key_value_heads"), "num_key_value_heads",
            "multi-head latent attention projects keys and values for every head: expected " + std::to_string(m.heads));
  m.mla.q_lora_rank = f.has("q_lora_rank") ? f.integer("q_lora_rank", limits::kMaxHidden) : 0;
  m.mla.kv_lora_rank = f.integer("kv_lora_rank", limits::kMaxHidden);
  m.mla.qk_nope_head_dim = f.integer("qk_nope_head_dim", limits::kMaxHidden);
  m.mla.qk_rope_head_dim = f.integer("qk_rope_head_dim", limits::kMaxHidden);
  m.mla.v_head_dim = f.integer("v_head_dim", limits::kMaxHidden);
  if (f.integer_or("num_nextn_predict_layers", limits::kMaxLayers, 0) > 0)
    notes.push_back("num_nextn_predict_layers: the multi-token-prediction module is not imported (the main model only, "
                    "as DeepSeek's 671B counts it)");
}

// The experts' layout. The experts' key, and the expert FFN's (moe_intermediate_size where the
// family has a dense FFN besides: Qwen3-MoE, DeepSeek), per HF's config classes.
void import_experts(const JsonFields& f, const std::string& type, Model& m, std::vector<std::string>& notes) {
  const bool deepseek = type.rfind("deepseek", 0) == 0;
  const char* experts_key = deepseek ? "n_routed_experts" : type == "qwen3_moe" ? "num_experts" : "num_local_experts";
  m.moe.experts = f.integer(experts_key, limits::kMaxExperts);
  m.moe.top_k = f.integer("num_experts_per_tok", limits::kMaxExperts);
  if (m.moe.top_k > m.moe.experts)
    fail_at(f.where("num_experts_per_tok"), "num_experts_per_tok",
            "routes each token to " + std::to_string(m.moe.top_k) + " of only " + std::to_string(m.moe.experts) + " experts");
  m.moe.expert_ffn_hidden = f.has("moe_intermediate_size") ? f.integer("moe_intermediate_size", limits::kMaxFfnHidden)
                                                           : m.ffn_hidden;
  m.moe.shared_experts = f.has("n_shared_experts") ? f.integer("n_shared_experts", limits::kMaxExperts) : 0;
  if (deepseek) {
    // HF DeepseekV3: layer l is MoE when l >= first_k_dense_replace and l % moe_layer_freq == 0;
    // the model format's first MoE layer is then the first multiple of the frequency.
    const int every = f.integer_or("moe_layer_freq", limits::kMaxLayers, 1);
    const int first = f.integer_or("first_k_dense_replace", limits::kMaxLayers, 0);
    m.moe.every = every;
    m.moe.first_dense_layers = (first + every - 1) / every * every;
    if (type == "deepseek_v3")
      notes.push_back("the router's score-correction bias (e_score_correction_bias, not trained by gradient) is not "
                      "counted (" + std::to_string(int64_t{m.layers - m.moe.first_dense_layers} * m.moe.experts) +
                      " parameters under)");
  } else if (type == "qwen3_moe") {
    // HF Qwen3Moe: layer l is MoE when (l + 1) % decoder_sparse_step == 0, unless in mlp_only_layers.
    if (const JsonValue* only = f.value("mlp_only_layers"); only && !(only->type == JsonValue::Type::array && only->array.empty()))
      fail_at(f.where(*only), "mlp_only_layers", "dense layers among the MoE ones are not in Starfish's model format");
    m.moe.every = f.integer_or("decoder_sparse_step", limits::kMaxLayers, 1);
    m.moe.first_dense_layers = m.moe.every - 1;
  }
  const char* dense_key = deepseek ? "first_k_dense_replace" : "decoder_sparse_step";
  if (m.moe.first_dense_layers >= m.layers)
    fail_at(f.where(dense_key), dense_key, "leaves no mixture-of-experts layer of the " + std::to_string(m.layers));
  notes.push_back("experts dropless (capacity_factor 0): every routed token computed, Megatron-core's default");
}

// Which layers are full attention in HF's layer_types ("sliding_attention" / "full_attention",
// one a layer): n when they are layers n, 2n, ... (the model format's full_every), 0 when none is,
// -1 for another pattern.
int full_every_of_layer_types(const JsonFields& f, const JsonValue& types, int layers) {
  if (types.type != JsonValue::Type::array || static_cast<int64_t>(types.array.size()) != layers)
    fail_at(f.where(types), "layer_types", "expected one entry a layer (" + std::to_string(layers) + ")");
  int every = 0;
  for (int l = 0; l < layers; ++l) {
    const JsonValue& t = types.array[static_cast<size_t>(l)];
    if (t.type != JsonValue::Type::string || (t.string != "full_attention" && t.string != "sliding_attention"))
      fail_at(f.where(t), "layer_types", "expected \"full_attention\" or \"sliding_attention\"");
    if (t.string == "full_attention" && every == 0) every = l + 1;
  }
  for (int l = 0; l < layers && every > 0; ++l)
    if ((types.array[static_cast<size_t>(l)].string == "full_attention") != ((l + 1) % every == 0)) return -1;
  return every;
}

// Sliding-window attention as HF's config classes lay it out: layer_types where the config has
// it (transformers 4.53+), else by family -- Gemma 2 alternates from a windowed layer 0
// (Gemma2DecoderLayer: is_sliding = not layer_idx % 2), Gemma 3 has a full layer every
// sliding_window_pattern (default 6), Mistral, Mixtral and Phi-3 window every layer. Qwen2/3
// carry a window they use only with use_sliding_window, from layer max_window_layers on, which
// the format's pattern does not express: costed as full attention, an over-estimate.
void import_sliding_window(const JsonFields& f, const std::string& type, Model& m, std::vector<std::string>& notes) {
  if (!f.has("sliding_window")) return;
  const bool qwen = type.rfind("qwen", 0) == 0;
  if (qwen) {
    if (f.boolean_or("use_sliding_window", false))
      notes.push_back("Qwen's sliding window from layer max_window_layers on is costed as full causal attention: an "
                      "over-estimate of those layers' attention time");
    return;
  }
  int every = type == "gemma2" ? 2 : type == "gemma3_text" ? f.integer_or("sliding_window_pattern", limits::kMaxLayers, 6) : 0;
  if (const JsonValue* types = f.value("layer_types")) every = full_every_of_layer_types(f, *types, m.layers);
  if (every == 1) return;  // every layer full
  if (every < 0) {
    notes.push_back("layer_types mixes full and sliding-window layers in a pattern other than a full layer every n-th: "
                    "costed as full causal attention, an over-estimate");
    return;
  }
  m.sliding_window.tokens = f.integer("sliding_window", limits::kMaxSeqLen);
  m.sliding_window.full_every = every > m.layers ? 0 : every;
}

// The gated-MLP families' own layer details: Qwen2's q/k/v-only biases, Qwen3's and Gemma 3's
// per-head q/k norms, Gemma 2/3's norms after attention and the MLP.
void gated_family_details(const JsonFields& f, const std::string& type, Model& m, std::vector<std::string>& notes) {
  const bool attention_bias = f.boolean_or("attention_bias", false), mlp_bias = f.boolean_or("mlp_bias", false);
  m.bias = attention_bias || mlp_bias || type == "gpt_oss";  // GPT-OSS: attention, router and experts
  if (attention_bias != mlp_bias && type != "gpt_oss")
    notes.push_back("attention_bias and mlp_bias differ; Starfish's bias flag puts biases on every linear (" +
                    std::to_string(int64_t{m.layers} * (mlp_bias ? m.hidden + m.q_dim() + 2 * m.kv_dim()
                                                                 : 2 * m.ffn_hidden + m.hidden)) +
                    " parameters over)");
  // HF Qwen2Attention: q_proj, k_proj, v_proj with bias=True, o_proj without.
  if (type == "qwen2" && !m.bias) m.qkv_bias = true;
  m.qk_norm = type == "qwen3" || type == "qwen3_moe" || type == "gemma3_text";
  m.post_norms = type == "gemma2" || type == "gemma3_text";
  import_sliding_window(f, type, m, notes);
  if (f.has("attn_logit_softcapping")) notes.push_back("attention logit soft-capping is costed as plain softmax");
  if (type == "gpt_oss")
    notes.push_back("GPT-OSS's learned attention sinks (one scalar a head) are not counted (" +
                    std::to_string(int64_t{m.layers} * m.heads) + " parameters under)");
}

// LLaMA's layer: RMSNorm, RoPE, a gated MLP (SwiGLU; Gemma's GeGLU has the same three matrices
// and is costed as SwiGLU), no dropout. llama, mistral, qwen2, qwen3, gemma, gemma2, gemma3_text,
// phi3, and the MoE families built on it (mixtral, qwen3_moe, deepseek_v2/v3, gpt_oss).
Model import_gated(const JsonFields& f, const std::string& type, std::vector<std::string>& notes) {
  Model m;
  m.family = "llama";
  m.hidden = f.integer("hidden_size", limits::kMaxHidden);
  m.layers = f.integer("num_hidden_layers", limits::kMaxLayers);
  m.heads = f.integer("num_attention_heads", limits::kMaxHeads);
  m.kv_heads = f.integer_or("num_key_value_heads", limits::kMaxHeads, m.heads);
  m.ffn_hidden = f.integer("intermediate_size", limits::kMaxFfnHidden);
  m.vocab = f.integer("vocab_size", limits::kMaxVocab);
  const bool gemma = type.rfind("gemma", 0) == 0;
  const char* act_key = gemma && f.has("hidden_activation") ? "hidden_activation" : "hidden_act";
  const std::string act = f.text_or(act_key, gemma ? "gelu_pytorch_tanh" : "silu");
  const bool gated_gelu = gemma && act.rfind("gelu", 0) == 0;
  if (act != "silu" && act != "swiglu" && !gated_gelu)
    fail_at(f.where(act_key), act_key, "'" + act + "' is not supported for a LLaMA-style model (expected silu)");
  m.activation = Activation::swiglu;
  m.norm = Norm::rmsnorm;
  m.position = PositionEmbedding::rope;
  m.rope_base = f.real_or("rope_theta", 10000);
  m.tied_embeddings = f.boolean_or("tie_word_embeddings", gemma);  // Gemma ties; the others' configs say false
  if (type == "deepseek_v2" || type == "deepseek_v3") import_mla(f, m, notes);
  else check_head_dim(f, m, "num_attention_heads");
  gated_family_details(f, type, m, notes);
  if (is_moe_type(type)) import_experts(f, type, m, notes);
  if (f.has("rope_scaling")) notes.push_back("rope_scaling accepted: it changes no shape or cost");
  m.dropout = false;  // none of these families trains with dropout (attention_dropout 0.0)
  return m;
}

// The shape most families name alike: hidden_size, num_hidden_layers, num_attention_heads (as
// many KV heads), the FFN width under `ffn_key`, vocab_size.
Model standard_shape(const JsonFields& f, const char* ffn_key) {
  Model m;
  m.family = "gpt";
  m.hidden = f.integer("hidden_size", limits::kMaxHidden);
  m.layers = f.integer("num_hidden_layers", limits::kMaxLayers);
  m.heads = m.kv_heads = f.integer("num_attention_heads", limits::kMaxHeads);
  m.ffn_hidden = f.integer(ffn_key, limits::kMaxFfnHidden);
  m.vocab = f.integer("vocab_size", limits::kMaxVocab);
  return m;
}

// GPT-2 and GPT-NeoX name a GELU variant (gelu_new, gelu_fast, gelu_pytorch_tanh); the cost is one.
void require_gelu(const JsonFields& f, const char* key, const char* fallback) {
  const std::string act = f.text_or(key, fallback);
  if (act.rfind("gelu", 0) != 0) fail_at(f.where(key), key, "'" + act + "' is not supported (expected a gelu variant)");
}

// GPT-2's layer (LayerNorm, GELU, learned positions, biases, tied); gpt_bigcode adds multi-query
// attention (one KV head).
Model import_gpt2(const JsonFields& f, const std::string& type) {
  Model m;
  m.family = "gpt";
  m.hidden = f.integer("n_embd", limits::kMaxHidden);
  m.layers = f.integer("n_layer", limits::kMaxLayers);
  m.heads = f.integer("n_head", limits::kMaxHeads);
  m.kv_heads = type == "gpt_bigcode" && f.boolean_or("multi_query", true) ? 1 : m.heads;
  m.ffn_hidden = f.integer_or("n_inner", limits::kMaxFfnHidden, 4 * m.hidden);  // null: 4 x n_embd
  m.vocab = f.integer("vocab_size", limits::kMaxVocab);
  require_gelu(f, "activation_function", "gelu_new");
  m.activation = Activation::gelu;
  m.norm = Norm::layernorm;
  m.position = PositionEmbedding::learned;
  m.tied_embeddings = f.boolean_or("tie_word_embeddings", true);
  m.bias = true;
  m.dropout = true;  // resid_pdrop, embd_pdrop and attn_pdrop 0.1
  check_head_dim(f, m, "n_head");
  return m;
}

// The GPT-NeoX / Pythia layer: LayerNorm, GELU, rotary (on a fraction of each head: no
// parameters), biases, untied head; the parallel residual changes no shape.
Model import_gpt_neox(const JsonFields& f) {
  Model m = standard_shape(f, "intermediate_size");
  require_gelu(f, "hidden_act", "gelu");
  m.position = PositionEmbedding::rope;
  m.rope_base = f.real_or("rotary_emb_base", 10000);
  m.tied_embeddings = f.boolean_or("tie_word_embeddings", false);
  m.dropout = f.real_or("hidden_dropout", 0) > 0 || f.real_or("attention_dropout", 0) > 0;
  check_head_dim(f, m, "num_attention_heads");
  return m;
}

// ALiBi (BLOOM, some Falcons) adds a per-head bias to the scores and has no parameters; the
// model format knows learned and rotary positions, and RoPE is the one without parameters.
void alibi_as_rope(Model& m, std::vector<std::string>& notes) {
  m.position = PositionEmbedding::rope;
  notes.push_back("ALiBi positions modelled as RoPE (neither has parameters); an export writes rope");
}

Model import_falcon(const JsonFields& f, std::vector<std::string>& notes) {
  Model m;
  m.family = "gpt";
  m.hidden = f.integer("hidden_size", limits::kMaxHidden);
  m.layers = f.integer("num_hidden_layers", limits::kMaxLayers);
  m.heads = f.integer("num_attention_heads", limits::kMaxHeads);
  const bool new_arch = f.boolean_or("new_decoder_architecture", false);
  m.kv_heads = new_arch ? f.integer_or("num_kv_heads", limits::kMaxHeads, m.heads)
                        : f.boolean_or("multi_query", true) ? 1 : m.heads;
  m.ffn_hidden = f.integer_or("ffn_hidden_size", limits::kMaxFfnHidden, 4 * m.hidden);
  m.vocab = f.integer("vocab_size", limits::kMaxVocab);
  m.position = PositionEmbedding::rope;
  m.rope_base = f.real_or("rope_theta", 10000);
  if (f.boolean_or("alibi", false)) alibi_as_rope(m, notes);
  m.bias = f.boolean_or("bias", false);
  m.tied_embeddings = f.boolean_or("tie_word_embeddings", true);
  m.dropout = f.real_or("hidden_dropout", 0) > 0 || f.real_or("attention_dropout", 0) > 0;
  // HF FalconDecoderLayer: parallel attention reads input_layernorm's output in both branches;
  // the new decoder architecture (Falcon-40B/180B) has ln_attn and ln_mlp.
  m.shared_input_norm = f.boolean_or("parallel_attn", true) && !new_arch;
  check_head_dim(f, m, "num_attention_heads");
  return m;
}

Model import_opt(const JsonFields& f, std::vector<std::string>& notes) {
  Model m = standard_shape(f, "ffn_dim");
  if (f.has("word_embed_proj_dim") && f.integer("word_embed_proj_dim", limits::kMaxHidden) != m.hidden)
    fail_at(f.where("word_embed_proj_dim"), "word_embed_proj_dim",
            "an embedding projected to another width (OPT-350m) is not in Starfish's model format");
  const std::string act = f.text_or("activation_function", "relu");
  if (act != "relu" && act.rfind("gelu", 0) != 0)
    fail_at(f.where("activation_function"), "activation_function", "'" + act + "' is not supported (relu or gelu)");
  if (act == "relu") notes.push_back("OPT's ReLU MLP costed as GELU (same matrices; elementwise work differs)");
  // HF OPTLearnedPositionalEmbedding: max_position_embeddings + 2 rows (positions start at 2).
  m.max_positions = f.integer("max_position_embeddings", limits::kMaxSeqLen - 2) + 2;
  m.bias = f.boolean_or("enable_bias", true);
  m.tied_embeddings = f.boolean_or("tie_word_embeddings", true);
  m.dropout = f.real_or("dropout", 0.1) > 0 || f.real_or("attention_dropout", 0) > 0;
  check_head_dim(f, m, "num_attention_heads");
  return m;
}

Model import_bloom(const JsonFields& f, std::vector<std::string>& notes) {
  Model m;
  m.family = "gpt";
  const char* hidden_key = f.has("n_embed") ? "n_embed" : "hidden_size";
  const char* heads_key = f.has("num_attention_heads") ? "num_attention_heads" : "n_head";
  m.hidden = f.integer(hidden_key, limits::kMaxHidden);
  m.layers = f.integer(f.has("num_hidden_layers") ? "num_hidden_layers" : "n_layer", limits::kMaxLayers);
  m.heads = m.kv_heads = f.integer(heads_key, limits::kMaxHeads);
  m.ffn_hidden = 4 * m.hidden;
  m.vocab = f.integer("vocab_size", limits::kMaxVocab);
  alibi_as_rope(m, notes);
  m.embedding_norm = true;  // HF BloomModel's word_embeddings_layernorm
  m.tied_embeddings = f.boolean_or("tie_word_embeddings", true);
  m.dropout = f.real_or("hidden_dropout", 0) > 0 || f.real_or("attention_dropout", 0) > 0;
  check_head_dim(f, m, heads_key);
  return m;
}

// The layout of `type`, and the key of its learned-position table ("" for rotary models).
Model import_layout(const JsonFields& f, const std::string& type, std::vector<std::string>& notes, const char*& table_key) {
  table_key = "";
  if (type == "llama" || type == "mistral" || type == "qwen2" || type == "qwen3" || type == "gemma" || type == "gemma2" ||
      type == "gemma3_text" || type == "phi3" || is_moe_type(type))
    return import_gated(f, type, notes);
  if (type == "gpt2" || type == "gpt_bigcode") {
    table_key = f.has("n_positions") ? "n_positions" : "n_ctx";
    return import_gpt2(f, type);
  }
  if (type == "gpt_neox") return import_gpt_neox(f);
  if (type == "falcon" || type == "RefinedWeb" || type == "RefinedWebModel") return import_falcon(f, notes);
  if (type == "opt") {
    table_key = "max_position_embeddings";
    return import_opt(f, notes);
  }
  if (type == "bloom") return import_bloom(f, notes);
  if (type == "gemma3")
    fail_at(f.where("model_type"), "model_type",
            "'gemma3' is the multimodal wrapper: import its text_config as a file of its own (model_type gemma3_text)");
  if (type.empty())
    fail_at(f.where(), "model_type", "missing (needed to know the layout: " + std::string(kFamilies) + ")");
  fail_at(f.where("model_type"), "model_type", "'" + type + "' is not supported (" + std::string(kFamilies) + ")");
}

// The training sequence: the user's, else 4096 -- capped by a learned-position table.
int training_seq_len(const JsonFields& f, const char* table_key, const HfImportOptions& options,
                     std::vector<std::string>& notes) {
  const int table = *table_key ? f.integer(table_key, limits::kMaxSeqLen) : 0;
  if (options.seq_len) {
    if (*options.seq_len < 1 || *options.seq_len > limits::kMaxSeqLen)
      throw SpecError("--seq: expected 1 to " + std::to_string(limits::kMaxSeqLen) + ", got " + std::to_string(*options.seq_len));
    if (table > 0 && *options.seq_len > table)
      fail_at(f.where(table_key), table_key,
              "the model's learned positions end at " + std::to_string(table) + " tokens, below --seq " +
                  std::to_string(*options.seq_len));
    return *options.seq_len;
  }
  if (table > 0 && table < kDefaultImportSeqLen) {
    notes.push_back("seq_len " + std::to_string(table) + ": the default " + std::to_string(kDefaultImportSeqLen) +
                    " capped by the learned positions (" + table_key + "); --seq sets it");
    return table;
  }
  notes.push_back("seq_len " + std::to_string(kDefaultImportSeqLen) +
                  ": the default training sequence (not the model's maximum context); --seq sets it");
  return kDefaultImportSeqLen;
}

}  // namespace

HfImport import_hf_config(const std::string& json, const std::string& file, const std::string& fallback_name,
                          const HfImportOptions& options) {
  require_utf8_text(json, file);  // a one-line error naming the first bad byte
  const JsonValue root = parse_json(json, file);
  if (root.type != JsonValue::Type::object) fail_file(SourceLoc{file, 1, 1}, "expected a JSON object (a Hugging Face config.json)");
  const JsonFields f(root, file);
  const std::string type = f.text_or("model_type", "");
  refuse_unknown_moe(f, type);
  HfImport r;
  const char* table_key = "";
  r.model = import_layout(f, type, r.notes, table_key);
  r.model.seq_len = training_seq_len(f, table_key, options, r.notes);
  // The learned position table keeps its rows, whatever sequence the model trains on.
  if (*table_key && r.model.max_positions == 0 && f.integer(table_key, limits::kMaxSeqLen) > r.model.seq_len)
    r.model.max_positions = f.integer(table_key, limits::kMaxSeqLen);
  r.model.name = model_name(f, fallback_name);
  r.model.provenance.file = file;
  return r;
}

HfImport import_hf_config_file(const std::string& path, const HfImportOptions& options) {
  if (path == "-") return import_hf_config(read_input_file(path), input_name(path), "imported", options);
  const std::string text = read_input_file(path);
  const std::filesystem::path p(path);
  // A downloaded model's folder names it (Llama-2-7b-hf/config.json); a renamed file its stem.
  std::string fallback = p.filename() == "config.json" ? p.parent_path().filename().string() : "";
  if (fallback.empty()) fallback = p.stem().string();
  return import_hf_config(text, path, fallback, options);
}

}  // namespace starfish

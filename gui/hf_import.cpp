#include "gui/hf_import.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "sim/spec/error.h"
#include "sim/spec/input_file.h"
#include "sim/spec/limits.h"
#include "sim/spec/yaml_reader.h"

namespace starfish::gui {
namespace {

[[noreturn]] void fail_file(const SourceLoc& loc, const std::string& message) {
  throw SpecError(loc.to_string() + ": " + message);
}

class JsonFields {
 public:
  JsonFields(const YAML::Node& root, std::string file) : root_(root), file_(std::move(file)) {}

  bool has(const char* key) const { return root_[key] && !root_[key].IsNull(); }

  // A positive integer up to `max` (the Model field's limit, limits.h).
  int integer(const char* key, int64_t max) const {
    if (!has(key)) fail_at(where(), key, "missing (required for this model_type)");
    const YAML::Node n = root_[key];
    long long v = 0;
    if (!n.IsScalar() || !YAML::convert<long long>::decode(n, v) || v < 1)
      fail_at(where(n), key, "expected a positive integer, got " + (n.IsScalar() ? quote_value(n.Scalar()) : "a structure"));
    if (v > max) fail_at(where(n), key, "must be at most " + std::to_string(max) + " (Starfish's limit), got " + quote_value(n.Scalar()));
    return static_cast<int>(v);
  }
  int integer_or(const char* key, int64_t max, int fallback) const { return has(key) ? integer(key, max) : fallback; }

  bool boolean_or(const char* key, bool fallback) const {
    if (!has(key)) return fallback;
    const YAML::Node n = root_[key];
    bool v = false;
    if (!n.IsScalar() || !YAML::convert<bool>::decode(n, v))
      fail_at(where(n), key, "expected true or false, got " + (n.IsScalar() ? quote_value(n.Scalar()) : "a structure"));
    return v;
  }

  std::string text_or(const char* key, const std::string& fallback) const {
    if (!has(key)) return fallback;
    const YAML::Node n = root_[key];
    if (!n.IsScalar()) fail_at(where(n), key, "expected a string");
    return n.Scalar();
  }

  SourceLoc where(const YAML::Node& n) const { return SourceLoc{file_, n.Mark().line + 1, n.Mark().column + 1}; }
  SourceLoc where(const char* key) const { return has(key) ? where(root_[key]) : where(); }
  SourceLoc where() const { return SourceLoc{file_, 1, 1}; }  // a field the file lacks: its top

 private:
  YAML::Node root_;
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

Model import_llama(const JsonFields& f) {
  Model m;
  m.family = "llama";
  m.hidden = f.integer("hidden_size", limits::kMaxHidden);
  m.layers = f.integer("num_hidden_layers", limits::kMaxLayers);
  m.heads = f.integer("num_attention_heads", limits::kMaxHeads);
  m.kv_heads = f.integer_or("num_key_value_heads", limits::kMaxHeads, m.heads);
  m.ffn_hidden = f.integer("intermediate_size", limits::kMaxFfnHidden);
  m.seq_len = f.integer("max_position_embeddings", limits::kMaxSeqLen);
  m.vocab = f.integer("vocab_size", limits::kMaxVocab);
  const std::string act = f.text_or("hidden_act", "silu");
  if (act != "silu" && act != "swiglu")
    fail_at(f.where("hidden_act"), "hidden_act", "'" + act + "' is not supported for a LLaMA-style model (expected silu)");
  m.activation = Activation::swiglu;
  m.norm = Norm::rmsnorm;
  m.position = PositionEmbedding::rope;
  m.tied_embeddings = f.boolean_or("tie_word_embeddings", false);
  m.bias = f.boolean_or("attention_bias", false) || f.boolean_or("mlp_bias", false);
  m.dropout = false;  // LLaMA and Mistral train without dropout (their configs' attention_dropout is 0.0)
  return m;
}

Model import_gpt2(const JsonFields& f) {
  Model m;
  m.family = "gpt";
  m.hidden = f.integer("n_embd", limits::kMaxHidden);
  m.layers = f.integer("n_layer", limits::kMaxLayers);
  m.heads = f.integer("n_head", limits::kMaxHeads);
  m.kv_heads = m.heads;
  m.ffn_hidden = f.integer_or("n_inner", limits::kMaxFfnHidden, 4 * m.hidden);  // 4 x the hidden limit is the FFN limit
  m.seq_len = f.has("n_positions") ? f.integer("n_positions", limits::kMaxSeqLen) : f.integer("n_ctx", limits::kMaxSeqLen);
  m.vocab = f.integer("vocab_size", limits::kMaxVocab);
  const std::string act = f.text_or("activation_function", "gelu_new");
  if (act.rfind("gelu", 0) != 0)
    fail_at(f.where("activation_function"), "activation_function", "'" + act + "' is not supported (expected a gelu variant)");
  m.activation = Activation::gelu;
  m.norm = Norm::layernorm;
  m.position = PositionEmbedding::learned;
  m.tied_embeddings = f.boolean_or("tie_word_embeddings", true);
  m.bias = true;
  m.dropout = true;  // GPT-2: resid_pdrop, embd_pdrop and attn_pdrop 0.1
  return m;
}

}  // namespace

Model import_hf_config(const std::string& json, const std::string& file, const std::string& fallback_name) {
  require_utf8_text(json, file);  // JSON is Unicode text; yaml-cpp can loop on invalid bytes
  YAML::Node root;
  try {
    root = YAML::Load(json);
  } catch (const YAML::Exception& e) {
    fail_file(SourceLoc{file, std::max(1, e.mark.line + 1), std::max(1, e.mark.column + 1)}, "not valid JSON: " + e.msg);
  }
  if (!root.IsMap()) fail_file(SourceLoc{file, 1, 1}, "expected a JSON object (a Hugging Face config.json)");
  const JsonFields f(root, file);
  const std::string type = f.text_or("model_type", "");
  Model m;
  if (type == "llama" || type == "mistral")
    m = import_llama(f);
  else if (type == "gpt2")
    m = import_gpt2(f);
  else if (type.empty())
    fail_at(f.where(), "model_type", "missing (needed to know the layout: llama, mistral or gpt2)");
  else
    fail_at(f.where("model_type"), "model_type", "'" + type + "' is not supported (llama, mistral, gpt2)");
  m.name = model_name(f, fallback_name);
  m.provenance.file = file;
  const char* heads_key = type == "gpt2" ? "n_head" : "num_attention_heads";
  if (m.hidden % m.heads != 0)
    fail_at(f.where(heads_key), heads_key,
            std::to_string(m.heads) + " heads do not divide hidden " + std::to_string(m.hidden));
  if (m.heads % m.kv_heads != 0)
    fail_at(f.where("num_key_value_heads"), "num_key_value_heads",
            std::to_string(m.kv_heads) + " must divide heads " + std::to_string(m.heads));
  return m;
}

Model import_hf_config_file(const std::string& path) {
  const std::string text = read_input_file(path);
  const std::filesystem::path p(path);
  std::string fallback = p.parent_path().filename().string();
  if (fallback.empty()) fallback = p.stem().string();
  return import_hf_config(text, path, fallback);
}

}  // namespace starfish::gui

#pragma once
// A Hugging Face `config.json` as a Starfish Model. Qt-free on purpose: it is plain spec
// conversion (yaml-cpp reads JSON, which is a subset of YAML's flow style), testable without a
// display and reusable by a CLI verb later.
//
// Mapping (everything else in the file -- dropout, eps values, token ids, dtype -- is ignored):
//   llama, mistral: hidden_size, num_hidden_layers, num_attention_heads, num_key_value_heads
//     (default: heads), intermediate_size, max_position_embeddings, vocab_size; hidden_act silu
//     -> swiglu; RMSNorm, RoPE, tie_word_embeddings (default false), no biases unless
//     attention_bias or mlp_bias is true (then bias = true: Model has one flag for all linears).
//   gpt2: n_embd, n_layer, n_head, n_positions (or n_ctx), vocab_size, n_inner (null: 4 x
//     n_embd); GELU, LayerNorm, learned positions, tied embeddings, biases.
// Any other model_type is refused: guessing a layout from key names would give a wrong model
// silently.
#include <string>

#include "sim/spec/model.h"

namespace starfish::gui {

// `json` is the file's text; `file` names it in errors ("config.json:3:5: field
// 'num_attention_heads': ..."); `fallback_name` is used when the file has no _name_or_path.
// Throws SpecError for malformed JSON, a missing or non-integer field, an unsupported
// model_type or hidden_act, or shapes that do not divide (heads into hidden, kv heads into heads).
Model import_hf_config(const std::string& json, const std::string& file, const std::string& fallback_name);

// Reads the file and imports it; the fallback name is the file's folder ("Llama-2-7b-hf").
Model import_hf_config_file(const std::string& path);

}  // namespace starfish::gui

#pragma once
// A Hugging Face `config.json` as a Starfish Model: the one home of this conversion, used by
// `starfish import-hf` and the GUI's model editor. Plain spec conversion over the JSON reader
// (json_reader.h: nlohmann::json's parser, with line:column for errors).
//
// Families (model_type): llama (1-3.x, rope_scaling accepted: it changes no shape or cost),
// mistral, qwen2 (qkv_bias), qwen3 (qk_norm), gemma, gemma2 (post_norms), gemma3_text (both),
// phi3, falcon (shared_input_norm for the parallel layer), gpt_neox, opt (max_positions with its
// offset), bloom (embedding_norm), gpt2, gpt_bigcode; and the mixture-of-experts families
// mixtral, qwen3_moe, deepseek_v2/v3 (MLA) and gpt_oss, with their experts, shared experts and
// dense layers. Each imports to its published parameter count; what the model format does not
// hold (GPT-OSS's attention sinks, DeepSeek-V3's router bias) is said in `notes` with its
// count. Layouts the format cannot hold (qwen2_moe's shared-expert gate, dense layers among MoE
// ones) are refused in one line naming the field, never approximated silently.
//
// The training sequence length is the user's (`seq_len`), 4096 by default -- never the model's
// max_position_embeddings (an imported Llama-3.1 would train at 131072 tokens). A model with
// learned position embeddings cannot train beyond its table: the default is capped there (and
// said in `notes`), a larger `seq_len` is refused.
#include <optional>
#include <string>
#include <vector>

#include "sim/spec/model.h"

namespace starfish {

inline constexpr int kDefaultImportSeqLen = 4096;

struct HfImportOptions {
  std::optional<int> seq_len;  // none: kDefaultImportSeqLen (capped by learned positions)
};

struct HfImport {
  Model model;
  std::vector<std::string> notes;  // what the user should know: the sequence length chosen, ...
};

// `json` is the file's text; `file` names it in errors ("config.json:3:5: field
// 'num_attention_heads': ..."); `fallback_name` is used when the file has no _name_or_path.
// Throws SpecError for malformed JSON, a missing or non-integer field, an unsupported
// model_type, activation or layout, or shapes that do not divide.
HfImport import_hf_config(const std::string& json, const std::string& file, const std::string& fallback_name,
                          const HfImportOptions& options = {});

// Reads the file ("-": standard input) and imports it; the fallback name is the folder of a
// config.json ("Llama-2-7b-hf"), else the file's stem.
HfImport import_hf_config_file(const std::string& path, const HfImportOptions& options = {});

}  // namespace starfish

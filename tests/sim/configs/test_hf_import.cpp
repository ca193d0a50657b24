// Hugging Face config.json import (sim/spec/hf_import.h) over real key sets of each dense family
// (tests/fixtures/hf/), against the families' published parameter counts.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include "sim/cost/params.h"
#include "sim/spec/error.h"
#include "sim/spec/hf_import.h"
#include "sim/spec/spec_io.h"

namespace starfish {
namespace {

const std::string kFixtures = std::string(STARFISH_SOURCE_DIR) + "/tests/fixtures/hf/";

std::string fixture_text(const std::string& name) {
  std::ifstream in(kFixtures + name);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A fixture, or `text` in its place when given.
HfImport import_fixture(const std::string& name, HfImportOptions options = {}, const std::string& text = "") {
  return import_hf_config(text.empty() ? fixture_text(name) : text, "config.json", "fallback", options);
}

std::string error_of(const std::string& json, HfImportOptions options = {}) {
  try {
    import_hf_config(json, "config.json", "fallback", options);
  } catch (const SpecError& e) {
    return e.what();
  }
  return "no error";
}

// `text` with its first `from` replaced by `to`.
std::string with(std::string text, const std::string& from, const std::string& to) {
  return text.replace(text.find(from), from.size(), to);
}

// Published counts (the model cards / safetensors totals). Where Starfish's layer differs by a
// few tensors the import says so in a note, and the difference is stated here exactly.
struct Family {
  const char* fixture;
  int64_t published;
  int64_t starfish_minus_published;  // 0: exact
};
const Family kFamilies[] = {
    {"llama-2-7b.json", 6738415616, 0},
    {"llama-3.1-8b.json", 8030261248, 0},
    {"mistral-7b-v0.1.json", 7241732096, 0},
    {"qwen2-7b.json", 7615616512, 0},  // biases on q/k/v alone (qkv_bias)
    {"qwen3-8b.json", 8190735360, 0},  // per-head q/k norms (qk_norm)
    {"gemma-2b.json", 2506172416, 0},
    {"gemma-7b.json", 8537680896, 0},  // 16 heads of 256 on hidden 3072: the model's head_dim
    {"gemma-2-9b.json", 9241705984, 0},  // four norms a layer (post_norms)
    {"gemma-3-1b.json", 999885952, 0},   // post_norms and qk_norm
    {"phi-3-mini-4k.json", 3821079552, 0},
    {"falcon-7b.json", 6921720704, 0},  // one LayerNorm for parallel attention and MLP (shared_input_norm)
    {"gpt-neox-20b.json", 20554567680, 0},
    {"opt-1.3b.json", 1315758080, 0},  // 2050 position rows (max_positions)
    {"bloom-560m.json", 559214592, 0},  // the embedding's LayerNorm (embedding_norm)
    {"gpt2.json", 124439808, 0},
    {"gpt-bigcode-santacoder.json", 1124886528, 0},
    // DeepSeek-V2-Lite (DeepSeek-AI 2024, "DeepSeek-V2", Appendix B: 15.7B total): MLA with
    // direct queries (q_lora_rank null), 2 shared + 64 routed experts, the first layer dense.
    {"deepseek-v2-lite.json", 15706484224, 0},
    // GPT-OSS's 64 attention-sink scalars a layer are not in the model format (OpenAI: 116.83B).
    {"gpt-oss-120b.json", 116829156672, -36 * 64},
};

TEST(HfImport, EveryFamilyWithItsPublishedParameterCount) {
  for (const Family& f : kFamilies) {
    SCOPED_TRACE(f.fixture);
    const HfImport r = import_fixture(f.fixture);
    EXPECT_EQ(count_parameters(r.model).total - f.published, f.starfish_minus_published);
    bool stated = false;  // "... (290816 parameters over)"
    for (const std::string& n : r.notes) stated = stated || n.find(" parameters ") != std::string::npos;
    EXPECT_EQ(f.starfish_minus_published != 0, stated) << "a difference from the published count is stated in a note";
    // The imported model saves as a model file that loads back to the same value.
    EXPECT_EQ(parse_model_text(to_yaml(r.model)), r.model);
  }
}

TEST(HfImport, Llama2MatchesTheBundledModel) {
  const Model m = import_fixture("llama-2-7b.json").model;
  const Model bundled = load_model(std::string(STARFISH_SOURCE_DIR) + "/configs/models/llama2-7b.yaml");
  EXPECT_EQ(m.name, "llama-2-7b-hf");
  Model same = m;
  same.name = bundled.name;
  EXPECT_EQ(same, bundled);  // every field (provenance is not part of the value)
}

TEST(HfImport, SequenceLengthIsTheTrainingOneNeverTheMaximumContext) {
  const HfImport llama = import_fixture("llama-3.1-8b.json");  // max_position_embeddings 131072
  EXPECT_EQ(llama.model.seq_len, 4096);
  EXPECT_EQ(llama.model.rope_base, 500000);
  EXPECT_EQ(llama.model.kv_heads, 8);
  EXPECT_NE(llama.notes.back().find("seq_len 4096: the default training sequence"), std::string::npos);
  EXPECT_EQ(import_fixture("llama-3.1-8b.json", {8192}).model.seq_len, 8192);
  // Learned positions: the default stops at the table, a longer --seq is refused.
  EXPECT_EQ(import_fixture("gpt2.json").model.seq_len, 1024);
  EXPECT_EQ(error_of(fixture_text("gpt2.json"), {2048}),
            "config.json:15:18: field 'n_positions': the model's learned positions end at 1024 tokens, below --seq 2048");
}

TEST(HfImport, HeadDimOtherThanHiddenOverHeadsIsTheModelsHeadDim) {
  EXPECT_EQ(import_fixture("gemma-7b.json").model.attention_head_dim, 256);
  EXPECT_EQ(import_fixture("gemma-7b.json").model.q_dim(), 4096);
  EXPECT_EQ(import_fixture("gemma-2b.json").model.attention_head_dim, 0);  // 8 heads of 256 = hidden 2048
  // Heads that do not divide hidden need the config's head_dim.
  EXPECT_EQ(error_of(with(with(fixture_text("gemma-7b.json"), "\"head_dim\": 256,", ""), "\"num_attention_heads\": 16",
                          "\"num_attention_heads\": 7")),
            "config.json:10:26: field 'num_attention_heads': 7 heads do not divide hidden 3072");
  EXPECT_EQ(error_of(with(fixture_text("gemma-7b.json"), "\"head_dim\": 256", "\"head_dim\": 131072")),
            "config.json:4:15: field 'head_dim': 16 heads x 131072 is above 131072, the widest attention Starfish models");
}

TEST(HfImport, LayoutDetailsOfEachFamily) {
  EXPECT_EQ(import_fixture("gpt-bigcode-santacoder.json").model.kv_heads, 1);  // multi-query
  EXPECT_EQ(import_fixture("falcon-7b.json").model.kv_heads, 1);
  EXPECT_TRUE(import_fixture("gemma-2b.json").model.tied_embeddings);
  EXPECT_FALSE(import_fixture("gpt-neox-20b.json").model.tied_embeddings);
  EXPECT_FALSE(import_fixture("qwen2-7b.json").model.bias);
  EXPECT_TRUE(import_fixture("qwen2-7b.json").model.qkv_bias);
  EXPECT_TRUE(import_fixture("qwen3-8b.json").model.qk_norm);
  EXPECT_TRUE(import_fixture("gemma-2-9b.json").model.post_norms);
  EXPECT_FALSE(import_fixture("gemma-2-9b.json").model.qk_norm);
  EXPECT_TRUE(import_fixture("falcon-7b.json").model.shared_input_norm);
  EXPECT_TRUE(import_fixture("bloom-560m.json").model.embedding_norm);
  EXPECT_EQ(import_fixture("opt-1.3b.json").model.max_positions, 2050);  // 2048 + OPT's offset of 2
  EXPECT_EQ(import_fixture("gpt2.json").model.max_positions, 0);         // the table is the sequence
  EXPECT_EQ(import_fixture("gpt2.json", {512}).model.max_positions, 1024);  // a shorter sequence keeps the table
  EXPECT_FALSE(import_fixture("mistral-7b-v0.1.json").model.dropout);
  EXPECT_TRUE(import_fixture("gpt2.json").model.dropout);
}

// Sliding windows as each family lays them out (HF's decoder layers): every layer (Mistral v0.1,
// Phi-3), every other from a windowed layer 0 (Gemma 2; GPT-OSS's layer_types), a full layer
// every sliding_window_pattern-th (Gemma 3); Qwen's unused window imports as none.
TEST(HfImport, SlidingWindowsAsEachFamilyLaysThemOut) {
  EXPECT_EQ(import_fixture("mistral-7b-v0.1.json").model.sliding_window, (SlidingWindow{4096, 0}));
  EXPECT_EQ(import_fixture("phi-3-mini-4k.json").model.sliding_window, (SlidingWindow{2047, 0}));
  EXPECT_EQ(import_fixture("gemma-2-9b.json").model.sliding_window, (SlidingWindow{4096, 2}));
  EXPECT_EQ(import_fixture("gemma-3-1b.json").model.sliding_window, (SlidingWindow{512, 6}));
  EXPECT_EQ(import_fixture("gpt-oss-120b.json").model.sliding_window, (SlidingWindow{128, 2}));
  EXPECT_EQ(import_fixture("qwen2-7b.json").model.sliding_window, SlidingWindow{});  // use_sliding_window: false
  EXPECT_EQ(import_fixture("llama-2-7b.json").model.sliding_window, SlidingWindow{});
  // A layer_types pattern other than "a full layer every n-th" is costed as full attention, said.
  const std::string oss = fixture_text("gpt-oss-120b.json");
  const std::string odd = with(oss, "[\"sliding_attention\", \"full_attention\"", "[\"full_attention\", \"full_attention\"");
  const HfImport r = import_hf_config(odd, "config.json", "x");
  EXPECT_EQ(r.model.sliding_window, SlidingWindow{});
  bool said = false;
  for (const std::string& n : r.notes) said = said || n.find("costed as full causal attention") != std::string::npos;
  EXPECT_TRUE(said);
  EXPECT_EQ(error_of(with(oss, "[\"sliding_attention\", \"full_attention\"", "[\"full_attention\"")),
            "config.json:13:18: field 'layer_types': expected one entry a layer (36)");
  EXPECT_EQ(error_of(with(oss, "[\"sliding_attention\", \"full_attention\"", "[\"local\", \"full_attention\"")),
            "config.json:13:19: field 'layer_types': expected \"full_attention\" or \"sliding_attention\"");
}

// The MoE families import as the bundled models that were written from the same config.json
// (the name and the file aside), so their checked parameter counts hold for the import too.
TEST(HfImport, MixtureOfExpertsFamiliesMatchTheBundledModels) {
  for (const char* name : {"mixtral-8x7b", "qwen3-30b-a3b", "deepseek-v3", "gpt-oss-120b"}) {
    SCOPED_TRACE(name);
    const HfImport r = import_fixture(std::string(name) + ".json");
    Model bundled = load_model(std::string(STARFISH_SOURCE_DIR) + "/configs/models/" + name + ".yaml");
    bundled.name = r.model.name;
    EXPECT_EQ(r.model, bundled);
    EXPECT_EQ(parse_model_text(to_yaml(r.model)), r.model);
  }
  const Model v3 = import_fixture("deepseek-v3.json").model;
  EXPECT_EQ(v3.moe.first_dense_layers, 3);
  EXPECT_EQ(v3.moe.shared_experts, 1);
  EXPECT_EQ(v3.mla.q_lora_rank, 1536);
  EXPECT_EQ(import_fixture("deepseek-v2-lite.json").model.mla.q_lora_rank, 0);  // queries projected directly
  // HF Qwen3Moe: layer l is MoE when (l + 1) % decoder_sparse_step == 0.
  const Model every_other =
      import_fixture("", {}, with(fixture_text("qwen3-30b-a3b.json"), "\"decoder_sparse_step\": 1", "\"decoder_sparse_step\": 2")).model;
  EXPECT_FALSE(every_other.moe_layer(0));
  EXPECT_TRUE(every_other.moe_layer(1));
  EXPECT_FALSE(every_other.moe_layer(2));
  EXPECT_TRUE(every_other.moe_layer(3));
  // HF DeepseekV3: MoE when l >= first_k_dense_replace and l % moe_layer_freq == 0.
  const Model freq2 = import_fixture(
      "", {}, with(fixture_text("deepseek-v3.json"), "\"moe_layer_freq\": 1", "\"moe_layer_freq\": 2")).model;
  EXPECT_FALSE(freq2.moe_layer(3));
  EXPECT_TRUE(freq2.moe_layer(4));
  EXPECT_FALSE(freq2.moe_layer(5));
  EXPECT_TRUE(freq2.moe_layer(6));
}

TEST(HfImport, UnsupportedLayoutsAreRefusedNamingTheField) {
  EXPECT_EQ(error_of(with(fixture_text("mixtral-8x7b.json"), "\"mixtral\"", "\"qwen2_moe\"")),
            "config.json:7:17: field 'model_type': 'qwen2_moe' is a mixture-of-experts model with its shared expert's "
            "sigmoid gate, which Starfish's model format does not hold");
  const std::string llama_moe =
      with(fixture_text("mistral-7b-v0.1.json"), "\"num_key_value_heads\"", "\"num_local_experts\": 8,\n  \"num_key_value_heads\"");
  EXPECT_EQ(error_of(llama_moe),
            "config.json:13:24: field 'num_local_experts': a mixture-of-experts key in a 'mistral' config, whose layout "
            "has no experts");
  EXPECT_EQ(error_of(with(fixture_text("qwen3-30b-a3b.json"), "\"mlp_only_layers\": []", "\"mlp_only_layers\": [0, 5]")),
            "config.json:15:22: field 'mlp_only_layers': dense layers among the MoE ones are not in Starfish's model format");
  EXPECT_EQ(error_of(with(fixture_text("qwen3-30b-a3b.json"), "\"decoder_sparse_step\": 1", "\"decoder_sparse_step\": 49")),
            "config.json:6:26: field 'decoder_sparse_step': leaves no mixture-of-experts layer of the 48");
  EXPECT_EQ(error_of(with(fixture_text("mixtral-8x7b.json"), "\"num_experts_per_tok\": 2", "\"num_experts_per_tok\": 9")),
            "config.json:9:26: field 'num_experts_per_tok': routes each token to 9 of only 8 experts");
  EXPECT_EQ(error_of(with(fixture_text("gemma-3-1b.json"), "\"gemma3_text\"", "\"gemma3\"")),
            "config.json:16:17: field 'model_type': 'gemma3' is the multimodal wrapper: import its text_config as a file "
            "of its own (model_type gemma3_text)");
  EXPECT_EQ(error_of(with(fixture_text("gpt2.json"), "\"gpt2\"", "\"bert\"")),
            "config.json:10:17: field 'model_type': 'bert' is not supported (llama, mistral, qwen2, qwen3, gemma, gemma2, "
            "gemma3_text, phi3, falcon, gpt_neox, opt, bloom, gpt2, gpt_bigcode, mixtral, qwen3_moe, deepseek_v2, "
            "deepseek_v3, gpt_oss)");
}

TEST(HfImport, BadFilesFailWithFileLineAndField) {
  const std::string llama = fixture_text("llama-2-7b.json");
  EXPECT_EQ(error_of(with(llama, "num_attention_heads", "num_attention_headz")),
            "config.json:1:1: field 'num_attention_heads': missing (required for this model_type)");
  EXPECT_EQ(error_of(with(llama, "\"num_attention_heads\": 32", "\"num_attention_heads\": 30")),
            "config.json:12:26: field 'num_attention_heads': 30 heads do not divide hidden 4096");
  EXPECT_EQ(error_of(with(llama, "\"hidden_size\": 4096", "\"hidden_size\": \"big\"")),
            "config.json:7:18: field 'hidden_size': expected a positive integer, got 'big'");
  EXPECT_EQ(error_of(with(llama, "\"silu\"", "\"relu\"")),
            "config.json:6:17: field 'hidden_act': 'relu' is not supported for a LLaMA-style model (expected silu)");
  EXPECT_NE(error_of("{\"model_type\": \"llama\",").find("invalid JSON"), std::string::npos);
  EXPECT_EQ(error_of("[1, 2]"), "config.json:1:1: expected a JSON object (a Hugging Face config.json)");
}

TEST(HfImport, FileImportNamesTheModelAfterItsFolder) {
  const auto dir = std::filesystem::path(::testing::TempDir()) / ("starfish-hf-" + std::to_string(::getpid())) / "Mistral-7B-v0.1";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "config.json") << fixture_text("mistral-7b-v0.1.json");
  EXPECT_EQ(import_hf_config_file((dir / "config.json").string()).model.name, "mistral-7b-v0.1");
  EXPECT_THROW(import_hf_config_file((dir / "nope.json").string()), SpecError);
}

}  // namespace
}  // namespace starfish

// Hugging Face config.json import (sim/spec/hf_import.h) over real key sets of each dense family
// (tests/fixtures/hf/), against the families' published parameter counts.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

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

HfImport import_fixture(const std::string& name, HfImportOptions options = {}) {
  return import_hf_config(fixture_text(name), "config.json", "fallback", options);
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
    {"qwen2-7b.json", 7615616512, 28 * (2 * 3584 + 2 * 18944)},  // o/MLP biases Qwen2 lacks
    {"qwen3-8b.json", 8190735360, -36 * 2 * 128},                // q/k norms Starfish lacks
    {"gemma-2b.json", 2506172416, 0},
    {"gemma-7b.json", 8537680896, 0},  // 16 heads of 256 on hidden 3072: the model's head_dim
    {"phi-3-mini-4k.json", 3821079552, 0},
    {"falcon-7b.json", 6921720704, 32 * 2 * 4544},  // a second LayerNorm parallel attention lacks
    {"gpt-neox-20b.json", 20554567680, 0},
    {"opt-1.3b.json", 1315758080, -2 * 2048},  // OPT's 2 offset position rows
    {"bloom-560m.json", 559214592, -2 * 1024},  // BLOOM's embedding LayerNorm
    {"gpt2.json", 124439808, 0},
    {"gpt-bigcode-santacoder.json", 1124886528, 0},
};

TEST(HfImport, EveryDenseFamilyWithItsPublishedParameterCount) {
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
  EXPECT_TRUE(import_fixture("qwen2-7b.json").model.bias);
  EXPECT_FALSE(import_fixture("mistral-7b-v0.1.json").model.dropout);
  EXPECT_TRUE(import_fixture("gpt2.json").model.dropout);
}

TEST(HfImport, MixtureOfExpertsAndUnsupportedLayoutsAreRefusedNamingTheField) {
  EXPECT_EQ(error_of(fixture_text("mixtral-8x7b.json")),
            "config.json:7:17: field 'model_type': 'mixtral' is a mixture-of-experts model, which import-hf does not "
            "import yet (dense models only)");
  const std::string llama_moe =
      with(fixture_text("mistral-7b-v0.1.json"), "\"num_key_value_heads\"", "\"num_local_experts\": 8,\n  \"num_key_value_heads\"");
  EXPECT_EQ(error_of(llama_moe),
            "config.json:13:24: field 'num_local_experts': a mixture-of-experts key: import-hf imports dense models only");
  EXPECT_EQ(error_of(with(fixture_text("gemma-7b.json"), "\"gemma\"", "\"gemma2\"")),
            "config.json:9:17: field 'model_type': 'gemma2' has norms after attention and MLP and sliding-window attention "
            "on every other layer, which Starfish's model format does not hold yet");
  EXPECT_EQ(error_of(with(fixture_text("gpt2.json"), "\"gpt2\"", "\"bert\"")),
            "config.json:10:17: field 'model_type': 'bert' is not supported (llama, mistral, qwen2, qwen3, gemma, phi3, "
            "falcon, gpt_neox, opt, bloom, gpt2, gpt_bigcode)");
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
  const auto dir = std::filesystem::path(::testing::TempDir()) / "starfish-hf" / "Mistral-7B-v0.1";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "config.json") << fixture_text("mistral-7b-v0.1.json");
  EXPECT_EQ(import_hf_config_file((dir / "config.json").string()).model.name, "mistral-7b-v0.1");
  EXPECT_THROW(import_hf_config_file((dir / "nope.json").string()), SpecError);
}

}  // namespace
}  // namespace starfish

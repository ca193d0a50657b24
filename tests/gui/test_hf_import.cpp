// Hugging Face config.json import: the published configs of LLaMA-2 7B, Mistral 7B and GPT-2
// map to the shapes of the bundled models (same parameter count), and bad files fail with
// messages that name the file, line and field.
#include <QtTest/QtTest>

#include "gui/hf_import.h"
#include "sim/cost/params.h"
#include "sim/spec/error.h"
#include "sim/spec/spec_io.h"

using namespace starfish;

namespace {

// meta-llama/Llama-2-7b-hf config.json (as published, abridged of nothing that matters here).
const char* kLlama2 = R"({
  "_name_or_path": "meta-llama/Llama-2-7b-hf",
  "architectures": ["LlamaForCausalLM"],
  "bos_token_id": 1,
  "eos_token_id": 2,
  "hidden_act": "silu",
  "hidden_size": 4096,
  "initializer_range": 0.02,
  "intermediate_size": 11008,
  "max_position_embeddings": 4096,
  "model_type": "llama",
  "num_attention_heads": 32,
  "num_hidden_layers": 32,
  "num_key_value_heads": 32,
  "pretraining_tp": 1,
  "rms_norm_eps": 1e-05,
  "rope_scaling": null,
  "tie_word_embeddings": false,
  "torch_dtype": "float16",
  "transformers_version": "4.31.0.dev0",
  "use_cache": true,
  "vocab_size": 32000
})";

// openai-community/gpt2 config.json.
const char* kGpt2 = R"({
  "activation_function": "gelu_new",
  "architectures": ["GPT2LMHeadModel"],
  "attn_pdrop": 0.1,
  "bos_token_id": 50256,
  "embd_pdrop": 0.1,
  "eos_token_id": 50256,
  "initializer_range": 0.02,
  "layer_norm_epsilon": 1e-05,
  "model_type": "gpt2",
  "n_ctx": 1024,
  "n_embd": 768,
  "n_head": 12,
  "n_inner": null,
  "n_layer": 12,
  "n_positions": 1024,
  "vocab_size": 50257
})";

// mistralai/Mistral-7B-v0.1 config.json: grouped-query attention with 8 KV heads.
const char* kMistral = R"({
  "architectures": ["MistralForCausalLM"],
  "hidden_act": "silu",
  "hidden_size": 4096,
  "intermediate_size": 14336,
  "max_position_embeddings": 32768,
  "model_type": "mistral",
  "num_attention_heads": 32,
  "num_hidden_layers": 32,
  "num_key_value_heads": 8,
  "rms_norm_eps": 1e-05,
  "rope_theta": 10000.0,
  "sliding_window": 4096,
  "tie_word_embeddings": false,
  "vocab_size": 32000
})";

QString error_of(const std::string& json) {
  try {
    gui::import_hf_config(json, "config.json", "fallback");
  } catch (const SpecError& e) {
    return QString::fromStdString(e.what());
  }
  return "no error";
}

}  // namespace

class HfImportTest : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void llama2_7b_matches_the_bundled_model() {
    const Model m = gui::import_hf_config(kLlama2, "config.json", "x");
    const Model bundled = load_model(STARFISH_SOURCE_DIR "/configs/models/llama2-7b.yaml");
    QCOMPARE(m.name, std::string("llama-2-7b-hf"));
    QCOMPARE(m.family, std::string("llama"));
    Model same = m;
    same.name = bundled.name;
    QVERIFY(same == bundled);  // every field (provenance is not part of the value)
    QCOMPARE(count_parameters(m).total, count_parameters(bundled).total);
    QCOMPARE(count_parameters(m).total, int64_t{6738415616});  // LLaMA-2 7B's published count
  }

  void gpt2_small_matches_the_bundled_model() {
    const Model m = gui::import_hf_config(kGpt2, "config.json", "gpt2");
    const Model bundled = load_model(STARFISH_SOURCE_DIR "/configs/models/gpt2-small.yaml");
    QCOMPARE(m.name, std::string("gpt2"));  // no _name_or_path: the fallback
    Model same = m;
    same.name = bundled.name;
    QVERIFY(same == bundled);
    QCOMPARE(m.ffn_hidden, 4 * 768);  // n_inner null
    QCOMPARE(count_parameters(m).total, int64_t{124439808});  // GPT-2 small, tied embeddings
  }

  void mistral_keeps_grouped_query_attention() {
    const Model m = gui::import_hf_config(kMistral, "config.json", "Mistral-7B-v0.1");
    QCOMPARE(m.name, std::string("mistral-7b-v0.1"));
    QCOMPARE(m.kv_heads, 8);
    QCOMPARE(m.heads, 32);
    QCOMPARE(m.ffn_hidden, 14336);
    QCOMPARE(m.seq_len, 32768);
    QCOMPARE(count_parameters(m).total, int64_t{7241732096});  // Mistral 7B's published count
    // The imported model saves as a model file that loads back to the same value.
    QVERIFY(parse_model_text(to_yaml(m)) == m);
  }

  void bad_files_fail_with_file_line_and_field() {
    std::string bert = kGpt2;
    bert.replace(bert.find("\"gpt2\""), 6, "\"bert\"");
    QCOMPARE(error_of(bert), QString("config.json:10:17: field 'model_type': 'bert' is not supported (llama, mistral, gpt2)"));
    std::string no_heads = kLlama2;
    no_heads.replace(no_heads.find("num_attention_heads"), 19, "num_attention_headz");
    QCOMPARE(error_of(no_heads), QString("config.json:1:1: field 'num_attention_heads': missing (required for this model_type)"));
    std::string odd = kLlama2;
    odd.replace(odd.find("\"num_attention_heads\": 32"), 25, "\"num_attention_heads\": 30");
    QCOMPARE(error_of(odd), QString("config.json:12:26: field 'num_attention_heads': 30 heads do not divide hidden 4096"));
    std::string text = kLlama2;
    text.replace(text.find("\"hidden_size\": 4096"), 19, "\"hidden_size\": \"big\"");
    QCOMPARE(error_of(text), QString("config.json:7:18: field 'hidden_size': expected a positive integer, got 'big'"));
    std::string gelu = kLlama2;
    gelu.replace(gelu.find("\"silu\""), 6, "\"relu\"");
    QCOMPARE(error_of(gelu), QString("config.json:6:17: field 'hidden_act': 'relu' is not supported for a LLaMA-style model (expected silu)"));
    QVERIFY(error_of("{\"model_type\": \"llama\",").startsWith("config.json:"));
    QVERIFY(error_of("{\"model_type\": \"llama\",").contains("not valid JSON"));
    QCOMPARE(error_of("[1, 2]"), QString("config.json:1:1: expected a JSON object (a Hugging Face config.json)"));
  }

  void file_import_names_the_model_after_its_folder() {
    QTemporaryDir dir;
    QVERIFY(QDir(dir.path()).mkdir("Mistral-7B-v0.1"));
    const QString path = dir.path() + "/Mistral-7B-v0.1/config.json";
    std::string json = kMistral;
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(json.c_str());
    f.close();
    QCOMPARE(gui::import_hf_config_file(path.toStdString()).name, std::string("mistral-7b-v0.1"));
    const std::string missing = (dir.path() + "/nope/config.json").toStdString();
    QVERIFY_THROWS_EXCEPTION(SpecError, gui::import_hf_config_file(missing));
  }
};

QTEST_GUILESS_MAIN(HfImportTest)
#include "test_hf_import.moc"

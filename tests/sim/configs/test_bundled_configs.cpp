// Every bundled hwprofile, model and plan: it parses, it survives a save/load round trip, the
// models have the parameter counts their papers publish, and the plans validate against the
// model and hardware they name. Files are found by listing the folders, so a new file is
// checked without editing this test; published numbers come from shared/data at test time.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "sim/cost/params.h"
#include "sim/spec/job.h"
#include "sim/spec/spec_io.h"

namespace starfish {
namespace {

namespace fs = std::filesystem;

const fs::path kSourceDir = STARFISH_SOURCE_DIR;
const fs::path kDataDir = STARFISH_SHARED_DATA_DIR;

std::vector<fs::path> yaml_files(const fs::path& dir) {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.is_regular_file() && entry.path().extension() == ".yaml") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

fs::path model_file(const std::string& name) { return kSourceDir / "configs" / "models" / (name + ".yaml"); }
Model model_named(const std::string& name) { return load_model(model_file(name).string()); }
double params_of(const std::string& name) { return static_cast<double>(count_parameters(model_named(name)).total); }

// ---------------------------------------------------------------- CSV (RFC 4180 quoting)

struct CsvTable {
  std::vector<std::string> header;
  std::vector<std::map<std::string, std::string>> rows;
};

std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> cells(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cells.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        cells.back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      cells.emplace_back();
    } else if (c != '\r') {
      cells.back() += c;
    }
  }
  return cells;
}

CsvTable read_csv(const std::string& file) {
  const fs::path path = kDataDir / file;
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path.string());
  CsvTable t;
  std::string line;
  std::getline(in, line);
  t.header = split_csv_line(line);
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const std::vector<std::string> cells = split_csv_line(line);
    if (cells.size() != t.header.size())
      throw std::runtime_error(path.string() + ": row with " + std::to_string(cells.size()) + " cells, header has " +
                               std::to_string(t.header.size()));
    std::map<std::string, std::string> row;
    for (size_t i = 0; i < cells.size(); ++i) row[t.header[i]] = cells[i];
    t.rows.push_back(std::move(row));
  }
  return t;
}

// The interval a published number printed as `text` stands for: "1.7" is anything that rounds
// to 1.7, i.e. [1.65, 1.75]. Papers print parameter counts rounded to a few digits; a count is
// compared with the interval, not with the rounded point.
std::pair<double, double> printed_interval(const std::string& text) {
  const double v = std::stod(text);
  const size_t dot = text.find('.');
  const int decimals = dot == std::string::npos ? 0 : static_cast<int>(text.size() - dot - 1);
  const double half_unit = 0.5 * std::pow(10.0, -decimals);
  return {v - half_unit, v + half_unit};
}

// True when `count` is within `tolerance` (relative) of some value in [lo, hi].
bool within_of_interval(double count, double lo, double hi, double tolerance) {
  return count >= lo * (1 - tolerance) && count <= hi * (1 + tolerance);
}

// ---------------------------------------------------------------- parse and round trip

TEST(BundledConfigs, EveryHwprofileParsesAndRoundTrips) {
  const auto files = yaml_files(kSourceDir / "hwprofiles");
  ASSERT_FALSE(files.empty());
  for (const fs::path& f : files) {
    SCOPED_TRACE(f.string());
    const Cluster c = load_cluster(f.string());
    EXPECT_EQ(c.name, f.stem().string()) << "a hwprofile is named like its file";
    EXPECT_FALSE(c.description.empty());
    const std::string saved = to_yaml(c);
    EXPECT_EQ(parse_cluster_text(saved, f.string() + " (saved)"), c) << saved;
  }
}

TEST(BundledConfigs, TheHwprofilesTheProjectPromisesExist) {
  for (const char* name : {"dgx-a100-80gb", "dgx-h100", "dgx-h200", "dgx-b200", "amd-mi300x", "dgx2-v100-32gb", "v100-pcie-8x-240gb", "consumer-pc", "cpu-host"})
    EXPECT_TRUE(fs::exists(kSourceDir / "hwprofiles" / (std::string(name) + ".yaml"))) << name;
}

TEST(BundledConfigs, TheMi300xProfileIsAFullXgmiMesh) {
  // AMD's data sheet figures, and 7 xGMI links of 64 GB/s per direction as one mesh of 448 GB/s.
  const Cluster c = load_cluster((kSourceDir / "hwprofiles" / "amd-mi300x.yaml").string());
  EXPECT_EQ(c.node.gpus, 8);
  EXPECT_EQ(c.node.gpu.memory_bytes, 192'000'000'000);
  EXPECT_DOUBLE_EQ(c.node.gpu.hbm_bandwidth_Bps, 5.3e12);
  EXPECT_DOUBLE_EQ(c.node.gpu.peak(DType::bf16), 1307.4e12);
  EXPECT_DOUBLE_EQ(c.node.gpu.peak(DType::fp16), 1307.4e12);
  EXPECT_DOUBLE_EQ(c.node.gpu.peak(DType::fp8), 2614.9e12);
  EXPECT_DOUBLE_EQ(c.node.gpu.peak(DType::tf32), 653.7e12);
  EXPECT_DOUBLE_EQ(c.node.gpu.peak(DType::fp32), 163.4e12);
  ASSERT_TRUE(c.node.nvlink);
  EXPECT_EQ(c.node.nvlink->topology, NvlinkTopology::mesh);
  EXPECT_DOUBLE_EQ(c.node.nvlink->bandwidth_Bps, 7 * 64e9);
  EXPECT_EQ(c.nvlink_domain_gpus(), 8);
  // 0.70 achieved: 313.6 GB/s over all 7 links, 44.8 GB/s a pair.
  EXPECT_NEAR(c.intra_node_bandwidth_Bps(), 313.6e9, 1e-3);
  EXPECT_NEAR(c.intra_node_group_bandwidth_Bps(2), 44.8e9, 1e-3);
  EXPECT_EQ(c.node.nic->count, 8);
  EXPECT_DOUBLE_EQ(c.node.nic->bandwidth_Bps, 50e9);
}

TEST(BundledConfigs, EveryModelParsesAndRoundTrips) {
  const auto files = yaml_files(kSourceDir / "configs" / "models");
  ASSERT_FALSE(files.empty());
  for (const fs::path& f : files) {
    SCOPED_TRACE(f.string());
    const Model m = load_model(f.string());
    EXPECT_EQ(m.name, f.stem().string()) << "a model is named like its file";
    const std::string saved = to_yaml(m);
    EXPECT_EQ(parse_model_text(saved, f.string() + " (saved)"), m) << saved;
  }
}

TEST(BundledConfigs, EveryPlanRoundTripsAndValidatesAgainstItsModelAndHardware) {
  const auto files = yaml_files(kSourceDir / "configs" / "plans");
  ASSERT_FALSE(files.empty());
  for (const fs::path& f : files) {
    SCOPED_TRACE(f.string());
    const PlanFile p = load_plan_file(f.string());
    const std::string saved = to_yaml(p);
    EXPECT_EQ(parse_plan_file_text(saved, f.string() + " (saved)"), p) << saved;
    ASSERT_TRUE(p.model_path && p.hardware_path) << "a bundled plan names its model and hardware";
    const fs::path dir = f.parent_path();
    const Model m = load_model((dir / *p.model_path).lexically_normal().string());
    Cluster c = load_cluster((dir / *p.hardware_path).lexically_normal().string());
    if (p.nodes) c.nodes = *p.nodes;  // a plan's nodes: overrides the hardware file's
    const int gpus = c.total_gpus();
    Job job;
    ASSERT_NO_THROW(job = make_job(m, c, p.training, p.plan));
    EXPECT_EQ(job.plan.tp * job.plan.cp * job.plan.pp * job.plan.dp, gpus);
    EXPECT_GE(job.micro_batches(), 1);
  }
}

TEST(BundledConfigs, The128NodeA100ProfileKeepsTheOneNodeProfilesNode) {
  const Cluster one = load_cluster((kSourceDir / "hwprofiles" / "dgx-a100-80gb.yaml").string());
  const Cluster many = load_cluster((kSourceDir / "hwprofiles" / "dgx-a100-80gb-128nodes.yaml").string());
  EXPECT_EQ(many.nodes, 128);
  EXPECT_EQ(many.node, one.node) << "the 128-node profile takes its node from dgx-a100-80gb.yaml (base:)";
  EXPECT_EQ(many.price_per_gpu_hour, one.price_per_gpu_hour);
}

// ---------------------------------------------------------------- published parameter counts

TEST(BundledConfigs, Gpt3Has175BillionParameters) {
  EXPECT_NEAR(params_of("gpt3-175b"), 175e9, 0.01 * 175e9);
}

TEST(BundledConfigs, Gpt2SizesMatchOpenAIsCorrectedCounts) {
  const std::vector<std::pair<std::string, double>> sizes = {
      {"gpt2-small", 124e6}, {"gpt2-medium", 355e6}, {"gpt2-large", 774e6}, {"gpt2-xl", 1.558e9}};
  for (const auto& [name, published] : sizes) {
    SCOPED_TRACE(name);
    const Model m = model_named(name);
    EXPECT_EQ(m.vocab, 50257);
    EXPECT_EQ(m.seq_len, 1024);
    EXPECT_NEAR(params_of(name), published, 0.01 * published);
  }
}

TEST(BundledConfigs, Llama2SizesMatchTheirPaper) {
  EXPECT_NEAR(params_of("llama2-7b"), 6.74e9, 0.01 * 6.74e9);
  EXPECT_NEAR(params_of("llama2-70b"), 68.98e9, 0.01 * 68.98e9);
  const Model big = model_named("llama2-70b");
  EXPECT_EQ(big.kv_heads, 8);
  EXPECT_FALSE(big.tied_embeddings);
  EXPECT_FALSE(big.bias);
}

// 126 x (2 x 16384^2 + 2 x 16384 x 1024 + 3 x 16384 x 53248 + 2 x 16384) + 2 x 128256 x 16384
// + 16384 = 405,853,388,800: Meta's "405B".
TEST(BundledConfigs, Llama3_405BHas405Point85BillionParameters) {
  EXPECT_NEAR(params_of("llama3-405b"), 405.853e9, 0.001 * 405.853e9);
  const Model m = model_named("llama3-405b");
  EXPECT_EQ(m.kv_heads, 8);
  EXPECT_EQ(m.vocab, 128256);
  EXPECT_FALSE(m.tied_embeddings);
}

// Llama 3 (Meta's model cards: 8.03B, 70.6B; 405B above) and 3.1 405B (the same network).
TEST(BundledConfigs, Llama3FamilyMatchesMetasCounts) {
  EXPECT_NEAR(params_of("llama3-8b"), 8.03e9, 0.01 * 8.03e9);
  EXPECT_NEAR(params_of("llama3-70b"), 70.6e9, 0.01 * 70.6e9);
  EXPECT_NEAR(params_of("llama3.1-405b"), 405.853e9, 0.001 * 405.853e9);
}

// Mixture-of-experts models against their publishers' total and active counts, within 1%:
// Mixtral 8x7B 46.7B / 12.9B (Jiang et al. 2024), 8x22B 141B / 39B (Mistral AI 2024),
// Qwen3-30B-A3B 30.5B / 3.3B and Qwen3-235B-A22B 235B / 22B (Qwen3 report, Table 2),
// gpt-oss-120b 116.83B / 5.13B (OpenAI's model card, which leaves the input embedding out of the
// active count). Qwen publishes two digits: "3.3B" activated stands for 3.25-3.35B, and the
// count is 3.353B, 1.6% above 3.3: its tolerance is the published figure's own rounding.
TEST(BundledConfigs, MixtureOfExpertsModelsMatchTheirPublishedTotalAndActiveCounts) {
  struct Published {
    const char* name;
    double total, active;
    bool active_without_input_embedding;
  };
  for (const Published& p : {Published{"mixtral-8x7b", 46.7e9, 12.9e9, false},
                             Published{"mixtral-8x22b", 141e9, 39e9, false},
                             Published{"qwen3-30b-a3b", 30.5e9, 3.35e9, false},
                             Published{"qwen3-235b-a22b", 235e9, 22e9, false},
                             Published{"gpt-oss-120b", 116.83e9, 5.13e9, true}}) {
    const ParamCount c = count_parameters(model_named(p.name));
    const double active = static_cast<double>(c.active - (p.active_without_input_embedding ? c.word_embedding : 0));
    EXPECT_NEAR(static_cast<double>(c.total), p.total, 0.01 * p.total) << p.name;
    EXPECT_NEAR(active, p.active, 0.01 * p.active) << p.name;
    EXPECT_EQ(c.moe_layers, model_named(p.name).layers) << p.name;  // every layer is MoE
  }
}

TEST(BundledConfigs, DeepSeekV3MatchesItsConfigTensorByTensor) {
  // DeepSeek-V3's config.json, tensor by tensor: MLA per layer (q_a 7168 x 1536, its norm, q_b
  // 1536 x 128 x 192, kv_a 7168 x (512 + 64), its norm, kv_b 512 x 128 x (128 + 128), o 128 x 128
  // x 7168), two norms; 3 dense layers of SwiGLU 18432; 58 MoE layers of a 7168 x 256 router and
  // 1 + 256 experts of 3 x 7168 x 2048; untied 129,280-token embedding and head, a final norm.
  const Model m = model_named("deepseek-v3");
  const int64_t h = 7168, V = 129280, expert = 3 * h * 2048;
  const int64_t mla = h * 1536 + 1536 + 1536 * 128 * 192 + h * 576 + 512 + 512 * 128 * 256 + 128 * 128 * h;
  const int64_t dense = mla + 2 * h + 3 * h * 18432, moe = mla + 2 * h + h * 256 + 257 * expert;
  const ParamCount c = count_parameters(m);
  EXPECT_EQ(c.per_layer, dense);
  EXPECT_EQ(c.per_moe_layer, moe);
  EXPECT_EQ(c.total, 2 * V * h + h + 3 * dense + 58 * moe);
  EXPECT_EQ(c.total, 671026404352);
  EXPECT_EQ(c.active, c.total - 58 * 248 * expert);  // 8 of 256 routed experts and the shared one
  EXPECT_EQ(c.active, 37552282624);
  // DeepSeek: "671B total parameters with 37B activated for each token" -- round figures; the
  // config's active count is 37.55B (36.63B without the input embedding, which is a lookup).
  EXPECT_NEAR(static_cast<double>(c.total), 671e9, 0.01 * 671e9);
  EXPECT_NEAR(static_cast<double>(c.active), 37e9, 0.015 * 37e9);
  EXPECT_EQ(c.moe_layers, 58);
}

TEST(BundledConfigs, YuanMatchesTheAnnounced245Point7Billion) {
  EXPECT_NEAR(params_of("yuan-1.0-245b"), 245.7e9, 0.01 * 245.7e9);
}

TEST(BundledConfigs, TinyGptIsTheSizeItsCommentStates) {
  // 2 x (12*64^2 + 13*64) + 256*64 + 32*64 + 2*64
  EXPECT_EQ(count_parameters(model_named("tiny-gpt")).total, 118528);
}

// Each Table 1 row of Narayanan et al. 2021 has exactly one megatron-*.yaml with its shape, and
// that model's count is within 1% of the published size (printed to one decimal: see
// printed_interval).
TEST(BundledConfigs, MegatronModelsMatchTable1OfNarayanan2021) {
  const CsvTable table = read_csv("narayanan2021_megatron_table1_weak_scaling.csv");
  ASSERT_EQ(table.rows.size(), 10u);
  std::vector<Model> models;
  for (const fs::path& f : yaml_files(kSourceDir / "configs" / "models"))
    if (f.stem().string().rfind("megatron-", 0) == 0) models.push_back(load_model(f.string()));
  EXPECT_EQ(models.size(), table.rows.size()) << "one megatron-*.yaml per Table 1 row";
  for (const auto& row : table.rows) {
    SCOPED_TRACE(row.at("params_billion") + "B row");
    const int hidden = std::stoi(row.at("hidden_size")), layers = std::stoi(row.at("num_layers"));
    const auto it = std::find_if(models.begin(), models.end(),
                                 [&](const Model& m) { return m.hidden == hidden && m.layers == layers; });
    ASSERT_NE(it, models.end()) << "no megatron-*.yaml with hidden " << hidden << " and " << layers << " layers";
    EXPECT_EQ(it->heads, std::stoi(row.at("attention_heads")));
    EXPECT_EQ(it->vocab, std::stoi(row.at("vocab_size")));
    EXPECT_EQ(it->seq_len, std::stoi(row.at("seq_len_tokens")));
    const auto [lo, hi] = printed_interval(row.at("params_billion"));
    const double count = static_cast<double>(count_parameters(*it).total) / 1e9;
    EXPECT_TRUE(within_of_interval(count, lo, hi, 0.01))
        << it->name << ": " << count << "B against a published " << row.at("params_billion") << "B";
  }
}

// model_config rows of the PatrickStar CSV: each has a patrickstar-<name>.yaml of its shape.
TEST(BundledConfigs, PatrickStarModelsMatchModelBuilder) {
  const CsvTable table = read_csv("patrickstar_max_model_scale_and_configs.csv");
  int checked = 0;
  for (const auto& row : table.rows) {
    if (row.at("record_type") != "model_config") continue;
    std::string name = "patrickstar-" + row.at("model_name");
    std::transform(name.begin(), name.end(), name.begin(), [](char c) { return c == '_' ? '-' : static_cast<char>(std::tolower(static_cast<unsigned char>(c))); });
    SCOPED_TRACE(name);
    ASSERT_TRUE(fs::exists(model_file(name)));
    const Model m = model_named(name);
    EXPECT_EQ(m.hidden, std::stoi(row.at("hidden_size")));
    EXPECT_EQ(m.layers, std::stoi(row.at("num_layers")));
    EXPECT_EQ(m.heads, std::stoi(row.at("attention_heads")));
    EXPECT_EQ(m.seq_len, std::stoi(row.at("seq_len_tokens")));
    ++checked;
  }
  EXPECT_EQ(checked, 15);
}

// max_model_scale rows that name a model give its size in billions: our count of that model is
// within 5% of it (PatrickStar's models are BERT-built, see the model files, hence 5%).
TEST(BundledConfigs, PatrickStarMaxScaleModelsHaveTheirPublishedSizes) {
  const CsvTable table = read_csv("patrickstar_max_model_scale_and_configs.csv");
  int checked = 0;
  for (const auto& row : table.rows) {
    if (row.at("record_type") != "max_model_scale" || row.at("model_name").empty()) continue;
    std::string name = row.at("model_name");
    name = name.substr(0, name.find(' '));  // "GPT3_18B (assumed)" -> "GPT3_18B"
    std::transform(name.begin(), name.end(), name.begin(), [](char c) { return c == '_' ? '-' : static_cast<char>(std::tolower(static_cast<unsigned char>(c))); });
    name = "patrickstar-" + name;
    SCOPED_TRACE(name);
    ASSERT_TRUE(fs::exists(model_file(name)));
    const Model m = model_named(name);
    EXPECT_EQ(m.hidden, std::stoi(row.at("hidden_size")));
    EXPECT_EQ(m.layers, std::stoi(row.at("num_layers")));
    const double published = std::stod(row.at("params_billion")) * 1e9;
    EXPECT_NEAR(params_of(name), published, 0.05 * published);
    ++checked;
  }
  EXPECT_EQ(checked, 3);
}

}  // namespace
}  // namespace starfish

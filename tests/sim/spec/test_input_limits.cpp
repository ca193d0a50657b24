// Issue 14: stated limits for every number, checked products, and one located line for every
// way a file can be wrong (duplicate keys, a second YAML document, wrong types, values that
// overflow, unreadable files).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

#include "sim/spec/input_file.h"
#include "sim/spec/job.h"
#include "sim/spec/json_reader.h"
#include "sim/spec/limits.h"
#include "sim/spec/spec_io.h"
#include "sim/spec/yaml_reader.h"
#include "support/cluster_yaml.h"
#include "support/error_of.h"

namespace starfish {
namespace {

using ::starfish::testing::error_of;

const std::string kModel = "name: m\nlayers: 24\nhidden: 1024\nheads: 16\nseq_len: 1024\nvocab: 50257\n";
// The shared profile with a NIC (some limits below are the fabric's).
const std::string kCluster = ::starfish::testing::kCluster + "  nic: {count: 8, bandwidth: 200Gb/s}\n";
const std::string kPlan = "training:\n  global_batch: 64\nplan:\n  tensor_parallel: 2\n  micro_batch: 2\n";

std::string replace(std::string s, const std::string& from, const std::string& to) {
  const size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return s.replace(at, from.size(), to);
}

TEST(InputLimits, EachModelFieldHasAStatedLimit) {
  EXPECT_EQ(error_of([] { parse_model_text(replace(kModel, "layers: 24", "layers: 100001"), "m.yaml"); }),
            "m.yaml:2:1: field 'layers': must be at most 100000 (Starfish's limit), got '100001'");
  EXPECT_EQ(parse_model_text(replace(kModel, "layers: 24", "layers: 100000"), "m.yaml").layers, 100000);
  EXPECT_EQ(error_of([] { parse_model_text(replace(kModel, "hidden: 1024", "hidden: 262144"), "m.yaml"); }),
            "m.yaml:3:1: field 'hidden': must be at most 131072 (Starfish's limit), got '262144'");
  EXPECT_EQ(error_of([] { parse_model_text(replace(kModel, "heads: 16", "heads: 4294967296"), "m.yaml"); }),
            "m.yaml:4:1: field 'heads': must be at most 16384 (Starfish's limit), got '4294967296'");
  EXPECT_EQ(error_of([] { parse_model_text(replace(kModel, "seq_len: 1024", "seq_len: 1e9"), "m.yaml"); }),
            "m.yaml:5:1: field 'seq_len': must be at most 4194304 (Starfish's limit), got '1e9'");
}

TEST(InputLimits, GpusAreNodesTimesGpusPerNodeWithinTenMillion) {
  EXPECT_EQ(error_of([] { parse_cluster_text(replace(kCluster, "nodes: 1", "nodes: 2000000"), "hw.yaml"); }),
            "hw.yaml:2:1: field 'nodes': 2000000 nodes x 8 GPUs is more than 10000000 GPUs (Starfish's limit)");
  EXPECT_EQ(parse_cluster_text(replace(kCluster, "nodes: 1", "nodes: 1250000"), "hw.yaml").total_gpus(), 10'000'000);
  EXPECT_EQ(error_of([] { parse_cluster_text(replace(kCluster, "gpus: 8", "gpus: 4096"), "hw.yaml"); }),
            "hw.yaml:4:3: field 'node.gpus': must be at most 1024 (Starfish's limit), got '4096'");
}

TEST(InputLimits, QuantitiesThatOverflowToInfinityAreRefused) {
  EXPECT_EQ(error_of([] { parse_cluster_text(replace(kCluster, "2TB/s", "1e308TB/s"), "hw.yaml"); }),
            "hw.yaml:8:5: field 'node.gpu.hbm_bandwidth': expected a bandwidth like 900GB/s, got '1e308TB/s' "
            "('1e308TB/s' overflows)");
  EXPECT_EQ(error_of([] { parse_cluster_text(replace(kCluster, "2TB/s", "2e7TB/s"), "hw.yaml"); }),
            "hw.yaml:8:5: field 'node.gpu.hbm_bandwidth': must be at most 1e+18 bytes/s (Starfish's limit), got '2e7TB/s'");
  EXPECT_EQ(error_of([] { parse_cluster_text(replace(kCluster, "80GiB", "2048PiB"), "hw.yaml"); }),
            "hw.yaml:7:5: field 'node.gpu.memory': must be at most 1024PiB (2^60 bytes, Starfish's limit), got '2048PiB'");
  EXPECT_EQ(error_of([] { parse_cluster_text(replace(kCluster, "1e9", "1e999"), "hw.yaml"); }),
            "hw.yaml:15:5: field 'node.host.cpu_adam_params_per_s': expected a number, got '1e999' ('1e999' is out of range)");
}

TEST(InputLimits, ProductsOfAJobAreChecked) {
  const Model m = parse_model_text(kModel, "m.yaml");
  const Cluster c = parse_cluster_text(kCluster, "hw.yaml");
  PlanFile p = parse_plan_file_text(kPlan, "plan.yaml");
  p.training.global_batch = int64_t{1} << 30;  // x 1024 tokens = 2^40: the limit, fine
  p.plan.micro_batch = 1 << 20;
  EXPECT_EQ(make_job(m, c, p.training, p.plan).micro_batches(), 256);
  p.training.global_batch = (int64_t{1} << 30) + (int64_t{1} << 20) * 4;
  EXPECT_EQ(error_of([&] { make_job(m, c, p.training, p.plan); }),
            "plan.yaml:2:3: field 'training.global_batch': 1077936128 sequences x seq_len 1024 is more than 2^40 tokens per "
            "iteration (Starfish's limit)");
  // Micro-batches x layers bounds the simulated passes: 8 x 10^6 / (1 x DP 4) x 24 > 4 x 10^6.
  p.training.global_batch = 800'000;
  p.plan.micro_batch = 1;
  EXPECT_EQ(error_of([&] { make_job(m, c, p.training, p.plan); }),
            "plan.yaml:2:3: field 'training.global_batch': 200000 micro-batches per pipeline x 24 layers is more than "
            "4000000 passes to simulate (Starfish's limit): raise micro_batch or lower global_batch");
  EXPECT_TRUE(limits::within_pass_limit(166'666, 24));
  EXPECT_FALSE(limits::within_pass_limit(int64_t{1} << 62, int64_t{1} << 62));
  EXPECT_EQ(limits::checked_mul(int64_t{1} << 31, int64_t{1} << 31, INT64_MAX), int64_t{1} << 62);
  EXPECT_FALSE(limits::checked_mul(int64_t{1} << 32, int64_t{1} << 31, INT64_MAX));
}

TEST(InputErrors, DuplicateKeysAreAnErrorAtTheSecond) {
  EXPECT_EQ(error_of([] { parse_model_text(kModel + "layers: 96\n", "m.yaml"); }),
            "m.yaml:7:1: field 'layers' appears twice (first on line 2): keep one");
  EXPECT_EQ(error_of([] { parse_cluster_text(replace(kCluster, "    name: G\n", "    name: G\n    name: H\n"), "hw.yaml"); }),
            "hw.yaml:7:5: field 'name' appears twice (first on line 6): keep one");
  EXPECT_EQ(error_of([] { parse_cluster_text(replace(kCluster, "{generation: 4,", "{generation: 4, generation: 5,"), "hw.yaml"); }),
            "hw.yaml:16:25: field 'generation' appears twice (first on line 16): keep one");
}

TEST(InputErrors, ASecondYamlDocumentIsAnErrorNotADroppedSection) {
  const std::string two = "training:\n  global_batch: 64\n---\nplan:\n  tensor_parallel: 2\n";
  EXPECT_EQ(error_of([&] { parse_plan_file_text(two, "plan.yaml"); }),
            "plan.yaml:3:1: a second YAML document starts here ('---'); a Starfish file is one document: remove the '---' "
            "line so the fields after it are read");
  // A '---' that opens the only document, or an empty document after it, changes nothing.
  EXPECT_EQ(parse_plan_file_text("# a plan\n---\n" + kPlan + "---\n", "plan.yaml").plan.tp, 2);
  EXPECT_EQ(parse_plan_file_text(kPlan + "...\n", "plan.yaml").plan.micro_batch, 2);
}

TEST(InputErrors, WrongTypesAndStrangeKeysNameTheField) {
  EXPECT_EQ(error_of([] { parse_model_text(replace(kModel, "layers: 24", "layers: [24]"), "m.yaml"); }),
            "m.yaml:2:1: field 'layers': expected a single value, got a list");
  EXPECT_EQ(error_of([] { parse_model_text(replace(kModel, "layers: 24", "layers: {a: 1}"), "m.yaml"); }),
            "m.yaml:2:1: field 'layers': expected a single value, got a mapping");
  EXPECT_EQ(error_of([] { parse_model_text(kModel + "[a, b]: 3\n", "m.yaml"); }),
            "m.yaml:7:1: a key must be a plain name, not a list or mapping");
  EXPECT_EQ(error_of([] { parse_cluster_text(replace(kCluster, "  gpu:\n", "  gpu: 3\n  x:\n"), "hw.yaml"); }),
            "hw.yaml:5:8: field 'node.gpu': expected a mapping");
}

TEST(InputErrors, AValueWithLineBreaksStaysOnOneLine) {
  const std::string e = error_of([] { parse_model_text(replace(kModel, "layers: 24", "layers: |\n  24\n  25"), "m.yaml"); });
  EXPECT_EQ(e, "m.yaml:2:1: field 'layers': expected a whole number, got '24\\n25\\n' (unexpected unit '\\n25\\n')");
  EXPECT_EQ(one_line(std::string("a\x01" "b\tc")), "a\\x01b\\tc");
  EXPECT_EQ(quote_value(std::string(100, 'x')), "'" + std::string(60, 'x') + "...'");
}

TEST(InputErrors, TextThatIsNotUtf8IsRefusedBeforeYamlCppSeesIt) {
  // fuzz/regressions/model: yaml-cpp 0.7 looped, allocating without end, on such bytes.
  EXPECT_EQ(error_of([] { parse_model_text("name: m\nlayers: 2\xff\xff\n", "m.yaml"); }),
            "m.yaml:2:10: not UTF-8 text (byte 0xff): Starfish's files are YAML, which is Unicode text");
  EXPECT_EQ(error_of([] { parse_model_text("name: \xc0\xaf\n", "m.yaml"); }),  // an overlong '/'
            "m.yaml:1:7: not UTF-8 text (byte 0xc0): Starfish's files are YAML, which is Unicode text");
  EXPECT_EQ(parse_model_text("name: caf\xc3\xa9-\xe2\x82\xac\nlayers: 2\nhidden: 8\nheads: 2\nseq_len: 4\nvocab: 9\n", "m.yaml").name,
            "caf\xc3\xa9-\xe2\x82\xac");
}

TEST(InputErrors, AFieldLeftToItsDefaultIsBlamedOnItsSection) {
  // Neither plan.pipeline_parallel nor plan.virtual_stages is in the file: the error points at `plan:`.
  PlanFile p = parse_plan_file_text(kPlan, "plan.yaml");
  const Model m = parse_model_text(replace(kModel, "layers: 24", "layers: 25"), "m.yaml");
  p.plan.pp = 2;
  EXPECT_EQ(error_of([&] { make_job(m, parse_cluster_text(kCluster, "hw.yaml"), p.training, p.plan); })
                .rfind("plan.yaml:3:1: field 'plan.pipeline_parallel': pipeline_parallel 2 x virtual_stages 1 does not divide", 0),
            0u);
}

TEST(InputFiles, MissingFolderDeviceAndHugeFilesAreRefusedByName) {
  const std::string dir = ::testing::TempDir() + "/starfish_input_files_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  EXPECT_EQ(error_of([&] { load_model(dir + "/none.yaml"); }), dir + "/none.yaml: no such file");
  EXPECT_EQ(error_of([&] { load_model(dir); }), dir + ": is a folder, not a file");
  EXPECT_EQ(error_of([] { load_model("/dev/zero"); }), "/dev/zero: not a regular file (a device, pipe or socket)");
  const std::string huge = dir + "/huge.yaml";
  {
    std::ofstream out(huge);
    out.seekp(kMaxInputFileBytes);
    out << '\n';
  }
  EXPECT_EQ(error_of([&] { load_model(huge); }),
            huge + ": 67108865 bytes is larger than any input Starfish reads (limit 64 MiB)");
  EXPECT_THROW(read_json_file(dir), InputFileError);
}

TEST(JsonReaderLimits, DeepNestingAndDuplicateKeysAreErrors) {
  EXPECT_EQ(error_of([] { parse_json(std::string(100000, '['), "r.json"); }),
            "r.json:1:257: invalid JSON: nested deeper than 256 levels");
  EXPECT_EQ(error_of([] { parse_json("{\"a\": 1,\n \"a\": 2}", "r.json"); }),
            "r.json:2:2: invalid JSON: key 'a' appears twice in one object");
  EXPECT_EQ(error_of([] { parse_json("[1e999]", "r.json"); }), "r.json:1:2: invalid JSON: number out of range");
}

}  // namespace
}  // namespace starfish

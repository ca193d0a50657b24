// The 22 inputs of issue 14 that crashed (SIGFPE: an integer truncated to 0, then a division)
// or hung `starfish check` / `estimate` / `search`, each rebuilt from the field and value the
// issue names in a bundled file: now each is refused at load with exit 1 and one line naming
// file:line:column, the field and Starfish's limit for it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <unistd.h>

#include "support/run_command.h"

namespace starfish {
namespace {

using testing::run_command;

const std::string kCli = STARFISH_CLI;
const std::string kRoot = STARFISH_SOURCE_DIR;
const std::string kModel = kRoot + "/configs/models/gpt2-small.yaml";
const std::string kHardware = kRoot + "/hwprofiles/dgx-a100-80gb.yaml";

enum class Kind { model, hardware, plan };

struct Mutant {
  Kind kind;
  const char* key;    // the YAML key replaced (its first occurrence)
  const char* value;
  const char* field;  // the field the error names
  const char* verb;   // the verb that crashed or hung besides `check`
};

// A valid plan for gpt2-small on one DGX A100: TP2 x PP2 x DP2.
std::string base_plan() {
  return "model: " + kModel + "\nhardware: " + kHardware +
         "\ntraining:\n  global_batch: 64\nplan:\n  tensor_parallel: 2\n  pipeline_parallel: 2\n  virtual_stages: 1\n"
         "  micro_batch: 2\n";
}

std::string slurp_file(const std::string& path) { return testing::slurp(path); }

// The file with `key: value` instead of its first `key: ...` line.
std::string mutate(const std::string& text, const std::string& key, const std::string& value) {
  const std::regex line("(^|\n)([ \t]*)" + key + ":[^\n]*");
  std::smatch m;
  EXPECT_TRUE(std::regex_search(text, m, line)) << key;
  return m.prefix().str() + m[1].str() + m[2].str() + key + ": " + value + m.suffix().str();
}

// Issue 14: 19 SIGFPE crashes (large integers in heads, nodes, micro_batch, pipeline_parallel
// and their neighbours) and 3 hangs (layers 2^31 - 1, layers 10^9, and 10^6 layers in `search`).
const Mutant kMutants[] = {
    {Kind::model, "heads", "4294967296", "heads", "estimate"},
    {Kind::model, "heads", "8589934592", "heads", "estimate"},
    {Kind::model, "heads", "12884901888", "heads", "estimate"},
    {Kind::model, "heads", "17179869184", "heads", "estimate"},
    {Kind::model, "kv_heads", "4294967296", "kv_heads", "estimate"},
    {Kind::hardware, "nodes", "4294967296", "nodes", "estimate"},
    {Kind::hardware, "nodes", "8589934592", "nodes", "estimate"},
    {Kind::hardware, "nodes", "12884901888", "nodes", "estimate"},
    {Kind::hardware, "nodes", "2147483648", "nodes", "estimate"},
    {Kind::hardware, "nodes", "1073741824", "nodes", "estimate"},
    {Kind::hardware, "nodes", "536870912", "nodes", "estimate"},
    {Kind::plan, "micro_batch", "4294967296", "plan.micro_batch", "estimate"},
    {Kind::plan, "micro_batch", "8589934592", "plan.micro_batch", "estimate"},
    {Kind::plan, "pipeline_parallel", "4294967296", "plan.pipeline_parallel", "estimate"},
    {Kind::plan, "pipeline_parallel", "8589934592", "plan.pipeline_parallel", "estimate"},
    {Kind::plan, "tensor_parallel", "4294967296", "plan.tensor_parallel", "estimate"},
    {Kind::plan, "tensor_parallel", "8589934592", "plan.tensor_parallel", "estimate"},
    {Kind::plan, "virtual_stages", "4294967296", "plan.virtual_stages", "estimate"},
    {Kind::plan, "virtual_stages", "8589934592", "plan.virtual_stages", "estimate"},
    {Kind::model, "layers", "2147483647", "layers", "estimate"},
    {Kind::model, "layers", "1000000000", "layers", "estimate"},
    {Kind::model, "layers", "1000000", "layers", "search"},
};

class IssueInputs : public ::testing::TestWithParam<int> {};

TEST_P(IssueInputs, AreRefusedWithOneLocatedLineAndExitOne) {
  const Mutant& m = kMutants[GetParam()];
  const std::string dir = ::testing::TempDir() + "/starfish_hardened_" + std::to_string(::getpid()) + "_" + std::to_string(GetParam());
  std::filesystem::create_directories(dir);
  const std::string file = dir + (m.kind == Kind::model ? "/model.yaml" : m.kind == Kind::hardware ? "/hw.yaml" : "/plan.yaml");
  const std::string base = m.kind == Kind::model ? slurp_file(kModel) : m.kind == Kind::hardware ? slurp_file(kHardware) : base_plan();
  const std::string text = m.kind == Kind::model && std::string(m.key) == "kv_heads"
                               ? base + "kv_heads: " + m.value + "\n"
                               : mutate(base, m.key, m.value);
  std::ofstream(file) << text;
  const std::string args = m.kind == Kind::model      ? "--model " + file + " --hw " + kHardware
                           : m.kind == Kind::hardware ? "--model " + kModel + " --hw " + file
                                                      : "--plan " + file;
  // The location: the line of the key in the mutated file, column of the key.
  int line = 1, column = 1;
  const std::regex at("(^|\n)([ \t]*)" + std::string(m.key) + ":");
  std::smatch match;
  ASSERT_TRUE(std::regex_search(text, match, at));
  const std::string before = match.prefix().str() + match[1].str();
  for (char c : before) line += c == '\n';
  column = static_cast<int>(match[2].length()) + 1;
  const std::string want = file + ":" + std::to_string(line) + ":" + std::to_string(column) + ": field '" + m.field + "': ";
  for (const std::string& command : {kCli + " check " + file, kCli + " " + m.verb + " " + args}) {
    const auto r = run_command("timeout 60 " + command);
    EXPECT_EQ(r.exit_code, 1) << command << "\n" << r.err;
    EXPECT_EQ(r.err.rfind(want, 0), 0u) << command << "\n" << r.err;
    EXPECT_NE(r.err.find("Starfish's limit"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "one line: " << r.err;
  }
}

INSTANTIATE_TEST_SUITE_P(Issue14, IssueInputs, ::testing::Range(0, static_cast<int>(std::size(kMutants))));

}  // namespace
}  // namespace starfish

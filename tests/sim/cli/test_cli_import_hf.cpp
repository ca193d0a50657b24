// `starfish import-hf` as a user runs it: a model file out, the sequence length stated, stdin,
// no overwrite without --force, one-line errors.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include "support/run_command.h"

namespace starfish {
namespace {

using testing::run_command;

const std::string kCli = STARFISH_CLI;
const std::string kFixtures = std::string(STARFISH_SOURCE_DIR) + "/tests/fixtures/hf/";

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(CliImportHf, WritesAModelFileThatEstimateTakes) {
  const std::string out = ::testing::TempDir() + "starfish_import_llama31_" + std::to_string(::getpid()) + ".yaml";
  std::filesystem::remove(out);
  const auto r = run_command(kCli + " import-hf " + kFixtures + "llama-3.1-8b.json -o " + out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("8030261248"), std::string::npos) << r.out;  // Llama 3.1 8B's published count
  EXPECT_NE(r.out.find("seq_len 4096: the default training sequence"), std::string::npos) << r.out;
  EXPECT_NE(read(out).find("seq_len: 4096"), std::string::npos);
  EXPECT_NE(read(out).find("rope_base: 500000"), std::string::npos);
  const auto est = run_command(kCli + " estimate --model " + out + " --hw dgx-a100-80gb");
  EXPECT_EQ(est.exit_code, 0) << est.err;
  // An existing file is kept unless --force.
  const auto again = run_command(kCli + " import-hf " + kFixtures + "llama-3.1-8b.json -o " + out + " --seq 8192");
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_EQ(again.err, out + ": already exists (refusing to overwrite it; --force replaces it)\n");
  EXPECT_NE(read(out).find("seq_len: 4096"), std::string::npos);
  ASSERT_EQ(run_command(kCli + " import-hf " + kFixtures + "llama-3.1-8b.json -o " + out + " --seq 8192 --force").exit_code, 0);
  EXPECT_NE(read(out).find("seq_len: 8192"), std::string::npos);
}

TEST(CliImportHf, ReadsStandardInputAndPrintsJson) {
  const auto r = run_command(kCli + " import-hf - --json < " + kFixtures + "gpt2.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"parameters\": 124439808"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"seq_len\": 1024"), std::string::npos) << r.out;
}

TEST(CliImportHf, ErrorsAreOneLine) {
  const auto moe = run_command("sed 's/\"mixtral\"/\"qwen2_moe\"/' " + kFixtures + "mixtral-8x7b.json | " + kCli +
                               " import-hf -");
  EXPECT_EQ(moe.exit_code, 1);
  EXPECT_EQ(moe.err, "<stdin>:7:17: field 'model_type': 'qwen2_moe' is a mixture-of-experts model with its shared "
                     "expert's sigmoid gate, which Starfish's model format does not hold\n");
  const auto mixtral = run_command(kCli + " import-hf " + kFixtures + "mixtral-8x7b.json");
  EXPECT_EQ(mixtral.exit_code, 0) << mixtral.err;
  EXPECT_NE(mixtral.out.find("experts: 8"), std::string::npos) << mixtral.out;
  const auto usage = run_command(kCli + " import-hf");
  EXPECT_EQ(usage.exit_code, 2);
  EXPECT_EQ(usage.err, "starfish import-hf: missing CONFIG.json (a Hugging Face config file, or - for stdin)\n");
  const auto help = run_command(kCli + " import-hf -h");
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("usage: starfish import-hf"), std::string::npos);
}

TEST(CliStdin, DashReadsAModelFromStandardInputOnce) {
  const std::string root = STARFISH_SOURCE_DIR;
  const auto r = run_command(kCli + " estimate --model - --hw dgx-a100-80gb < " + root + "/configs/models/gpt2-small.yaml");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("gpt2-small"), std::string::npos) << r.out;
  const auto bad = run_command("printf 'name: x\\nlayers: 2\\n' | " + kCli + " estimate --model - --hw dgx-a100-80gb");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_EQ(bad.err.rfind("<stdin>:", 0), 0u) << bad.err;  // errors name standard input
  const auto twice = run_command(kCli + " estimate --model - --hw - < " + root + "/configs/models/gpt2-small.yaml");
  EXPECT_EQ(twice.exit_code, 1);
  EXPECT_EQ(twice.err, "<stdin>: already read: only one input can be '-'\n");
}

TEST(CliCheck, JsonNamesEachFilesKind) {
  const std::string root = STARFISH_SOURCE_DIR;
  const auto r = run_command(kCli + " check " + root + "/configs/models/gpt2-small.yaml " + root +
                             "/hwprofiles/dgx-a100-80gb.yaml --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"kind\": \"model\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"kind\": \"hardware\""), std::string::npos) << r.out;
}

TEST(CliVersion, NamesTheGitRevision) {
  const auto r = run_command(kCli + " --version");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out.rfind("starfish 0.", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("(git "), std::string::npos) << r.out;
}

}  // namespace
}  // namespace starfish

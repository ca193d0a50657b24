// The `starfish` CLI as a user runs it: bundled names, tables, JSON, and one-line errors.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <unistd.h>

#include "support/run_command.h"

namespace starfish {
namespace {

using testing::run_command;

const std::string kCli = STARFISH_CLI;
const std::string kRoot = STARFISH_SOURCE_DIR;

TEST(CliEstimate, BundledNamesPrintATable) {
  const auto r = run_command("cd " + kRoot + " && " + kCli + " estimate --model gpt3-175b --hw dgx-a100-80gb");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("gpt3-175b on 1 x dgx-a100-80gb (8 GPUs)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("parameters   175 B"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("fits         NO: GPU memory"), std::string::npos) << r.out;
}

TEST(CliEstimate, JsonIsMachineReadable) {
  const auto r = run_command(kCli + " estimate --model " + kRoot + "/configs/models/gpt3-175b.yaml --hw " + kRoot +
                             "/hwprofiles/dgx-a100-80gb.yaml --nodes 2 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.front(), '{');
  EXPECT_NE(r.out.find("\"kind\": \"starfish.estimate\""), std::string::npos);
  EXPECT_NE(r.out.find("\"gpus\": 16"), std::string::npos);
  EXPECT_NE(r.out.find("\"data_parallel\": 16"), std::string::npos);
}

TEST(CliEstimate, BadInputIsOneLineAndNonZero) {
  const std::string bad = "/tmp/starfish_cli_bad_model.yaml";
  std::ofstream(bad) << "name: x\nlayers: 2\nhidden: 64\nheads: 4\nseq_len: 8\nvocab: 10\nwidth: 3\n";
  const auto r = run_command(kCli + " estimate --model " + bad + " --hw " + kRoot + "/hwprofiles/dgx-a100-80gb.yaml");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err.rfind(bad + ":7:1: field 'width': unknown field", 0), 0u) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_TRUE(r.out.empty());
}

TEST(CliEstimate, UsageErrorsExitTwo) {
  auto r = run_command(kCli + " estimate --model gpt3-175b --hw dgx-a100-80gb --nodse 2");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.rfind("starfish estimate: unknown option --nodse", 0), 0u) << r.err;
  r = run_command(kCli + " estimate --hw dgx-a100-80gb");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "starfish estimate: missing --model (and no plan file naming one)\n");
  r = run_command(kCli + " estimate --model no-such-model --hw dgx-a100-80gb");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("'no-such-model' is neither a file nor a bundled name"), std::string::npos) << r.err;
  r = run_command(kCli + " frobnicate");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.rfind("starfish: unknown verb 'frobnicate'", 0), 0u);
}

TEST(CliSimulate, AnEmittedMultiNodePlanSimulatesAsIs) {
  // The search resizes the one-node hwprofile to 2 nodes; the emitted plan must say so.
  const std::string plan = "/tmp/starfish_cli_emitted_" + std::to_string(::getpid()) + ".yaml";
  std::remove(plan.c_str());
  auto r = run_command("cd " + kRoot + " && " + kCli + " search --model gpt2-small --hw dgx-a100-80gb --nodes 2 --top 1 " +
                       "--analytic-only --emit " + plan);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = run_command(kCli + " simulate --plan " + plan + " --json");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"gpus\": 16"), std::string::npos) << r.out.substr(0, 400);
  std::remove(plan.c_str());
}

TEST(CliCheck, ValidatesFilesOfEachKind) {
  const auto r = run_command(kCli + " check " + kRoot + "/hwprofiles/dgx-a100-80gb.yaml " + kRoot +
                             "/configs/models/gpt3-175b.yaml");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("hardware 'dgx-a100-80gb', 1 node(s) x 8 A100-SXM4-80GB"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace starfish

// starfish-run as a user runs it: every output is checked before the first iteration, a bare
// file name is written in the current folder, --nproc takes whole numbers of ranks, and the
// bundled chunked CPU plan that `starfish check` and `simulate` accept trains.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "exec_test_util.h"

namespace starfish::exec {
namespace {

using testing::read_file;
using testing::run_starfish;
using testing::TempDir;

// The plan trains for 3 iterations: a refusal that comes after training shows "iter" lines.
std::string small_plan(const TempDir& dir) { return testing::write_plan(dir, "plan.yaml", 4, 4, 3); }

void expect_refused_before_training(const std::string& args, const std::string& log, const std::string& first_words) {
  EXPECT_EQ(run_starfish(args, log).code, 1) << args;
  const std::string text = read_file(log);
  EXPECT_EQ(text.rfind(first_words, 0), 0u) << args << "\n" << text;
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1) << text;  // one line, nothing trained
  EXPECT_EQ(text.find("iter "), std::string::npos) << text;
}

TEST(RunCli, EveryOutputIsCheckedBeforeTheFirstIteration) {
  TempDir dir("run-outputs");
  const std::string plan = small_plan(dir) + " --threads 1";
  expect_refused_before_training(plan + " --checkpoint-dir /proc/nope", dir / "ckpt.log",
                                 "starfish-run: --checkpoint-dir /proc/nope: cannot create the folder: ");
  expect_refused_before_training(plan + " --report /proc/nope.json", dir / "report.log",
                                 "starfish-run: --report /proc/nope.json: cannot write in folder /proc: ");
  expect_refused_before_training(plan + " --move-log " + (dir / "missing/moves.jsonl"), dir / "moves.log",
                                 "starfish-run: --move-log " + (dir / "missing/moves.jsonl") + ": folder " +
                                     (dir / "missing") + " does not exist");
  expect_refused_before_training(plan + " --params-out " + dir.path.string(), dir / "params.log",
                                 "starfish-run: --params-out " + dir.path.string() + ": is a folder, not a file");
  expect_refused_before_training(plan + " --resume --checkpoint-dir " + (dir / "none"), dir / "resume.log",
                                 "starfish-run: --checkpoint-dir " + (dir / "none") + ": no such folder");
  // Probing leaves nothing behind.
  for (const auto& entry : std::filesystem::directory_iterator(dir.path))
    EXPECT_EQ(entry.path().filename().string().find(".starfish-run-probe"), std::string::npos) << entry.path();
}

TEST(RunCli, ABareFileNameIsWrittenInTheCurrentFolder) {
  TempDir dir("run-bare-name");
  const std::string plan = small_plan(dir);
  const std::string cmd = "cd " + dir.path.string() + " && " + STARFISH_RUN + " " + plan +
                          " --threads 1 --iterations 1 --params-out p0.ckpt --report r.json >" + (dir / "log") + " 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << read_file(dir / "log");
  EXPECT_TRUE(std::filesystem::is_regular_file(dir / "p0.ckpt"));
  EXPECT_TRUE(std::filesystem::is_regular_file(dir / "r.json"));
}

TEST(RunCli, NprocTakesAWholeNumberOfRanks) {
  TempDir dir("run-nproc");
  const std::string plan = small_plan(dir);
  for (const std::string bad : {"0", "-2", "two", "1.5"}) {
    EXPECT_EQ(run_starfish("--nproc " + bad + " " + plan, dir / "log").code, 1) << bad;
    EXPECT_EQ(read_file(dir / "log"),
              "starfish-run: --nproc expects a whole number of ranks from 1 to 4096, got '" + bad + "'\n");
  }
  EXPECT_EQ(run_starfish(plan + " --nproc", dir / "log").code, 1);
  EXPECT_EQ(read_file(dir / "log"), "starfish-run: --nproc expects a whole number of ranks from 1 to 4096, got ''\n");
}

TEST(RunCli, TheBundledChunkedCpuPlanTrains) {
  // configs/plans/tiny-cpu.yaml passes `starfish check` and `simulate` (tests/sim/cli); the
  // executor agrees on what it holds: one micro-batch of the whole batch per iteration.
  TempDir dir("run-tiny-cpu");
  const std::string plan = std::string(STARFISH_SOURCE_DIR) + "/configs/plans/tiny-cpu.yaml";
  ASSERT_EQ(run_starfish(plan + " --threads 1 --iterations 2 --report " + (dir / "r.json"), dir / "log").code, 0)
      << read_file(dir / "log");
  EXPECT_NE(read_file(dir / "log").find("iter    2/2"), std::string::npos) << read_file(dir / "log");
  // With two micro-batches per rank it is refused, in the words `starfish check` uses.
  std::string text = read_file(plan);
  text.replace(text.find("  micro_batch: 8"), 16, "  micro_batch: 4");
  text.replace(text.find("../models/tiny-gpt.yaml"), 23, std::string(STARFISH_SOURCE_DIR) + "/configs/models/tiny-gpt.yaml");
  text.replace(text.find("../../hwprofiles/cpu-host.yaml"), 30, std::string(STARFISH_SOURCE_DIR) + "/hwprofiles/cpu-host.yaml");
  testing::write_file(dir / "accumulating.yaml", text);
  EXPECT_EQ(run_starfish((dir / "accumulating.yaml") + " --threads 1", dir / "acc.log").code, 1);
  EXPECT_NE(read_file(dir / "acc.log").find("field 'plan.micro_batch': the chunk runtime runs each rank's batch as one micro-batch"),
            std::string::npos)
      << read_file(dir / "acc.log");
}

}  // namespace
}  // namespace starfish::exec

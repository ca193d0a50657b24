// starfish-run as a user runs it: every output is checked before the first iteration, a bare
// file name is written in the current folder, --nproc takes whole numbers of ranks, and the
// bundled chunked CPU plan that `starfish check` and `simulate` accept trains, and it runs on
// OpenBLAS's kernels for this CPU, not its Prescott fallback (exec/blas_kernels.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "exec/blas_kernels.h"
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

TEST(RunCli, BadArgumentsGetOneLineAndVersionNamesTheRevision) {
  TempDir dir("run-args");
  const std::string plan = small_plan(dir);
  EXPECT_EQ(run_starfish("--frobnicate " + plan, dir / "log").code, 1);
  const std::string text = read_file(dir / "log");
  EXPECT_EQ(text.rfind("starfish-run: unknown option --frobnicate (known: ", 0), 0u) << text;
  EXPECT_NE(text.find("; see starfish-run --help\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("\\n"), std::string::npos) << text;  // no escaped usage text
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1) << text;
  EXPECT_EQ(run_starfish("--threads 1", dir / "log").code, 1);
  EXPECT_EQ(read_file(dir / "log"), "starfish-run: no plan file; see starfish-run --help\n");
  EXPECT_EQ(run_starfish("--version", dir / "log").code, 0);
  EXPECT_EQ(read_file(dir / "log").rfind("starfish-run ", 0), 0u) << read_file(dir / "log");
  EXPECT_NE(read_file(dir / "log").find(" (git "), std::string::npos) << read_file(dir / "log");
}

// The "cpus" field of a report.
std::string cpus_of(const std::string& report_path) {
  const std::string report = read_file(report_path);
  const size_t at = report.find("\"cpus\": \"");
  if (at == std::string::npos) return "(no cpus field)";
  return report.substr(at + 9, report.find('"', at + 9) - at - 9);
}

TEST(RunCli, BindCoresGivesEachLocalRankItsOwnShareOfTheCpus) {
  TempDir dir("run-bind-cores");
  const std::string plan = testing::write_plan(dir, "plan.yaml", 4, 2, 1);  // 2 ranks x micro-batch 2
  // One process has no local rank to bind: one line, nothing trained.
  expect_refused_before_training(plan + " --bind-cores --threads 1", dir / "log",
                                 "starfish-run: --bind-cores needs local ranks (--nproc N, or torchrun's LOCAL_RANK)");
  const std::string unbound = (dir / "unbound.json");
  ASSERT_EQ(run_starfish("--nproc 2 " + plan + " --threads 1 --iterations 1 --report " + unbound, dir / "log").code, 0)
      << read_file(dir / "log");
  const std::string all = cpus_of(unbound);
  EXPECT_EQ(cpus_of(unbound + ".rank1"), all);  // unbound, every rank may run anywhere
  const std::string bound = (dir / "bound.json");
  ASSERT_EQ(run_starfish("--nproc 2 " + plan + " --bind-cores --threads 1 --iterations 1 --report " + bound, dir / "log").code, 0)
      << read_file(dir / "log");
  const std::string first = cpus_of(bound), second = cpus_of(bound + ".rank1");
  if (all.find_first_of("-,") == std::string::npos) {  // one CPU: both ranks share it
    EXPECT_EQ(first, all);
    EXPECT_EQ(second, all);
    return;
  }
  // Two different shares of what the run could use (on this project's 2-CPU machines "0", "1").
  EXPECT_NE(first, second);
  EXPECT_NE(first, all);
  EXPECT_EQ(first.find_first_not_of("0123456789-,"), std::string::npos) << first;
  if (all == "0-1") {
    EXPECT_EQ(first, "0");
    EXPECT_EQ(second, "1");
  }
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

TEST(RunCli, LayerVariantsItsGptLayerDoesNotBuildAreRefusedByField) {
  // The simulator costs these; starfish-run's GPT layer would train another model, so it names the
  // field and stops before it starts.
  TempDir dir("run-variants");
  const std::string source = STARFISH_SOURCE_DIR;
  std::string plan = read_file(source + "/configs/plans/tiny-cpu.yaml");
  plan.replace(plan.find("../models/tiny-gpt.yaml"), 23, (dir / "m.yaml"));
  plan.replace(plan.find("../../hwprofiles/cpu-host.yaml"), 30, source + "/hwprofiles/cpu-host.yaml");
  testing::write_file(dir / "plan.yaml", plan);
  const std::string model = read_file(source + "/configs/models/tiny-gpt.yaml");
  for (const auto& [variant, field] : std::vector<std::pair<std::string, std::string>>{
           {"qk_norm: true\n", "qk_norm"}, {"sliding_window: {tokens: 16, full_every: 2}\n", "sliding_window"}}) {
    testing::write_file(dir / "m.yaml", model + variant);
    EXPECT_EQ(run_starfish((dir / "plan.yaml") + " --threads 1", dir / "log").code, 1);
    EXPECT_NE(read_file(dir / "log").find("m.yaml: field '" + field + "': starfish-run's"), std::string::npos)
        << read_file(dir / "log");
  }
}

TEST(RunCli, APlanItsExecutorCannotRunIsRefusedAtItsLineAndColumn) {
  // The plan asks for 2 data-parallel ranks and the run has 1: refused before training, the
  // error naming the plan's line and column as `starfish check`'s do.
  TempDir dir("run-refused-at");
  const std::string source = STARFISH_SOURCE_DIR;
  std::string plan = read_file(source + "/configs/plans/tiny-cpu.yaml");
  plan.replace(plan.find("../models/tiny-gpt.yaml"), 23, source + "/configs/models/tiny-gpt.yaml");
  plan.replace(plan.find("../../hwprofiles/cpu-host.yaml"), 30, source + "/hwprofiles/cpu-host.yaml");
  plan.replace(plan.find("  micro_batch: 8"), 16, "  data_parallel: 2\n  micro_batch: 4");
  testing::write_file(dir / "plan.yaml", plan);
  expect_refused_before_training((dir / "plan.yaml") + " --threads 1", dir / "log",
                                 "starfish-run: " + dir / "plan.yaml" + ":17:3: field 'plan.data_parallel': the plan asks for 2 ranks, this run "
                                                     "has 1 (WORLD_SIZE / --nproc)");
}

// The BLAS kernels the run's report names, with OPENBLAS_CORETYPE as `coretype` ("" = unset).
std::string blas_kernels_of_a_run(const TempDir& dir, const std::string& coretype) {
  const std::string env = coretype.empty() ? "env -u OPENBLAS_CORETYPE " : "env OPENBLAS_CORETYPE=" + coretype + " ";
  const std::string cmd = env + STARFISH_RUN + " " + small_plan(dir) + " --threads 1 --iterations 1 --quiet --report " +
                          (dir / "r.json") + " >" + (dir / "log") + " 2>&1";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << read_file(dir / "log");
  const std::string report = read_file(dir / "r.json");
  const size_t at = report.find("\"blas\": \"");
  if (at == std::string::npos) return "(no blas field)";
  const size_t from = at + 9;
  return report.substr(from, report.find('"', from) - from);
}

TEST(RunCli, RunsOnTheBestBlasKernelsThisCpuHasUnlessTheUserChose) {
  TempDir dir("run-blas");
  const std::string kernels = blas_kernels_of_a_run(dir, "");
  ASSERT_FALSE(kernels.empty()) << "LibTorch's BLAS is not OpenBLAS: scripts/setup-debian.sh makes it libblas.so.3";
  // OpenBLAS 0.3.21 falls back to Prescott (SSE3) on Intel models it does not know
  // (OpenBLAS#4267): starfish-run must not train on that when the CPU has AVX2 or AVX-512.
  if (!best_blas_core_for_this_cpu().empty()) EXPECT_NE(kernels, "Prescott");
  // A user's own OPENBLAS_CORETYPE is kept.
  EXPECT_EQ(blas_kernels_of_a_run(dir, "Prescott"), "Prescott");
}

}  // namespace
}  // namespace starfish::exec

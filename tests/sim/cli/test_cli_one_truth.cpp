// One truth across the verbs: `simulate` refuses a plan that does not fit (unless --allow-oom),
// a plan that would straddle nodes is refused in one line instead of failing inside the
// simulator, and the answers maxsize and size-cluster emit are taken by `simulate --plan` and
// `estimate --plan` as they are, with the same numbers.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

#include "sim/spec/json_reader.h"
#include "support/run_command.h"

namespace starfish {
namespace {

namespace fs = std::filesystem;
using testing::CommandResult;

const std::string kCli = STARFISH_CLI;
const std::string kRoot = STARFISH_SOURCE_DIR;

CommandResult cli(const std::string& args) { return testing::run_command(kCli + " " + args); }

// A fresh directory under the test temp dir.
fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::path(::testing::TempDir()) / ("starfish_one_truth_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// A plan of GPT-3 175B on DGX A100 nodes, naming the bundled model and hardware.
std::string gpt3_plan(const fs::path& dir, int nodes, int64_t batch, const std::string& plan) {
  const std::string path = (dir / "plan.yaml").string();
  std::ofstream(path) << "model: " << kRoot << "/configs/models/gpt3-175b.yaml\n"
                      << "hardware: " << kRoot << "/hwprofiles/dgx-a100-80gb.yaml\n"
                      << "nodes: " << nodes << "\ntraining: {global_batch: " << batch << "}\n"
                      << "plan: {" << plan << "}\n";
  return path;
}

void expect_one_line(const CommandResult& r, int code, const std::string& prefix) {
  EXPECT_EQ(r.exit_code, code) << r.err;
  EXPECT_EQ(r.err.rfind(prefix, 0), 0u) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

TEST(OneTruth, SimulateRefusesAPlanOverTheGpuUnlessAskedToShowIt) {
  // 175B over TP4 x PP8 with ZeRO-1 and no DP to shard over: about 120 GiB a GPU of 78.5 usable
  // (80 GiB less the profile's 1,573 MiB CUDA context).
  const std::string plan = gpt3_plan(fresh_dir("oom"), 4, 64, "tensor_parallel: 4, pipeline_parallel: 8, zero_stage: 1, recompute: full");
  const CommandResult refused = cli("simulate --plan " + plan);
  expect_one_line(refused, 1, plan + ":5:1: field 'plan': the plan does not fit: simulated GPU memory: needs ");
  EXPECT_NE(refused.err.find(" of 78.5 GiB per GPU (--allow-oom shows the simulation anyway)"), std::string::npos) << refused.err;
  EXPECT_TRUE(refused.out.empty()) << refused.out;
  // estimate says the same of the same plan.
  const CommandResult est = cli("estimate --plan " + plan);
  EXPECT_EQ(est.exit_code, 0) << est.err;
  EXPECT_NE(est.out.find("fits         NO: GPU memory: needs "), std::string::npos) << est.out;
  // --allow-oom shows the overflow and succeeds.
  const CommandResult shown = cli("simulate --plan " + plan + " --allow-oom");
  EXPECT_EQ(shown.exit_code, 0) << shown.err;
  EXPECT_NE(shown.out.find("  DOES NOT FIT: GPU memory: needs "), std::string::npos) << shown.out;
  const JsonValue j = parse_json(cli("simulate --plan " + plan + " --allow-oom --json").out);
  const JsonValue* fits = j.find("memory")->find("fits");
  ASSERT_NE(fits, nullptr);
  EXPECT_FALSE(fits->boolean);
  EXPECT_GT(*j.number_at("memory.peak_gpu_bytes"), *j.number_at("memory.gpu_capacity_bytes"));
  EXPECT_EQ(j.string_at("memory.why_not").value_or("").rfind("GPU memory: needs ", 0), 0u);
}

// Regression: TP 3 on 8-GPU nodes (size-cluster used to answer GPT-3 with it) made the
// simulator fail in a hierarchical reduce-scatter over uneven data-parallel groups. Now every
// verb refuses the plan in one line naming the field.
TEST(OneTruth, TensorParallelThreeOnEightGpuNodesIsRefusedInOneLine) {
  const std::string plan = gpt3_plan(fresh_dir("tp3"), 3, 48, "tensor_parallel: 3, zero_stage: 1, recompute: full");
  const std::string why = plan + ":5:8: field 'plan.tensor_parallel': 3 neither divides the 8 GPUs per node nor is a "
                                 "multiple of them, so tensor-parallel groups would straddle nodes";
  expect_one_line(cli("simulate --plan " + plan), 1, why);
  expect_one_line(cli("estimate --plan " + plan), 1, why);
  expect_one_line(cli("check " + plan), 1, why);
}

TEST(OneTruth, AChunkPlanTheRuntimeCannotPlaceIsRefusedAtThePlan) {
  // GPT-3 175B in chunks on one rank's 80 GB: the runtime cannot hold even its first moment's
  // chunks (147 GiB), so there is no peak to show, with --allow-oom or not; the refusal names
  // the plan, as an overflow does, and estimate says it does not fit either.
  const std::string plan = gpt3_plan(fresh_dir("chunks"), 16, 512, "data_parallel: 128, micro_batch: 4, zero_stage: 1, "
                                                                    "recompute: full, chunk_size: 67108864");
  const std::string why = plan + ":5:1: field 'plan': the plan does not fit: chunk runtime: GPU budget too small";
  expect_one_line(cli("simulate --plan " + plan), 1, why);
  expect_one_line(cli("simulate --plan " + plan + " --allow-oom"), 1, why);
  const CommandResult est = cli("estimate --plan " + plan);
  EXPECT_NE(est.out.find("fits         NO"), std::string::npos) << est.out << est.err;
}

// Every answer of a verb's JSON against `simulate --plan` and `estimate --plan` of its file.
void expect_simulate_and_estimate_agree(const fs::path& plan, double simulated_tokens_per_s, double analytic_tokens_per_s) {
  const CommandResult sim = cli("simulate --plan " + plan.string() + " --json");
  ASSERT_EQ(sim.exit_code, 0) << plan << ": " << sim.err;
  const JsonValue s = parse_json(sim.out);
  EXPECT_TRUE(s.find("memory")->find("fits")->boolean);
  EXPECT_NEAR(*s.number_at("tokens_per_s"), simulated_tokens_per_s, 1e-9 * simulated_tokens_per_s) << plan;
  const CommandResult est = cli("estimate --plan " + plan.string() + " --json");
  ASSERT_EQ(est.exit_code, 0) << plan << ": " << est.err;
  const JsonValue e = parse_json(est.out);
  EXPECT_TRUE(e.find("fits")->boolean) << plan;
  EXPECT_NEAR(*e.number_at("tokens_per_s"), analytic_tokens_per_s, 1e-9 * analytic_tokens_per_s) << plan;
}

// The example: on PatrickStar's 8x V100 + 240 GB node maxsize answered 34.7B, which
// estimate said needs 389 GiB of host memory and simulate refused.
TEST(OneTruth, MaxsizeEmitsPlansThatSimulateAndEstimateTakeAsTheyAre) {
  const fs::path dir = fresh_dir("maxsize") / "answers";
  const CommandResult r = cli("maxsize --hw v100-pcie-8x-240gb --json --emit " + dir.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const JsonValue j = parse_json(r.out);
  int emitted = 0;
  for (const JsonValue& v : j.find("variants")->array) {
    for (const char* kind : {"within_budget", "memory_bound"}) {
      const JsonValue& a = *v.find(kind);
      if (!a.find("found")->boolean) continue;
      const std::string file =
          *v.string_at("key") + (std::string(kind) == "memory_bound" ? "-memory-bound" : "") + "-plan.yaml";
      ASSERT_TRUE(fs::exists(dir / file)) << file;
      EXPECT_TRUE(fs::exists(dir / (*a.string_at("model") + ".yaml")));  // the generated model, beside it
      EXPECT_EQ(*a.string_at("tier"), "des");
      expect_simulate_and_estimate_agree(dir / file, *a.number_at("tokens_per_s"), *a.number_at("analytic.tokens_per_s"));
      ++emitted;
    }
  }
  EXPECT_EQ(emitted, 10);  // five systems, each within the budget and by memory alone
  EXPECT_NE(r.err.find("wrote " + (dir / "any-plan.yaml").string()), std::string::npos) << r.err;
  // Nothing is overwritten without --force.
  const CommandResult again = cli("maxsize --hw v100-pcie-8x-240gb --emit " + dir.string());
  // (the files are checked in name order)
  expect_one_line(again, 1, (dir / "any-memory-bound-plan.yaml").string() + ": already exists (refusing to overwrite it; --force replaces it)");
  EXPECT_EQ(cli("maxsize --hw v100-pcie-8x-240gb --emit " + dir.string() + " --force").exit_code, 0);
}

// The other example: GPT-3 on 300B tokens within 30 days, which size-cluster answered
// with TP 3 that `simulate` could not run.
TEST(OneTruth, SizeClusterEmitsAPlanThatSimulateAndEstimateTakeAsItIs) {
  const fs::path dir = fresh_dir("size_cluster");
  const CommandResult r = cli("size-cluster --model gpt3-175b --tokens 300B --days 30 --hw dgx-a100-80gb --json --emit " +
                              dir.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const JsonValue j = parse_json(r.out);
  ASSERT_TRUE(j.find("found")->boolean);
  const JsonValue& best = j.find("search")->find("rows")->array.at(0);
  EXPECT_EQ(8 % static_cast<int>(*best.number_at("plan.tensor_parallel")), 0);
  EXPECT_EQ(*best.string_at("refined.source"), "des");
  EXPECT_TRUE(fs::exists(dir / "gpt3-175b.yaml"));  // the model file, copied beside the plan
  expect_simulate_and_estimate_agree(dir / "plan.yaml", *best.number_at("tokens_per_s"), *best.number_at("analytic.tokens_per_s"));
}

}  // namespace
}  // namespace starfish

// The search verbs as a user runs them: bad input gives an exit code and one line on stderr.
#include <gtest/gtest.h>


#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

#include "sim/spec/json_reader.h"
#include "support/run_command.h"

namespace {

struct CliRun {
  int code = -1;
  std::string out, err;
};

// Through the shared runner: its stderr file is unique per process and call, so tests running
// in parallel (ctest -j) never read each other's errors.
CliRun run(const std::string& args) {
  const auto r = starfish::testing::run_command(std::string(STARFISH_CLI) + " " + args);
  return CliRun{r.exit_code, r.out, r.err};
}

std::string hw(const std::string& name) { return std::string(STARFISH_SOURCE_DIR) + "/hwprofiles/" + name + ".yaml"; }
std::string model(const std::string& name) {
  return std::string(STARFISH_SOURCE_DIR) + "/configs/models/" + name + ".yaml";
}

void expect_one_line_error(const CliRun& r, int code, const std::string& text) {
  EXPECT_EQ(r.code, code) << r.err;
  EXPECT_EQ(r.err, text + "\n");
}

TEST(CliSearch, MissingModelIsAUsageError) {
  expect_one_line_error(run("search --hw " + hw("dgx-a100-80gb")), 2, "starfish search: missing --model");
}

TEST(CliSearch, GpusAndNodesTogetherAreRefused) {
  expect_one_line_error(run("search --model " + model("gpt2-small") + " --hw " + hw("dgx-a100-80gb") +
                            " --gpus 16 --nodes 2"),
                        2, "starfish search: give --gpus or --nodes, not both");
}

TEST(CliSearch, GpusThatAreNotWholeNodesAreRefused) {
  expect_one_line_error(run("search --model " + model("gpt2-small") + " --hw " + hw("dgx-a100-80gb") + " --gpus 12"), 2,
                        "starfish search: --gpus 12 is not a whole number of 8-GPU nodes of " + hw("dgx-a100-80gb"));
}

TEST(CliSearch, BadBatchIsAUsageError) {
  expect_one_line_error(run("search --model " + model("gpt2-small") + " --hw " + hw("dgx-a100-80gb") + " --batch 0"), 2,
                        "starfish search: --batch expects a positive whole number, got '0'");
}

TEST(CliSearch, ABatchWithNoLayoutFindsNoPlan) {
  // 32 GPUs: TP x PP is at most 16 for 12 heads and 12 layers, so DP >= 2 cannot divide 3.
  const CliRun r = run("search --model " + model("gpt2-small") + " --hw " + hw("dgx-a100-80gb") + " --nodes 4 --batch 3");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("no plan fits."), std::string::npos) << r.out;
}

TEST(CliSearch, EmitWritesALoadablePlanAndRefusesToOverwrite) {
  const std::string path = ::testing::TempDir() + "starfish_search_emit_" + std::to_string(::getpid()) + ".yaml";
  std::filesystem::remove(path);
  const std::string args = "search --model " + model("gpt2-small") + " --hw " + hw("dgx-a100-80gb") + " --top 3 --emit " + path;
  const CliRun first = run(args);
  ASSERT_EQ(first.code, 0) << first.err;
  EXPECT_NE(first.out.find("tokens/s"), std::string::npos);
  ASSERT_TRUE(std::filesystem::exists(path));
  // starfish estimate reads the emitted plan back (model and hardware paths inside it).
  const CliRun est = run("estimate --plan " + path);
  EXPECT_EQ(est.code, 0) << est.err;
  EXPECT_NE(est.out.find("fits         yes"), std::string::npos) << est.out;
  const CliRun again = run(args);
  EXPECT_EQ(again.code, 1);
  EXPECT_NE(again.err.find(path), std::string::npos) << again.err;
  EXPECT_EQ(std::count(again.err.begin(), again.err.end(), '\n'), 1) << again.err;
  EXPECT_EQ(run(args + " --force").code, 0);
}

TEST(CliSearch, JsonCarriesTheExports) {
  const CliRun r = run("search --model " + model("gpt2-small") + " --hw " + hw("dgx-a100-80gb") +
                       " --top 3 --json --megatron --deepspeed --nvme-path /scratch");
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* key : {"\"exports\": {", "\"megatron\": {", "\"arguments\": [", "\"--tensor-model-parallel-size\"",
                          "\"deepspeed\": {", "\"config\": {", "\"train_micro_batch_size_per_gpu\""})
    EXPECT_NE(r.out.find(key), std::string::npos) << key << " missing in\n" << r.out;
}

// exports.<name> of a search's --json output (nullptr when absent).
const starfish::JsonValue* export_of(const starfish::JsonValue& search, const std::string& name) {
  const starfish::JsonValue* exports = search.find("exports");
  return exports ? exports->find(name) : nullptr;
}

// torchtitan: a recipe module for the best fsdp plan of a LLaMA; GPT-2 is no llama3 decoder.
TEST(CliSearch, TorchtitanRecipeOrTheModelsRefusal) {
  const CliRun r = run("search --model " + model("llama2-7b") + " --hw " + hw("dgx-a100-80gb") +
                       " --top 3 --analytic-only --json --torchtitan");
  ASSERT_EQ(r.code, 0) << r.err;
  const starfish::JsonValue j = starfish::parse_json(r.out);
  const starfish::JsonValue* t = export_of(j, "torchtitan");
  ASSERT_NE(t, nullptr) << r.out;
  EXPECT_FALSE(t->string_at("label").value_or("").empty()) << r.out;
  EXPECT_NE(t->string_at("recipe").value_or("").find("parallelism=ParallelismConfig("), std::string::npos);
  EXPECT_NE(t->string_at("recipe").value_or("").find("def starfish_plan() -> Trainer.Config:"), std::string::npos);
  EXPECT_NE(t->string_at("launch").value_or("").find("-m torchtitan.train --module starfish_plan --config starfish_plan"),
            std::string::npos);
  const CliRun gpt = run("search --model " + model("gpt2-small") + " --hw " + hw("dgx-a100-80gb") +
                         " --top 3 --analytic-only --torchtitan");
  EXPECT_EQ(gpt.code, 1);
  EXPECT_NE(gpt.out.find("torchtitan: cannot export this model: field 'model.norm': "), std::string::npos) << gpt.out;
}

// Megatron-Bridge: run_recipe.py overrides for the best Megatron-core plan, in --json too.
TEST(CliSearch, MegatronBridgeOverrides) {
  const CliRun r = run("search --model " + model("llama3-8b") + " --hw " + hw("dgx-h100") +
                       " --framework megatron-core --top 3 --analytic-only --json --megatron-bridge");
  ASSERT_EQ(r.code, 0) << r.err;
  const starfish::JsonValue j = starfish::parse_json(r.out);
  const starfish::JsonValue* b = export_of(j, "megatron_bridge");
  ASSERT_NE(b, nullptr) << r.out;
  EXPECT_EQ(b->string_at("recipe").value_or(""), "vanilla_gpt_pretrain_config");
  const std::string command = b->string_at("command").value_or("");
  for (const char* part : {"python scripts/training/run_recipe.py --recipe vanilla_gpt_pretrain_config",
                           "model.rotary_base=500000 \\\n", "model.activation_func=silu \\\n",
                           "model.num_query_groups=8 \\\n"})
    EXPECT_NE(command.find(part), std::string::npos) << part << " missing in\n" << command;
  const starfish::JsonValue* overrides = b->find("overrides");
  ASSERT_NE(overrides, nullptr);
  EXPECT_GT(overrides->array.size(), 30u);
}

TEST(CliSearch, NvmePathWithoutDeepSpeedIsAUsageError) {
  expect_one_line_error(run("search --model " + model("gpt2-small") + " --hw " + hw("dgx-a100-80gb") +
                            " --megatron --nvme-path /scratch"),
                        2, "starfish search: --nvme-path only applies to --deepspeed");
}

TEST(CliSearch, MegatronArgumentsForTheBestExpressiblePlan) {
  const CliRun r = run("search --model " + model("gpt2-small") + " --hw " + hw("dgx-a100-80gb") + " --megatron");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("--tensor-model-parallel-size"), std::string::npos);
  EXPECT_NE(r.out.find("--global-batch-size"), std::string::npos);
}

// A Megatron-core search on H100 (fp8 peak) tries fp8 GEMMs, and its Megatron export carries them.
TEST(CliSearch, MegatronCoreSearchTriesFp8AndExportsIt) {
  const CliRun r = run("search --model " + model("gpt2-small") + " --hw " + hw("dgx-h100") +
                       " --framework megatron-core --top 3 --analytic-only --megatron");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find(" fp8-hybrid "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--fp8-format hybrid"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--fp8-recipe delayed"), std::string::npos) << r.out;
  const CliRun no_fp8 = run("search --model " + model("gpt2-small") + " --hw " + hw("dgx-h100") +
                            " --framework megatron-core --top 3 --analytic-only --no-fp8");
  ASSERT_EQ(no_fp8.code, 0) << no_fp8.err;
  EXPECT_EQ(no_fp8.out.find("fp8"), std::string::npos) << no_fp8.out;
  expect_one_line_error(run("search --model " + model("gpt2-small") + " --hw " + hw("dgx-h100") + " --framework tf"), 2,
                        "starfish search: --framework takes megatron-lm, megatron-core, deepspeed or fsdp, not 'tf'");
}

TEST(CliMaxsize, UnknownFamilyIsAUsageError) {
  expect_one_line_error(run("maxsize --hw " + hw("v100-pcie-8x-240gb") + " --family bert"), 2,
                        "starfish maxsize: --family must be gpt or llama, got 'bert'");
}

TEST(CliMaxsize, BadIterationLimitIsAUsageError) {
  expect_one_line_error(run("maxsize --hw " + hw("v100-pcie-8x-240gb") + " --max-iteration soon"), 2,
                        "starfish maxsize: --max-iteration expects a duration like 30s or 2min, got 'soon'");
}

TEST(CliMaxsize, ShowsEachSystemWithinTheDefaultBudgetAndByMemoryAlone) {
  const CliRun r = run("maxsize --hw " + hw("v100-pcie-8x-240gb") + " --seq 1024");
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* line : {"PatrickStar-style", "DeepSpeed ZeRO-Offload", "DeepSpeed ZeRO-Infinity", "Megatron 3D",
                           "budget: 20 tokens per parameter (Chinchilla) within 90 days (default;", "within the budget",
                           "memory alone", "PatrickStar-style vs DeepSpeed ZeRO-Offload"})
    EXPECT_NE(r.out.find(line), std::string::npos) << line << "\n" << r.out;
}

TEST(CliMaxsize, NoBudgetExcludesBudgetFlags) {
  expect_one_line_error(run("maxsize --hw " + hw("v100-pcie-8x-240gb") + " --no-budget --days 30"), 2,
                        "starfish maxsize: --no-budget excludes --tokens, --days, --min-tokens-per-s and --max-iteration");
  expect_one_line_error(run("maxsize --hw " + hw("v100-pcie-8x-240gb") + " --days 0"), 2,
                        "starfish maxsize: --days must be positive, got '0'");
  expect_one_line_error(run("maxsize --hw " + hw("v100-pcie-8x-240gb") + " --min-tokens-per-s fast"), 2,
                        "starfish maxsize: --min-tokens-per-s expects a number of tokens per second, got 'fast'");
}

TEST(CliSizeCluster, BadTokenCountIsAUsageError) {
  expect_one_line_error(run("size-cluster --model " + model("gpt2-small") + " --hw " + hw("dgx-a100-80gb") +
                            " --tokens lots --days 3"),
                        2, "starfish size-cluster: --tokens: 'lots' is not a token count (examples: 300B, 1T, 300G, 300e9)");
}

TEST(CliSizeCluster, NegativeDaysIsAUsageError) {
  expect_one_line_error(run("size-cluster --model " + model("gpt2-small") + " --hw " + hw("dgx-a100-80gb") +
                            " --tokens 10B --days -1"),
                        2, "starfish size-cluster: --days must be positive, got '-1'");
}

TEST(CliSizeCluster, FindsNodesForASmallJob) {
  const CliRun r = run("size-cluster --model " + model("gpt2-small") + " --hw " + hw("dgx-a100-80gb") +
                    " --tokens 10B --days 1 --json");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("\"found\": true"), std::string::npos) << r.out;
}

}  // namespace

// The `starfish` CLI as a user runs it: bundled names, tables, JSON, and one-line errors.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <vector>
#include <unistd.h>

#include "sim/spec/json_reader.h"
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

TEST(CliEstimate, TheMi300xProfileRuns) {
  // AMD MI300X: the profile's file path as the README shows it; 192 GB (decimal, as AMD's data
  // sheet) less the 2 GiB reserved is 176.8 GiB a GPU for the model.
  const auto r = run_command("cd " + kRoot + " && " + kCli + " estimate --model llama3-8b --hw hwprofiles/amd-mi300x.yaml");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("llama3-8b on 1 x amd-mi300x (8 GPUs)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("capacity          177 GiB"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("throughput"), std::string::npos) << r.out;
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

// Under full recomputation the estimate says how few layers could recompute and still fit
// (Megatron's block method), and that answer is one `estimate` itself accepts: it fits with those
// layers and not with one fewer. Llama 2 7B, TP 2, micro-batch 2 on a DGX A100 80GB.
TEST(CliEstimate, SaysTheFewestRecomputingLayersThatFitAndTheyDo) {
  auto plan_file = [](const std::string& recompute_layers) {
    const std::string path = "/tmp/starfish_cli_block_" + std::to_string(::getpid()) + ".yaml";
    std::ofstream(path) << "model: " << kRoot << "/configs/models/llama2-7b.yaml\nhardware: " << kRoot
                        << "/hwprofiles/dgx-a100-80gb.yaml\ntraining: {global_batch: 64}\n"
                        << "plan: {tensor_parallel: 2, micro_batch: 2, zero_stage: 1, recompute: full"
                        << recompute_layers << "}\n";
    return path;
  };
  const std::string path = plan_file("");
  const auto table = run_command(kCli + " estimate --plan " + path);
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("also fits (that many layers of each virtual stage recompute"), std::string::npos) << table.out;
  const auto r = run_command(kCli + " estimate --json --plan " + path);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const JsonValue j = parse_json(r.out);
  ASSERT_EQ(j.string_at("fits_recomputing_less.recompute").value_or(""), "full") << r.out;
  const int n = static_cast<int>(j.number_at("fits_recomputing_less.recompute_layers").value_or(0));
  ASSERT_GT(n, 1) << r.out;
  auto fits_with = [&](int layers) {
    const auto e = run_command(kCli + " estimate --json --plan " + plan_file(", recompute_layers: " + std::to_string(layers)));
    EXPECT_EQ(e.exit_code, 0) << e.err;
    const JsonValue result = parse_json(e.out);  // named: find() points into it
    const JsonValue* fits = result.find("fits");
    return fits && fits->boolean;
  };
  EXPECT_TRUE(fits_with(n));
  EXPECT_FALSE(fits_with(n - 1));
  std::remove(path.c_str());
}

// A plan with Composer's training metrics says so in its plan line and its JSON, in both verbs.
// A chunked plan's estimate says where the chunk runtime steps its optimizer states, the shares
// its time model charges: GPT-2 XL over 8 GPUs of a DGX A100 in 2^27-element chunks, ZeRO-1,
// 8 sequences a GPU. Each rank keeps two units (1.5 GiB of master, momentum and variance each);
// the margin beside 71.5 GiB of activations and 3.5 GiB of gathered chunks holds one.
TEST(CliEstimate, AChunkedPlanSaysWhereItsStatesAreStepped) {
  const std::string path = "/tmp/starfish_cli_chunks_" + std::to_string(::getpid()) + ".yaml";
  std::ofstream(path) << "model: " << kRoot << "/configs/models/gpt2-xl.yaml\nhardware: " << kRoot
                      << "/hwprofiles/dgx-a100-80gb.yaml\ntraining: {global_batch: 64}\n"
                      << "plan: {framework: starfish, micro_batch: 8, zero_stage: 1, chunk_size: 128Mi}\n";
  const auto r = run_command(kCli + " estimate --plan " + path);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("chunks       optimizer states stepped on the GPU 50%, on the host 50% (0% kept on NVMe); "
                       "param chunks fetched at each use 0%"),
            std::string::npos)
      << r.out;
  const auto j = run_command(kCli + " estimate --plan " + path + " --json");
  ASSERT_EQ(j.exit_code, 0) << j.err;
  EXPECT_NE(j.out.find("\"optimizer_on_gpu\": 0.5"), std::string::npos) << j.out;
  const auto dense = run_command(kCli + " estimate --model gpt2-xl --hw dgx-a100-80gb");
  EXPECT_EQ(dense.out.find("chunks "), std::string::npos) << "only a chunked plan has the line";
  std::remove(path.c_str());
}

TEST(CliEstimate, TrainingMetricsShowInThePlan) {
  const std::string path = "/tmp/starfish_cli_metrics_" + std::to_string(::getpid()) + ".yaml";
  std::ofstream(path) << "model: " << kRoot << "/configs/models/gpt2-small.yaml\nhardware: " << kRoot
                      << "/hwprofiles/dgx-a100-80gb.yaml\ntraining: {global_batch: 64}\n"
                      << "plan: {framework: fsdp, micro_batch: 8, zero_stage: 3, loss: fused, train_metric_passes: 2}\n";
  for (const char* verb : {" estimate", " simulate"}) {
    const auto table = run_command(kCli + verb + " --plan " + path);
    ASSERT_EQ(table.exit_code, 0) << table.err;
    EXPECT_NE(table.out.find(", training metrics (2 cross-entropy passes a micro-batch)"), std::string::npos) << table.out;
  }
  const auto r = run_command(kCli + " estimate --json --plan " + path);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(parse_json(r.out).number_at("plan.train_metric_passes").value_or(0), 2) << r.out;
  std::remove(path.c_str());
}

// --ops lists each op of a layer as the estimate costs it: DeepSeek-V3 has dense layers (its first
// three) and MoE ones, each listed; an op's times add up to its layer's, and without --ops the
// JSON stays without them.
TEST(CliEstimate, OpsListEachLayerKindsOpsAndTheyAddUpToTheLayer) {
  const std::string base = kCli + " estimate --model deepseek-v3 --hw dgx-h100 --nodes 2";
  const auto table = run_command("cd " + kRoot + " && " + base + " --ops");
  ASSERT_EQ(table.exit_code, 0) << table.err;
  for (const char* line : {"layer ops    one GPU, one micro-batch of 1 x 4096 tokens", "dense layer", "moe layer",
                           "MLP-in GEMM", "MoE grouped expert GEMM in", "total"})
    EXPECT_NE(table.out.find(line), std::string::npos) << line << "\n" << table.out;
  const auto r = run_command("cd " + kRoot + " && " + base + " --ops --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const JsonValue j = parse_json(r.out);
  const JsonValue* layers = j.find("layer_ops");
  ASSERT_NE(layers, nullptr) << r.out;
  ASSERT_EQ(layers->array.size(), 2u);
  for (const JsonValue& layer : layers->array) {
    double forward = 0, backward = 0;
    for (const JsonValue& op : layer.find("ops")->array) {
      forward += op.number_at("forward_s").value_or(-1);
      backward += op.number_at("backward_s").value_or(-1);
    }
    EXPECT_NEAR(forward, layer.number_at("forward_s").value_or(0), 1e-12) << layer.string_at("layer").value_or("");
    EXPECT_NEAR(backward, layer.number_at("backward_s").value_or(0), 1e-12);
    EXPECT_GT(forward, 0);
  }
  EXPECT_EQ(layers->array[0].string_at("layer").value_or(""), "dense");
  EXPECT_EQ(layers->array[1].string_at("layer").value_or(""), "moe");
  const auto plain = run_command("cd " + kRoot + " && " + base + " --json");
  EXPECT_EQ(plain.out.find("layer_ops"), std::string::npos);
}

// Beside the ops, a layer's communication as the estimate charges it: Mixtral 8x7B at TP 2 with
// SP and EP 8 (selective recompute) has two TP collectives and two all-to-alls a pass, and in
// backward QKV's input gathered again (half an all-reduce: framework.h); a dense plan none of
// the exchanges.
TEST(CliEstimate, OpsCarryEachLayersCommunication) {
  const auto r = run_command("cd " + kRoot + " && " + kCli + " estimate --plan configs/plans/mixtral-8x7b-ep8.yaml --ops --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const JsonValue j = parse_json(r.out);
  const JsonValue* layers = j.find("layer_ops");
  ASSERT_NE(layers, nullptr) << r.out;
  ASSERT_EQ(layers->array.size(), 1u);  // every Mixtral layer is MoE
  const JsonValue& moe = layers->array[0];
  const double tp = moe.number_at("communication.tp_forward_s").value_or(0);
  const double exchange = moe.number_at("communication.exchange_forward_s").value_or(0);
  EXPECT_GT(tp, 0);
  EXPECT_GT(exchange, 0);
  EXPECT_DOUBLE_EQ(moe.number_at("communication.tp_backward_s").value_or(0), 1.25 * tp);
  EXPECT_DOUBLE_EQ(moe.number_at("communication.exchange_backward_s").value_or(0), exchange);
  const auto table = run_command("cd " + kRoot + " && " + kCli + " estimate --plan configs/plans/mixtral-8x7b-ep8.yaml --ops");
  EXPECT_NE(table.out.find("MoE token exchanges"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("TP collectives"), std::string::npos) << table.out;
  const auto dense = run_command("cd " + kRoot + " && " + kCli + " estimate --model llama3-8b --hw dgx-h100 --ops");
  EXPECT_EQ(dense.out.find("MoE token exchanges"), std::string::npos) << dense.out;
}

TEST(CliEstimate, BadInputIsOneLineAndNonZero) {
  const std::string bad = "/tmp/starfish_cli_bad_model_" + std::to_string(::getpid()) + ".yaml";
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

// The trace: counter tracks of each stage's GPU memory; the stage detail (default) draws fewer
// rows than every rank; a detail that is neither is a usage error.
TEST(CliSimulate, TraceDetailAndMemoryCounters) {
  const std::string base = ::testing::TempDir() + "/starfish_trace_" + std::to_string(::getpid());
  const std::string plan = base + "-plan.yaml";  // TP2 PP2 DP2: the stage leads are 2 of 8 GPUs
  std::ofstream(plan) << "model: " << kRoot << "/configs/models/gpt2-small.yaml\nhardware: " << kRoot
                      << "/hwprofiles/dgx-a100-80gb.yaml\ntraining: {global_batch: 16}\n"
                      << "plan: {tensor_parallel: 2, pipeline_parallel: 2, data_parallel: 2, micro_batch: 1}\n";
  const std::string job = kCli + " simulate --plan " + plan + " --trace ";
  auto events = [](const JsonValue& trace, const std::string& ph) {
    std::vector<const JsonValue*> out;
    for (const JsonValue& e : trace.find("traceEvents")->array)
      if (e.string_at("ph") == ph) out.push_back(&e);
    return out;
  };
  ASSERT_EQ(run_command(job + base + "-stage.json").exit_code, 0);
  ASSERT_EQ(run_command(job + base + "-rank.json --trace-detail rank").exit_code, 0);
  const JsonValue stage = read_json_file(base + "-stage.json"), rank = read_json_file(base + "-rank.json");
  const auto stage_slices = events(stage, "X"), rank_slices = events(rank, "X");
  EXPECT_LT(stage_slices.size(), rank_slices.size());
  for (const JsonValue* e : stage_slices) EXPECT_EQ(e->number_at("pid"), 0);  // stage 0's lead GPU is on node 0
  const auto counters = events(stage, "C");
  ASSERT_GE(counters.size(), 2u);
  EXPECT_EQ(counters.front()->string_at("name"), "stage 0 GPU memory (gpu0)");
  EXPECT_GT(counters.front()->number_at("args.bytes").value_or(0), 0);
  const auto r = run_command(job + base + "-x.json --trace-detail everything");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "starfish simulate: --trace-detail must be stage or rank, got 'everything'\n");
}

TEST(CliCompare, JsonCarriesEachQuantityAndItsRatio) {
  const std::string report = ::testing::TempDir() + "/starfish_compare_" + std::to_string(::getpid()) + ".json";
  ASSERT_EQ(run_command(kCli + " simulate --model gpt2-small --hw dgx-a100-80gb --json > " + report).exit_code, 0);
  const auto r = run_command(kCli + " compare " + report + " " + report + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const JsonValue j = parse_json(r.out);
  EXPECT_EQ(j.string_at("kind"), "starfish.compare");
  const JsonValue* quantities = j.find("quantities");
  ASSERT_NE(quantities, nullptr);
  ASSERT_FALSE(quantities->array.empty());
  EXPECT_EQ(quantities->array.front().string_at("name"), "iteration time");
  for (const JsonValue& q : quantities->array) {
    if (q.number_at("predicted").value_or(0) > 0) {
      EXPECT_EQ(q.number_at("ratio"), 1.0) << *q.string_at("name");
    }
  }
}

}  // namespace
}  // namespace starfish

// The real executor against the simulator for the same chunked plan, hardware and non-model
// bytes (issue 6): `starfish-run`'s move log equals `simulate`'s move for move, its report has
// the simulator's keys with the same steady-iteration byte counts, and `starfish compare` puts
// the two side by side. Both sides take the budgets from the same hardware file.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdio>
#include <fstream>

#include "exec_test_util.h"
#include "sim/chunk/move_log.h"
#include "sim/chunk/reference_backend.h"
#include "sim/chunk/iteration_driver.h"
#include "sim/chunk/runtime_config.h"
#include "sim/report/report.h"
#include "sim/schedule/simulate.h"
#include "sim/spec/job.h"
#include "sim/spec/json_reader.h"
#include "sim/spec/spec_io.h"

namespace starfish::exec {
namespace {

using testing::TempDir;

constexpr int64_t kNonModel = 12345;

struct ParityJob {
  std::string plan;  // plan file naming model.yaml and hw.yaml
  Job job;
  int64_t gpu_budget = 0;
};

std::string read_all(const std::string& path) { return testing::read_file(path); }

std::vector<Move> read_moves(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  return read_move_log(in);
}

// Writes model, hardware and plan into `dir`. The hardware is this machine's profile with the
// "GPU" memory set to the busiest moment's need plus room for one prefetch (so the runtime
// evicts every iteration: hence recompute full) and, with `states_on_nvme`, host memory for the param and grad chunks
// only (momentum and variance go to the NVMe files). `gpu_bytes` > 0 replaces the GPU memory.
// `cpu_embedding`: an untied model whose plan keeps the embeddings on the CPU.
ParityJob write_job(const TempDir& dir, bool states_on_nvme, int64_t iterations, int64_t gpu_bytes = 0, bool cpu_embedding = false) {
  testing::write_file(dir / "model.yaml", "name: test-gpt\nlayers: 2\nhidden: 32\nheads: 2\nseq_len: 16\nvocab: 256\nbias: false\n" +
                                              std::string(cpu_embedding ? "tied_embeddings: false\n" : ""));
  const std::string plan = dir / "plan.yaml";
  testing::write_file(plan, "model: model.yaml\nhardware: hw.yaml\ntraining:\n  global_batch: 4\n  dtype: fp32\n  optimizer: adamw\n"
                            "  learning_rate: 0.003\n  weight_decay: 0.01\n  iterations: " +
                                std::to_string(iterations) + "\n  seed: 5\nplan:\n  micro_batch: 4\n  chunk_size: 5000\n  recompute: full\n" +
                                // chunks reach NVMe only when the plan names it (chunks_may_use_nvme)
                                (states_on_nvme ? "  offload: {optimizer: nvme}\n" : "") +
                                (cpu_embedding ? "  cpu_embedding: true\n" : ""));
  Cluster hw = load_cluster(std::string(STARFISH_SOURCE_DIR) + "/hwprofiles/cpu-host.yaml");
  const PlanFile pf = load_plan_file(plan);
  const Model model = load_model(dir / "model.yaml");
  // The minimum GPU bytes from a warm-up on the reference backend, with the layout the
  // simulator builds for this job.
  const ChunkPlan cp = chunk_plan(make_job(model, hw, pf.training, pf.plan), 0, MemoryBudget{1 << 30, 1 << 30, 0});
  ReferenceBackend ref;
  ChunkRuntime rt(cp.layout, cp.options, ref);
  IterationDriver driver(rt, cp.tied_embeddings);
  FixedNonModel none(0);
  driver.run_iteration(none);
  const int64_t budget = gpu_bytes > 0 ? gpu_bytes : rt.minimum_gpu_bytes() + 20000;
  hw.node.gpu.memory_bytes = budget;
  hw.node.gpu.reserved_bytes = 0;
  // Two copy engines: with one, the simulator's report counts every copy as host -> GPU
  // (simulate.cpp classifies a copy by its engine's kind, and the single engine is CopyH2D).
  hw.node.gpu.copy_engines = 2;
  if (states_on_nvme) {
    const int64_t chunk = cp.layout.chunk(0).bytes();
    hw.node.host.memory_bytes = 2 * cp.layout.param_chunks() * chunk + 4 * chunk;
    hw.node.host.reserved_bytes = 0;
    hw.node.nvme->capacity_bytes = 64 << 20;
  } else {
    hw.node.host.memory_bytes = 64 << 20;
    hw.node.host.reserved_bytes = 0;
    hw.node.nvme.reset();
  }
  testing::write_file(dir / "hw.yaml", to_yaml(hw));
  // The job exactly as `starfish simulate --plan plan.yaml` would load it.
  Job job = make_job(load_model(dir / "model.yaml"), load_cluster(dir / "hw.yaml"), pf.training, pf.plan);
  return {plan, std::move(job), budget};
}

schedule::SimReport simulate_into(const ParityJob& s, const TempDir& dir) {
  schedule::SimOptions so;
  so.moves_path = dir / "sim.jsonl";
  so.fixed_non_model_bytes = kNonModel;
  const schedule::SimReport r = schedule::simulate(s.job, so);
  testing::write_file(dir / "sim.json", schedule::to_json(r));
  return r;
}

void run_executor(const ParityJob& s, const TempDir& dir) {
  const std::string args = s.plan + " --threads 1 --non-model " + std::to_string(kNonModel) + " --move-log " + (dir / "run.jsonl") +
                           " --report " + (dir / "run.json");
  ASSERT_EQ(testing::run_starfish(args, dir / "run.log").code, 0) << read_all(dir / "run.log");
}

int64_t count(const std::vector<Move>& moves, MoveReason reason) {
  int64_t n = 0;
  for (const Move& m : moves) n += m.reason == reason;
  return n;
}

// `starfish compare sim.json run.json --moves sim.jsonl run.jsonl` in `dir`: its output, once it
// exited 0 (identical move logs).
std::string compare_reports(const TempDir& dir) {
  const std::string cmd = std::string(STARFISH_CLI) + " compare " + (dir / "sim.json") + " " + (dir / "run.json") + " --moves " +
                          (dir / "sim.jsonl") + " " + (dir / "run.jsonl") + " >" + (dir / "compare.txt") + " 2>&1";
  const int st = std::system(cmd.c_str());
  const std::string out = read_all(dir / "compare.txt");
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << out;
  return out;
}

double number(const JsonValue& v, const std::string& path) {
  const auto x = v.number_at(path);
  EXPECT_TRUE(x.has_value()) << "no " << path;
  return x.value_or(-1);
}

TEST(SimParity, ThreeIterationsMoveForMoveWhileEvicting) {
  TempDir dir("parity-evict");
  const ParityJob s = write_job(dir, false, 3);
  const schedule::SimReport sim = simulate_into(s, dir);
  run_executor(s, dir);
  const std::vector<Move> a = read_moves(dir / "sim.jsonl"), b = read_moves(dir / "run.jsonl");
  const MoveDiff d = diff_move_logs(a, b);
  EXPECT_TRUE(d.same) << d.describe();
  EXPECT_GT(count(b, MoveReason::eviction), 0) << "the budget forced evictions";
  EXPECT_GT(count(b, MoveReason::prefetch), 0);
  EXPECT_EQ(static_cast<int64_t>(a.size()), sim.moves);

  // The report: the simulator's keys, and the same third-iteration bytes.
  const JsonValue run = read_json_file(dir / "run.json");
  EXPECT_EQ(run.string_at("kind"), "starfish.run");
  EXPECT_EQ(run.string_at("model"), "test-gpt");
  EXPECT_EQ(run.string_at("hardware"), s.job.cluster.name);
  EXPECT_EQ(number(run, "gpus"), 1);
  EXPECT_EQ(number(run, "moves"), static_cast<double>(sim.moves));
  EXPECT_GT(sim.h2d_bytes, 0);
  EXPECT_EQ(number(run, "bytes.h2d"), sim.h2d_bytes);
  EXPECT_EQ(number(run, "bytes.d2h"), sim.d2h_bytes);
  EXPECT_EQ(number(run, "bytes.nvme_read"), 0);
  EXPECT_EQ(number(run, "memory.gpu_budget_bytes"), static_cast<double>(s.gpu_budget)) << "the budget came from hw.yaml";
  EXPECT_EQ(number(run, "memory.cpu_budget_bytes"), 64 << 20);
  EXPECT_LE(number(run, "memory.gpu_pool_peak_bytes"), static_cast<double>(s.gpu_budget));
  EXPECT_EQ(number(run, "memory.peak_gpu_bytes"), number(run, "memory.gpu_pool_peak_bytes") + kNonModel);
  EXPECT_EQ(number(run, "steady_from_iteration"), 3);
  EXPECT_EQ(number(run, "steady_iterations"), 1);
  const JsonValue* its = run.find("iterations");
  ASSERT_NE(its, nullptr);
  ASSERT_EQ(its->array.size(), 3u);
  EXPECT_EQ(its->array[2].number_at("time_s"), run.number_at("iteration_s")) << "iteration_s is the steady (third) iteration's";
  double moves = 0;
  for (const JsonValue& it : its->array) moves += number(it, "moves");
  EXPECT_EQ(moves, static_cast<double>(sim.moves)) << "the per-iteration moves add up to all of them";

  // The breakdown (sim/report/report.h): every phase in both reports; measured, exclusive time
  // that adds up to the iteration, with the phases this plan has (recompute full, evicting, one
  // rank) non-zero and the one it lacks zero. No timing is asserted: only the structure.
  const report::Report measured = report::read_report_file(dir / "run.json");
  const report::Report predicted = report::read_report_file(dir / "sim.json");
  ASSERT_TRUE(measured.phases && predicted.phases);
  for (const report::IterationRecord& it : measured.iterations) {
    double sum = 0;
    for (report::PhaseId p : report::kPhases) sum += report::seconds(it.phases, p);
    EXPECT_NEAR(sum, it.time_s, 1e-6 + 1e-3 * it.time_s) << "iteration " << it.iteration;
    EXPECT_GT(it.phases.forward_s, 0);
    EXPECT_GT(it.phases.backward_s, 0);
    EXPECT_GT(it.phases.recompute_s, 0) << "recompute: full";
    EXPECT_GT(it.phases.optimizer_s, 0);
    EXPECT_GT(it.cpu_s, 0);
    EXPECT_GE(it.others_cpu_s, 0);
  }
  EXPECT_GT(measured.iterations[2].phases.moves_s, 0) << "the steady iteration evicts and prefetches";
  EXPECT_EQ(measured.phases->collectives_s, 0) << "one rank";
  EXPECT_GT(predicted.phases->recompute_s, 0);
  EXPECT_GT(predicted.phases->moves_s, 0);
  EXPECT_EQ(measured.threads_per_rank, 1);
  ASSERT_TRUE(measured.cpu_s && measured.load);
  EXPECT_GE(measured.load->cpus, 1);
}

// PatrickStar's CPU embedding: the executor trains the tables on the host and the runtime
// decides, for the chunks, exactly what the simulator's runtime decides. The simulator also moves
// the lookup's fp32 output to the GPU and its gradient back (4 x 16 tokens x 32 x 4 bytes each
// way); the executor's "GPU" is the host, so its report counts the runtime's moves alone.
TEST(SimParity, CpuEmbeddingMovesForMoveAndTheSimulatorAddsTheRowsCrossingPcie) {
  TempDir dir("parity-cpu-embedding");
  const ParityJob s = write_job(dir, false, 3, 0, true);
  ASSERT_TRUE(s.job.plan.cpu_embedding);
  const schedule::SimReport sim = simulate_into(s, dir);
  run_executor(s, dir);
  const MoveDiff d = diff_move_logs(read_moves(dir / "sim.jsonl"), read_moves(dir / "run.jsonl"));
  EXPECT_TRUE(d.same) << d.describe();
  const JsonValue run = read_json_file(dir / "run.json");
  const double rows_bytes = 4.0 * 16 * 32 * 4;
  EXPECT_GT(number(run, "bytes.h2d"), 0) << "the budget evicts and prefetches";
  EXPECT_EQ(sim.h2d_bytes, number(run, "bytes.h2d") + rows_bytes);
  EXPECT_EQ(sim.d2h_bytes, number(run, "bytes.d2h") + rows_bytes);
  EXPECT_NE(testing::read_file(dir / "run.log").find("loss"), std::string::npos);
}

TEST(SimParity, StatesOnNvmeMoveForMoveAndCompareShowsEveryRow) {
  TempDir dir("parity-nvme");
  const ParityJob s = write_job(dir, true, 3);
  const schedule::SimReport sim = simulate_into(s, dir);
  run_executor(s, dir);
  const MoveDiff d = diff_move_logs(read_moves(dir / "sim.jsonl"), read_moves(dir / "run.jsonl"));
  EXPECT_TRUE(d.same) << d.describe();
  const JsonValue run = read_json_file(dir / "run.json");
  EXPECT_GT(sim.nvme_read_bytes, 0) << "the states live on NVMe";
  EXPECT_EQ(number(run, "bytes.nvme_read"), sim.nvme_read_bytes);
  EXPECT_EQ(number(run, "bytes.nvme_write"), sim.nvme_write_bytes);
  EXPECT_EQ(number(run, "bytes.h2d"), sim.h2d_bytes);
  EXPECT_EQ(number(run, "bytes.d2h"), sim.d2h_bytes);
  EXPECT_GT(number(run, "memory.nvme_bytes_per_gpu"), 0);

  const std::string out = compare_reports(dir);
  // Every quantity with both a prediction and a measurement; equal byte counts and moves read 1.000.
  for (const char* row : {"iteration time", "tokens/s", "peak GPU memory (per GPU)", "peak CPU memory (per GPU)", "peak NVMe (per GPU)"})
    EXPECT_NE(out.find(row), std::string::npos) << row << " missing:\n" << out;
  for (const char* row : {"bytes host -> GPU", "bytes GPU -> host", "bytes read from NVMe", "bytes written to NVMe", "chunk moves"}) {
    const size_t at = out.find(row);
    ASSERT_NE(at, std::string::npos) << row << " missing:\n" << out;
    const std::string line = out.substr(at, out.find('\n', at) - at);
    EXPECT_NE(line.find(" 1.000"), std::string::npos) << line;
  }
  EXPECT_NE(out.find("move logs: identical"), std::string::npos) << out;
  // No quantity lacks either side: a "-" cell would mean a key the run does not write.
  EXPECT_EQ(out.find(" - "), std::string::npos) << out;
  // How it was measured, and where the time went on each side.
  EXPECT_NE(out.find("measured: median of 1 steady iteration(s) from iteration 3, 1 rank(s) x 1 intra-op thread(s)"),
            std::string::npos) << out;
  EXPECT_NE(out.find("  CPU time "), std::string::npos) << out;
  EXPECT_TRUE(out.find("  dedicated: ") != std::string::npos || out.find("  SHARED: ") != std::string::npos) << out;
  EXPECT_NE(out.find("time per iteration in"), std::string::npos) << out;
  for (const char* phase : {"\nforward ", "\nbackward ", "\nrecompute ", "\nmoves ", "\noptimizer "})
    EXPECT_NE(out.find(phase), std::string::npos) << phase << " missing:\n" << out;
}

TEST(SimParity, LaterIterationsRepeatTheSteadyBytes) {
  // Five iterations: the first three are the simulator's three, move for move, and every steady
  // iteration after moves exactly the simulated (third) iteration's bytes, so the report's
  // per-iteration mean is the simulator's figure.
  TempDir dir("parity-five");
  const ParityJob s = write_job(dir, true, 5);
  const schedule::SimReport sim = simulate_into(s, dir);
  run_executor(s, dir);
  const std::vector<Move> a = read_moves(dir / "sim.jsonl");
  std::vector<Move> b = read_moves(dir / "run.jsonl");
  ASSERT_GT(b.size(), a.size());
  b.resize(a.size());
  const MoveDiff d = diff_move_logs(a, b);
  EXPECT_TRUE(d.same) << d.describe();
  const JsonValue run = read_json_file(dir / "run.json");
  const JsonValue* its = run.find("iterations");
  ASSERT_NE(its, nullptr);
  ASSERT_EQ(its->array.size(), 5u);
  for (size_t i = 2; i < 5; ++i) {
    EXPECT_EQ(number(its->array[i], "h2d"), sim.h2d_bytes) << "iteration " << i + 1;
    EXPECT_EQ(number(its->array[i], "nvme_read"), sim.nvme_read_bytes) << "iteration " << i + 1;
  }
  EXPECT_EQ(number(run, "bytes.h2d"), sim.h2d_bytes);
  EXPECT_EQ(number(run, "steady_iterations"), 3);

  // `compare` compares the run's first three iterations with the simulator's three: the same
  // moves, the same log; the whole log (five iterations) is longer.
  const std::string out = compare_reports(dir);
  EXPECT_NE(out.find("the run's first 3 of 5 iterations"), std::string::npos) << out;
  const size_t at = out.find("chunk moves");
  ASSERT_NE(at, std::string::npos) << out;
  EXPECT_NE(out.substr(at, out.find('\n', at) - at).find(" 1.000"), std::string::npos) << out;
  EXPECT_NE(out.find("move logs: identical (" + std::to_string(a.size()) + " moves)"), std::string::npos) << out;
}

TEST(SimParity, WithRoomForTheStatesTheSteadyIterationsMoveNothingAsSimulated) {
  // A GPU with room for every chunk: the warm-up places the optimizer states on the GPU, the
  // second iteration moves them there, and from the third on nothing moves. The report's bytes
  // and time are those of the steady iterations (from the third, as the simulator's), not of
  // everything after the first.
  TempDir dir("parity-room");
  const ParityJob s = write_job(dir, false, 4, 64 << 20);
  const schedule::SimReport sim = simulate_into(s, dir);
  run_executor(s, dir);
  // Iterations 3 and 4 move nothing, so the whole run's log is the simulator's.
  const MoveDiff d = diff_move_logs(read_moves(dir / "sim.jsonl"), read_moves(dir / "run.jsonl"));
  EXPECT_TRUE(d.same) << d.describe();
  const JsonValue run = read_json_file(dir / "run.json");
  const JsonValue* its = run.find("iterations");
  ASSERT_NE(its, nullptr);
  ASSERT_EQ(its->array.size(), 4u);
  EXPECT_GT(number(its->array[1], "h2d"), 0) << "the second iteration moves the states to the GPU";
  EXPECT_EQ(number(its->array[2], "moves"), 0);
  EXPECT_EQ(sim.h2d_bytes, 0);
  EXPECT_EQ(number(run, "bytes.h2d"), 0);
  EXPECT_EQ(number(run, "steady_from_iteration"), 3);
  EXPECT_DOUBLE_EQ(number(run, "iteration_s"), (number(its->array[2], "time_s") + number(its->array[3], "time_s")) / 2);
}

TEST(SimParity, HardwareWithOtherGpuCountsIsRefused) {
  TempDir dir("parity-gpus");
  const ParityJob s = write_job(dir, false, 3);
  Cluster two = s.job.cluster;
  two.node.gpus = 2;
  testing::write_file(dir / "two.yaml", to_yaml(two));
  ASSERT_EQ(testing::run_starfish(s.plan + " --hw " + (dir / "two.yaml"), dir / "log").code, 1);
  EXPECT_NE(read_all(dir / "log").find(dir / "two.yaml" + ": the hardware has 2 GPUs but this run has 1 rank(s) (WORLD_SIZE / --nproc): "
                                                          "run one rank per GPU"),
            std::string::npos)
      << read_all(dir / "log");
}

TEST(SimParity, ChunkedPlanWithoutHardwareOrBudgetIsRefused) {
  TempDir dir("parity-nohw");
  testing::write_file(dir / "model.yaml", "name: test-gpt\nlayers: 2\nhidden: 32\nheads: 2\nseq_len: 16\nvocab: 256\n");
  testing::write_file(dir / "plan.yaml", "model: model.yaml\ntraining:\n  global_batch: 4\n  dtype: fp32\n  iterations: 1\n"
                                          "plan:\n  micro_batch: 4\n  chunk_size: 5000\n");
  ASSERT_EQ(testing::run_starfish((dir / "plan.yaml"), dir / "log").code, 1);
  EXPECT_NE(read_all(dir / "log").find("starfish-run: a chunked plan (plan.chunk_size) needs --gpu-budget SIZE, or a hardware profile "
                                       "(the plan's 'hardware:' or --hw) whose GPU memory gives it"),
            std::string::npos)
      << read_all(dir / "log");
}

}  // namespace
}  // namespace starfish::exec

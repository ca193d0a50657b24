// The report simulate, starfish-run and compare exchange: written and read in one place.
#include <gtest/gtest.h>

#include "sim/report/report.h"
#include "sim/spec/error.h"
#include "sim/spec/json_reader.h"
#include "sim/spec/json_writer.h"

namespace starfish::report {
namespace {

Report measured() {
  Report r;
  r.kind = kRunKind;
  r.model = "tiny-gpt";
  r.hardware = "cpu-pool-6mib";
  r.plan = "plan.yaml";
  r.gpus = 2;
  r.iteration_s = 0.75;
  r.tokens_per_s = 341.5;
  r.phases = PhaseSeconds{0.125, 0.25, 0.0625, 0.03125, 0.015625, 0.0078125, 0.5};
  r.memory.peak_gpu_bytes = 6088576;
  r.memory.cpu_bytes_per_gpu = 12320000;
  r.bytes = ByteFigures{3921920, 7560000, 0, 0, 1024};
  r.moves = 133;
  r.cpu_s = 1.5;
  r.cpu_phases = PhaseSeconds{0.0625, 0.125, 0.03125, 0.015625, 0.0078125, 0, 0.25};
  r.threads_per_rank = 2;
  r.load = MachineLoad{2, 0.25, 1.5, 0.0375};
  r.steady_from_iteration = 3;
  r.steady_iterations = 1;
  IterationRecord it;
  it.iteration = 3;
  it.loss = 5.5;
  it.grad_norm = 0.75;
  it.time_s = 0.75;
  it.cpu_s = 1.5;
  it.others_cpu_s = 0.0375;
  it.phases = *r.phases;
  it.cpu_phases = PhaseSeconds{0.0625, 0.125, 0.03125, 0.015625, 0.0078125, 0, 0.25};
  it.loss_scale = 65536;
  it.skipped = false;
  it.moves = 40;
  it.h2d = 3921920;
  it.collectives = 0;
  r.iterations = {it};
  return r;
}

void expect_same(const PhaseSeconds& a, const PhaseSeconds& b) {
  for (PhaseId p : kPhases) EXPECT_EQ(seconds(a, p), seconds(b, p)) << to_string(p);
}

TEST(Report, RoundTripsEveryField) {
  const Report a = measured();
  const Report b = from_json(parse_json(to_json(a)), "r.json");
  EXPECT_EQ(b.kind, a.kind);
  EXPECT_EQ(b.model, a.model);
  EXPECT_EQ(b.hardware, a.hardware);
  EXPECT_EQ(b.plan, a.plan);
  EXPECT_EQ(b.gpus, 2);
  EXPECT_EQ(b.iteration_s, a.iteration_s);
  EXPECT_EQ(b.tokens_per_s, a.tokens_per_s);
  ASSERT_TRUE(b.phases);
  expect_same(*b.phases, *a.phases);
  EXPECT_EQ(b.memory.peak_gpu_bytes, a.memory.peak_gpu_bytes);
  EXPECT_EQ(b.memory.cpu_bytes_per_gpu, a.memory.cpu_bytes_per_gpu);
  EXPECT_FALSE(b.memory.nvme_bytes_per_gpu) << "absent stays absent";
  ASSERT_TRUE(b.bytes);
  EXPECT_EQ(b.bytes->d2h, 7560000);
  EXPECT_EQ(b.bytes->collectives, 1024);
  EXPECT_EQ(b.moves, 133);
  EXPECT_EQ(b.cpu_s, 1.5);
  ASSERT_TRUE(b.cpu_phases);
  expect_same(*b.cpu_phases, *a.cpu_phases);
  EXPECT_EQ(b.threads_per_rank, 2);
  ASSERT_TRUE(b.load);
  EXPECT_EQ(b.load->cpus, 2);
  EXPECT_EQ(b.load->load_average_end, 1.5);
  EXPECT_EQ(b.load->others_cpu_s, 0.0375);
  EXPECT_EQ(b.steady_from_iteration, 3);
  EXPECT_EQ(b.steady_iterations, 1);
  ASSERT_EQ(b.iterations.size(), 1u);
  const IterationRecord& it = b.iterations[0];
  EXPECT_EQ(it.iteration, 3);
  EXPECT_EQ(it.cpu_s, 1.5);
  expect_same(it.phases, *a.phases);
  expect_same(it.cpu_phases, a.iterations[0].cpu_phases);
  EXPECT_EQ(it.loss_scale, 65536);
  EXPECT_EQ(it.skipped, false);
  EXPECT_EQ(it.moves, 40);
  EXPECT_EQ(it.h2d, 3921920);
  EXPECT_FALSE(it.d2h);
  EXPECT_EQ(it.collectives, 0);
}

TEST(Report, KeepsTheKeysOlderReadersUse) {
  // `compare` of earlier versions, scripts and the GUI read these dotted paths.
  const JsonValue v = parse_json(to_json(measured()));
  for (const char* path : {"iteration_s", "tokens_per_s", "memory.peak_gpu_bytes", "memory.cpu_bytes_per_gpu", "bytes.h2d",
                           "bytes.d2h", "bytes.nvme_read", "bytes.nvme_write", "moves", "phases.forward_s", "phases.recompute_s",
                           "phases.moves_s", "phases.optimizer_s", "phases.collectives_s", "phases.other_s", "cpu_s",
                           "machine.others_cpu_s", "steady_iterations", "cpu_phases.backward_s"})
    EXPECT_TRUE(v.number_at(path)) << path;
  EXPECT_EQ(v.string_at("kind"), "starfish.run");
}

TEST(Report, ExtrasGoInsideMemoryAndAtTheEnd) {
  Extras extras;
  extras.memory = [](JsonWriter& w) { w.field("gpu_budget_bytes", int64_t{6} << 20); };
  extras.more = [](JsonWriter& w) { w.field("store", "chunks"); };
  const JsonValue v = parse_json(to_json(measured(), extras));
  EXPECT_EQ(v.number_at("memory.gpu_budget_bytes"), 6 << 20);
  EXPECT_EQ(v.number_at("memory.peak_gpu_bytes"), 6088576);
  EXPECT_EQ(v.string_at("store"), "chunks");
  EXPECT_EQ(v.object.back().first, "store");
}

TEST(Report, MachineIsSharedAboveATenthOfACore) {
  MachineLoad l;
  l.others_cpu_s = 0.09;
  EXPECT_FALSE(l.shared(1.0));
  l.others_cpu_s = 0.11;
  EXPECT_TRUE(l.shared(1.0));
  EXPECT_FALSE(l.shared(0.0)) << "no iteration, no verdict";
  Report r = measured();
  r.load->others_cpu_s = 0.5;  // two thirds of a core during a 0.75 s iteration
  EXPECT_EQ(parse_json(to_json(r)).find("machine")->find("shared")->boolean, true);
}

TEST(Report, MedianOfOddAndEvenCounts) {
  EXPECT_EQ(median({}), 0);
  EXPECT_EQ(median({3, 1, 2}), 2);
  EXPECT_EQ(median({4, 1, 3, 2}), 2.5);
  EXPECT_EQ(median({1, 100, 2}), 2) << "one disturbed iteration does not move it";
}

std::string error_of(const std::string& json) {
  try {
    (void)from_json(parse_json(json), "r.json");
  } catch (const SpecError& e) {
    return e.what();
  }
  return "";
}

TEST(Report, SteadyIterationsStartAfterTheWarmUpAndTheSettle) {
  // Chunk plans: warm-up and settle are left out; static plans: the first iteration only.
  EXPECT_EQ(first_steady(5, true), 2u);
  EXPECT_EQ(first_steady(5, false), 1u);
  // Too few iterations: the last one stands for the steady state.
  EXPECT_EQ(first_steady(2, true), 1u);
  EXPECT_EQ(first_steady(1, false), 0u);
  EXPECT_EQ(first_steady(0, true), 0u);
}

TEST(Report, BadReportsAreRefusedNamingTheField) {
  EXPECT_EQ(error_of(R"({"iteration_s": 1})"), "") << "a report of an earlier version, without kind, is read";
  EXPECT_EQ(error_of(R"({"kind": "starfish.run"})"),
            "r.json: field 'iteration_s': missing (not a `simulate --json` or `starfish-run --report` file)");
  EXPECT_EQ(error_of(R"({"kind": "starfish.run", "iteration_s": "1 s"})"), "r.json: field 'iteration_s': expected a number");
  EXPECT_EQ(error_of(R"({"kind": "x", "iteration_s": 1, "phases": {"moves_s": true}})"),
            "r.json: field 'phases.moves_s': expected a number");
  EXPECT_EQ(error_of(R"({"kind": "x", "iteration_s": 1, "iterations": [{"time_s": []}]})"),
            "r.json: field 'iterations[].time_s': expected a number");
  EXPECT_EQ(error_of(R"({"kind": "x", "iteration_s": 1, "iterations": [3]})"), "r.json: field 'iterations': expected objects");
  EXPECT_EQ(error_of("[1]"), "r.json: a report is a JSON object");
}

}  // namespace
}  // namespace starfish::report

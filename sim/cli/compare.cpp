// starfish compare PREDICTED.json MEASURED.json [--moves A.jsonl B.jsonl] [--json]: predicted against
// measured, quantity by quantity (the report both `starfish simulate --json` and `starfish-run
// --report` write: sim/report/report.h), where the iteration's time goes on each side, how the
// measurement was taken (CPU time, whether the machine was shared), and the first move where two
// move logs diverge.
#include <cmath>
#include <cstdio>
#include <functional>

#include <fmt/core.h>

#include "sim/chunk/move_log.h"
#include "sim/cli/cli.h"
#include "sim/report/report.h"
#include "sim/spec/json_writer.h"
#include "sim/spec/units.h"

namespace starfish::cli {
namespace {

using report::Report;

enum class Unit { seconds, bytes, count };

struct Quantity {
  const char* name;
  Unit unit;
  std::function<std::optional<double>(const Report&)> get;
};

std::optional<double> byte_figure(const Report& r, double report::ByteFigures::*field) {
  return r.bytes ? std::optional<double>(r.bytes.value().*field) : std::nullopt;
}

const std::vector<Quantity>& quantities() {
  static const std::vector<Quantity> q = {
      {"iteration time", Unit::seconds, [](const Report& r) { return std::optional<double>(r.iteration_s); }},
      {"tokens/s", Unit::count, [](const Report& r) { return std::optional<double>(r.tokens_per_s); }},
      {"peak GPU memory (per GPU)", Unit::bytes, [](const Report& r) { return r.memory.peak_gpu_bytes; }},
      {"peak CPU memory (per GPU)", Unit::bytes, [](const Report& r) { return r.memory.cpu_bytes_per_gpu; }},
      {"peak NVMe (per GPU)", Unit::bytes, [](const Report& r) { return r.memory.nvme_bytes_per_gpu; }},
      {"bytes host -> GPU", Unit::bytes, [](const Report& r) { return byte_figure(r, &report::ByteFigures::h2d); }},
      {"bytes GPU -> host", Unit::bytes, [](const Report& r) { return byte_figure(r, &report::ByteFigures::d2h); }},
      {"bytes read from NVMe", Unit::bytes, [](const Report& r) { return byte_figure(r, &report::ByteFigures::nvme_read); }},
      {"bytes written to NVMe", Unit::bytes, [](const Report& r) { return byte_figure(r, &report::ByteFigures::nvme_write); }},
      {"chunk moves", Unit::count,
       [](const Report& r) { return r.moves ? std::optional<double>(static_cast<double>(*r.moves)) : std::nullopt; }},
  };
  return q;
}

std::string show(std::optional<double> v, Unit unit) {
  if (!v) return "-";
  switch (unit) {
    case Unit::seconds: return units::human_seconds(*v);
    case Unit::bytes: return units::human_bytes(*v);
    case Unit::count: return units::human_count(*v);
  }
  return "-";
}

std::string ratio(std::optional<double> predicted, std::optional<double> measured) {
  if (!predicted || !measured || *predicted == 0) return "-";
  return fmt::format("{:.3f}", *measured / *predicted);
}

void row(const char* name, std::optional<double> predicted, std::optional<double> measured, Unit unit) {
  fmt::print("{:<28} {:>14} {:>14} {:>10}\n", name, show(predicted, unit), show(measured, unit), ratio(predicted, measured));
}

// How the measured side was taken: a prediction is for a dedicated machine, so a run that shared
// its cores with other work is compared on CPU time (per intra-op thread) as well.
void measurement_notes(const Report& predicted, const Report& measured) {
  if (measured.kind != report::kRunKind) return;
  fmt::print("\nmeasured: median of {} steady iteration(s) from iteration {}, {} rank(s) x {} intra-op thread(s)\n",
             measured.steady_iterations, measured.steady_from_iteration, measured.gpus, measured.threads_per_rank);
  if (measured.cpu_s && measured.threads_per_rank > 0) {
    const double per_thread = *measured.cpu_s / measured.threads_per_rank;
    fmt::print("  CPU time          {} per iteration (rank 0, all threads); per thread {}, {} of the prediction\n",
               units::human_seconds(*measured.cpu_s), units::human_seconds(per_thread), ratio(predicted.iteration_s, per_thread));
  }
  if (const auto& l = measured.load) {
    const bool shared = l->shared(measured.iteration_s);
    fmt::print("  machine           {} CPUs, load average {:.2f} -> {:.2f}; other processes used {} of CPU per iteration ({:.0f}% of a core)\n",
               l->cpus, l->load_average_start, l->load_average_end, units::human_seconds(l->others_cpu_s),
               measured.iteration_s > 0 ? 100 * l->others_cpu_s / measured.iteration_s : 0.0);
    if (shared)
      fmt::print("  SHARED: other work ran on this machine during the measurement; the prediction is for a dedicated one,\n"
                 "          so the wall time above is inflated: compare the CPU time per thread instead\n");
    else
      fmt::print("  dedicated: nothing else took more than {:.0f}% of a core; wall time is what the prediction means\n",
                 100 * report::MachineLoad::kSharedCoreFraction);
  }
}

// Where an iteration's time goes, side by side (only when both reports carry the breakdown).
void phase_table(const Report& predicted, const Report& measured) {
  if (!predicted.phases || !measured.phases) return;
  const bool cpu = measured.cpu_phases.has_value();
  fmt::print("\n{:<28} {:>14} {:>14} {:>10}{}\n", "time per iteration in", "predicted", "measured", "meas/pred",
             cpu ? "   measured CPU  CPU/pred" : "");
  // A phase the prediction has none of (the run's own bookkeeping in `other`) has no ratio.
  auto phase_ratio = [](double a, double b) { return a > 0 ? ratio(a, b) : std::string("n/a"); };
  for (report::PhaseId p : report::kPhases) {
    const double a = report::seconds(*predicted.phases, p), b = report::seconds(*measured.phases, p);
    const double c = cpu ? report::seconds(*measured.cpu_phases, p) : 0;
    if (a == 0 && b == 0) continue;
    fmt::print("{:<28} {:>14} {:>14} {:>10}", report::to_string(p), show(a, Unit::seconds), show(b, Unit::seconds),
               phase_ratio(a, b));
    if (cpu) fmt::print(" {:>14} {:>9}", show(c, Unit::seconds), phase_ratio(a, c));
    fmt::print("\n");
  }
  fmt::print("(predicted: each phase's busy time, overlaps counted in each; measured: exclusive wall time, medians;\n"
             " measured CPU: the same in the training thread's CPU time)\n");
}

// A run may train longer than the simulator's iterations: the moves of its first
// `predicted.move_log_iterations` iterations (from its per-iteration counts) are the ones the
// simulated log has. None when the run did not start at iteration 1 or ran no longer.
std::optional<int64_t> moves_over_simulated_iterations(const Report& predicted, const Report& measured) {
  if (!predicted.move_log_iterations || !measured.move_log_iterations) return std::nullopt;
  const auto k = static_cast<size_t>(*predicted.move_log_iterations);
  if (*measured.move_log_iterations <= *predicted.move_log_iterations || measured.iterations.size() < k ||
      measured.iterations.front().iteration != 1)
    return std::nullopt;
  int64_t moves = 0;
  for (size_t i = 0; i < k; ++i) {
    if (!measured.iterations[i].moves) return std::nullopt;
    moves += *measured.iterations[i].moves;
  }
  return moves;
}

const char* unit_name(Unit u) { return u == Unit::seconds ? "s" : u == Unit::bytes ? "bytes" : "count"; }

void optional_field(JsonWriter& w, const char* key, std::optional<double> v) {
  w.key(key);
  if (v) w.value(*v);
  else w.null();
}

// --json: the same comparison as one object: each quantity (predicted, measured, their ratio),
// the measurement's conditions, the phases, and the move logs' verdict.
void write_json(const Report& a, const Report& b, const std::optional<MoveDiff>& moves) {
  JsonWriter w(true);
  w.begin_object().field("kind", "starfish.compare").key("quantities").begin_array();
  for (const Quantity& q : quantities()) {
    const auto pa = q.get(a), pb = q.get(b);
    if (!pa && !pb) continue;
    w.begin_object().field("name", q.name).field("unit", unit_name(q.unit));
    optional_field(w, "predicted", pa);
    optional_field(w, "measured", pb);
    optional_field(w, "ratio", pa && pb && *pa != 0 ? std::optional<double>(*pb / *pa) : std::nullopt);
    w.end_object();
  }
  w.end_array();
  if (b.kind == report::kRunKind) {
    w.key("measured").begin_object().field("steady_iterations", b.steady_iterations).field("gpus", b.gpus);
    w.field("threads_per_rank", b.threads_per_rank);
    optional_field(w, "cpu_s", b.cpu_s);
    if (b.load) w.field("shared", b.load->shared(b.iteration_s));
    w.end_object();
  }
  if (a.phases && b.phases) {
    w.key("phases").begin_array();
    for (report::PhaseId p : report::kPhases) {
      w.begin_object().field("phase", report::to_string(p)).field("predicted_s", report::seconds(*a.phases, p));
      w.field("measured_s", report::seconds(*b.phases, p));
      if (b.cpu_phases) w.field("measured_cpu_s", report::seconds(*b.cpu_phases, p));
      w.end_object();
    }
    w.end_array();
  }
  if (moves) w.key("moves").begin_object().field("same", moves->same).field("text", moves->describe()).end_object();
  w.end_object();
  std::fputs((w.str() + "\n").c_str(), stdout);
}

}  // namespace

int run_compare(const std::vector<std::string>& argv) {
  Args args(argv, {}, {"moves", "json", "help"});
  if (args.flag("help")) {
    fmt::print(
        "usage: starfish compare PREDICTED.json MEASURED.json [--moves PREDICTED.jsonl MEASURED.jsonl] [--json]\n"
        "  PREDICTED: `starfish simulate --json` output; MEASURED: `starfish-run --report` output.\n"
        "  Shows each quantity predicted and measured, where the iteration's time goes on each side\n"
        "  (forward, backward, recompute, moves, optimizer, collectives), the run's CPU time and\n"
        "  whether other work shared the machine while it was measured.\n"
        "  --moves: also diff the two move logs (`simulate --moves`, `starfish-run --move-log`).\n"
        "  --json: the comparison as one JSON object (quantities, measurement, phases, moves).\n"
        "exit status: 0 when the move logs are identical (or --moves is not given), 3 when they\n"
        "  diverge (a move differs, or one log ends first), 1 for unreadable input, 2 for bad usage.\n");
    return 0;
  }
  const auto& files = args.positional();
  const size_t want = args.flag("moves") ? 4 : 2;
  if (files.size() != want)
    throw UsageError(args.flag("moves") ? "expected PREDICTED.json MEASURED.json PREDICTED.jsonl MEASURED.jsonl"
                                        : "expected PREDICTED.json MEASURED.json");
  const Report a = report::read_report_file(files[0]);
  Report b = report::read_report_file(files[1]);
  const std::optional<int64_t> prefix = moves_over_simulated_iterations(a, b);
  if (prefix) b.moves = prefix;  // the moves of the iterations the simulator ran
  std::optional<MoveDiff> moves;
  if (args.flag("moves")) {
    std::vector<Move> measured_log = read_move_log_file(files[3]);
    if (prefix && measured_log.size() > static_cast<size_t>(*prefix)) measured_log.resize(static_cast<size_t>(*prefix));
    moves = diff_move_logs(read_move_log_file(files[2]), measured_log);
  }
  if (args.flag("json")) {
    write_json(a, b, moves);
    return moves && !moves->same ? 3 : 0;
  }
  fmt::print("{:<28} {:>14} {:>14} {:>10}\n", "", "predicted", "measured", "meas/pred");
  for (const Quantity& q : quantities()) {
    const auto pa = q.get(a), pb = q.get(b);
    if (pa || pb) row(q.name, pa, pb, q.unit);
  }
  if (prefix)
    fmt::print("(chunk moves and the move log: the run's first {} of {} iterations, the ones the simulator walks)\n",
               *a.move_log_iterations, *b.move_log_iterations);
  measurement_notes(a, b);
  phase_table(a, b);
  if (moves) {
    fmt::print("\nmove logs: {}\n", moves->describe());
    return moves->same ? 0 : 3;
  }
  return 0;
}

}  // namespace starfish::cli

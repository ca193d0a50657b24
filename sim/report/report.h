#pragma once
// The report `starfish simulate --json` and `starfish-run --report` write and `starfish compare`
// reads: one struct for the quantities a prediction and a measurement share, with its JSON written
// and read here only. A simulation adds its own sections (links, memory timelines) after these
// fields, a run its per-iteration records; both go through to_json below.
//
// Time fidelity needs more than the total: `phases` splits an iteration into the phases both
// sides can name (compute forward / backward / recompute, chunk moves, optimizer, collectives),
// and a run says how it was measured (process CPU time, what else the machine ran meanwhile),
// since a prediction is for a dedicated machine.
#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace starfish {
class JsonValue;
class JsonWriter;
}  // namespace starfish

namespace starfish::report {

// Seconds of one iteration spent in each phase. Predicted: the wall time during which a task of
// the phase ran on a stage's lead GPU or on the host (mean over stages); overlapping phases each
// count in full, so the phases may add up to more than the iteration. Measured: exclusive wall
// time (a move inside a forward counts as a move, not as forward), so they add up to the
// iteration; `other_s` is then the rest (batches, loss, the trainer's own bookkeeping). For a
// prediction `other_s` is the time no phase ran (pipeline bubble, waiting).
struct PhaseSeconds {
  double forward_s = 0;
  double backward_s = 0;   // without the recompute of a recomputed layer
  double recompute_s = 0;  // the forward run again in backward (recompute: full)
  double moves_s = 0;      // chunk moves (copies between tiers, NVMe I/O) and the runtime's decisions
  double optimizer_s = 0;  // the optimizer step (on the GPU or the host)
  double collectives_s = 0;
  double other_s = 0;
};

enum class PhaseId { forward, backward, recompute, moves, optimizer, collectives, other };
inline constexpr std::array<PhaseId, 7> kPhases{PhaseId::forward, PhaseId::backward, PhaseId::recompute, PhaseId::moves,
                                                PhaseId::optimizer, PhaseId::collectives, PhaseId::other};
const char* to_string(PhaseId p);  // the JSON key and the name compare prints: "forward", ...
double& seconds(PhaseSeconds& s, PhaseId p);
double seconds(const PhaseSeconds& s, PhaseId p);

// What else ran on the machine while a run was measured (from /proc on Linux). A prediction is
// for a dedicated machine: when others used the cores, wall time is not comparable, CPU time is.
struct MachineLoad {
  int cpus = 0;                     // online CPUs
  double load_average_start = 0;    // 1-minute load average before the first iteration
  double load_average_end = 0;      // and after the last
  // CPU seconds per steady iteration that processes other than the run's own ranks used: the
  // machine's busy time (/proc/stat) less the ranks' process CPU time.
  double others_cpu_s = 0;
  // Shared: the others took more than kSharedCoreFraction of one core on average over the
  // steady iterations (an idle Debian guest stays far below it).
  static constexpr double kSharedCoreFraction = 0.10;
  bool shared(double iteration_s) const { return iteration_s > 0 && others_cpu_s / iteration_s > kSharedCoreFraction; }
};

struct MemoryFigures {
  std::optional<double> peak_gpu_bytes, cpu_bytes_per_gpu, nvme_bytes_per_gpu;
};

struct ByteFigures {  // bytes of one (steady) iteration, per GPU
  double h2d = 0, d2h = 0, nvme_read = 0, nvme_write = 0;
  std::optional<double> collectives;
};

// One measured iteration.
struct IterationRecord {
  int64_t iteration = 0;  // counted from 1 over the whole training (a resumed run continues)
  double loss = 0, grad_norm = 0;
  double time_s = 0;      // wall
  double cpu_s = 0;       // this process's CPU time (all its threads)
  double others_cpu_s = 0;
  PhaseSeconds phases;
  // The same split in CPU time of the training thread: what the phases cost when the machine is
  // shared (one intra-op thread: all the arithmetic runs on that thread).
  PhaseSeconds cpu_phases;
  std::optional<double> loss_scale;
  std::optional<bool> skipped;
  // Chunked plans: what the iteration moved (the simulator's byte counts).
  std::optional<int64_t> moves, h2d, d2h, nvme_read, nvme_write, collectives;
};

inline constexpr const char* kSimulationKind = "starfish.simulation";
inline constexpr const char* kRunKind = "starfish.run";

struct Report {
  std::string kind;  // kSimulationKind or kRunKind
  std::string model, hardware;
  std::string plan;  // a run: the plan file
  int gpus = 0;
  double iteration_s = 0;  // predicted; or measured: the median wall time of the steady iterations
  double tokens_per_s = 0;
  std::optional<PhaseSeconds> phases;  // per iteration (measured: medians over the steady iterations)
  MemoryFigures memory;
  std::optional<ByteFigures> bytes;    // chunk plans
  std::optional<int64_t> moves;        // chunk plans: every move the runtime decided
  // Chunk plans: the iterations `moves` and the move log cover (the simulator's warm-up, settle
  // and simulated iteration; a run's every iteration).
  std::optional<int64_t> move_log_iterations;
  // Measured only.
  std::optional<double> cpu_s;         // median process CPU time of rank 0's steady iterations
  std::optional<PhaseSeconds> cpu_phases;  // medians, in the training thread's CPU time
  int threads_per_rank = 0;            // intra-op threads
  std::optional<MachineLoad> load;
  int64_t steady_from_iteration = 0, steady_iterations = 0;
  std::vector<IterationRecord> iterations;
};

// A producer's own sections: `memory` inside the "memory" object after the shared figures,
// `more` at the end of the report.
struct Extras {
  std::function<void(JsonWriter&)> memory, more;
};
// The whole report as one JSON object (pretty-printed, newline-terminated).
std::string to_json(const Report& r, const Extras& extras = {});
// Reads what to_json wrote (unknown keys ignored). Throws SpecError naming `source` and the
// field when a known field has the wrong type or a report lacks `iteration_s`.
Report from_json(const JsonValue& v, const std::string& source);
Report read_report_file(const std::string& path);

// The steady state, one rule for the simulator and a run. A chunk-runtime plan's first two
// iterations are not steady: the warm-up records the trace (LRU eviction, no prefetch) and places
// the optimizer states; the next still pays for that placement (chunks left where the warm-up's
// optimizer step ran). A static plan's first is not (allocation, first touch). The simulator
// simulates the first steady iteration; a run's figures are medians over its steady ones.
constexpr int unsteady_iterations(bool chunked) { return chunked ? 2 : 1; }
// The index of the first steady one of a run's `iterations` (its last when none was steady).
size_t first_steady(size_t iterations, bool chunked);

// The median of the values (0 for none): measured times are reported as medians of the steady
// iterations, robust to one disturbed iteration on a shared machine.
double median(std::vector<double> values);

}  // namespace starfish::report

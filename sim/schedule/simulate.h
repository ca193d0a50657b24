#pragma once
// Simulates one training iteration of a Job with the discrete-event engine and reports what the
// DESIGN's "Simulation" section promises: iteration time, tokens/s, TFLOP/s per GPU and MFU,
// the pipeline-bubble fraction, compute-to-communication ratios per group (TP, PP, DP,
// offload), per-device memory over time and its peak per tier, bytes over each link, and a
// Chrome-trace timeline on request.
#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "sim/cost/capacity.h"
#include "sim/report/report.h"
#include "sim/spec/job.h"

namespace starfish::schedule {

struct CommGroupReport {
  std::string group;         // "tp", "pp", "dp", "offload"
  double comm_s = 0;         // time the group's tasks ran on a stage's lead GPU (mean over stages)
  double exposed_s = 0;      // of which no compute ran alongside
  double compute_s = 0;      // compute time of the lead GPU (mean over stages)
  double ratio = 0;          // compute_s / comm_s (infinite when comm_s = 0: written as null)
};

struct MemorySample {
  double time_s = 0;
  double bytes = 0;
};

struct StageMemoryReport {
  int stage = 0;
  int gpu = 0;                          // the stage's lead GPU (global index)
  double model_state_bytes = 0;
  double peak_bytes = 0;                // model states + peak activations
  double peak_time_s = 0;
  std::vector<MemorySample> timeline;   // at most SimOptions::timeline_points samples, each the highest since the last
};

struct LinkReport {
  std::string name;   // "n0.gpu1->n0.nvswitch"
  std::string kind;   // pcie, nvlink, network, ...
  double bytes = 0;
  double busy_s = 0;
  double utilisation = 0;  // bytes / (bandwidth * iteration)
};

// One task of the simulated timeline, for Gantt views (kept when SimOptions::keep_spans).
struct TaskSpan {
  int stage = -1;          // the pipeline stage whose lead GPU the task occupies; -1: none
  std::string category;    // fwd, bwd, recompute, tp, pp, dp, optimizer, offload
  std::string name;        // "F s3 c0 mb12 L4"
  double start_s = 0, end_s = 0;
};

struct SimReport {
  std::string model, hardware;
  int gpus = 0;
  double iteration_s = 0;
  double tokens_per_s = 0;
  double tflops_per_gpu = 0;     // hardware FLOP/s (with recompute) per GPU
  double mfu = 0;                // model FLOP/s over peak
  double bubble_fraction = 0;    // mean over stages of idle pipeline time / iteration
  // Where the iteration's time goes (forward, backward, recompute, moves, optimizer,
  // collectives), as a stage's lead GPU and the host see it, mean over stages (report.h).
  report::PhaseSeconds phases;
  std::vector<CommGroupReport> comm;
  std::vector<StageMemoryReport> memory;
  double peak_gpu_bytes = 0, gpu_capacity_bytes = 0;
  double cpu_bytes_per_node = 0, cpu_capacity_bytes = 0;
  double nvme_bytes_per_node = 0, nvme_capacity_bytes = 0;
  // The peaks against the usable capacities (check_memory, the rule `estimate` applies too):
  // `starfish simulate` refuses a plan that does not fit unless asked --allow-oom.
  MemoryVerdict memory_verdict;
  double cpu_bytes_per_gpu = 0, nvme_bytes_per_gpu = 0;  // the node's share of one GPU
  double h2d_bytes = 0, d2h_bytes = 0, nvme_read_bytes = 0, nvme_write_bytes = 0;  // lead GPUs
  int64_t moves = 0;              // chunk plans: moves the runtime decided (all iterations it ran)
  std::vector<LinkReport> links;  // links that carried bytes, busiest first
  std::vector<TaskSpan> spans;    // with SimOptions::keep_spans, in task order
  // Simulator statistics.
  size_t tasks = 0;
  uint64_t events = 0;
  // Links the flows crossed, and the classes the simulator ran them as: the data-parallel
  // replicas' identical links are one class; links where symmetry breaks are classes of their own.
  size_t used_links = 0, link_classes = 0;
  double build_wall_s = 0, run_wall_s = 0;
};

struct SimOptions {
  std::string trace_path;       // write a Chrome-trace JSON here when not empty
  // The trace's rows: each pipeline stage's lead GPU (the GPU whose memory the report follows)
  // and its node (false), or every GPU and node (true: a 1024-GPU trace is a hundred megabytes).
  // Either way each stage's GPU memory is a counter track, and the CPU and NVMe bytes of each
  // node drawn.
  bool trace_every_rank = false;
  int timeline_points = 256;    // memory timeline samples per stage
  size_t max_links = 64;        // links listed in the report
  bool keep_spans = false;      // fill SimReport::spans (a GUI's Gantt view)
  std::string moves_path;       // chunk plans: write the runtime's move log (JSON lines) here
  int64_t fixed_non_model_bytes = -1;  // chunk plans: see BuildOptions
  // Raised: simulate throws des::Cancelled (before building, after it, or from the engine's
  // run within a few thousand events).
  const std::atomic<bool>* cancel = nullptr;
  // Called on the calling thread: ("building", 0) before the iteration's task graph is built,
  // then ("simulating", fraction of tasks ended) every few thousand events of the run.
  std::function<void(const char* phase, double fraction)> progress;
};

SimReport simulate(const Job& job, const SimOptions& options = {});

// The part of the report `starfish-run` measures too (sim/report/report.h), which `starfish
// compare` reads from both.
report::Report shared_report(const SimReport& report);
// The report as JSON: shared_report's fields, then the simulation's own sections.
std::string to_json(const SimReport& report);

}  // namespace starfish::schedule

#pragma once
// One rank's run of `starfish-run plan.yaml`: loads the plan and its model, joins the ranks,
// trains, checkpoints and resumes, and writes the report (and, with the chunk runtime, the move log).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace starfish::exec {

struct RunOptions {
  std::string plan_path;
  std::optional<std::string> model_path;   // overrides the plan's `model`
  std::optional<std::string> data_path;    // a text file; default: the generated corpus
  std::optional<int64_t> iterations;       // overrides training.iterations
  std::string checkpoint_dir;              // empty: no checkpoints
  int64_t checkpoint_every = 0;            // iterations between checkpoints (and one at the end)
  bool resume = false;                     // continue from checkpoint_dir/latest
  std::string report_path;                 // JSON report (rank 0; rank r > 0: <path>.rank<r>); empty: none
  std::string params_path;                 // final parameters as a checkpoint file (rank 0); empty: none
  int threads = 0;                         // intra-op threads; 0 = hardware threads / local ranks
  int kill_in_save = 0;                    // test hook: SIGKILL this rank half-way through save number k
  // The hardware the run's Job is made with (its budgets, and the report's "hardware"): overrides
  // the plan's `hardware`. Without either, the Job describes this machine as starfish-run sees it.
  std::optional<std::string> hardware_path;
  // Chunked plans (plan.chunk_size > 0): the tiers' budgets for this rank, the NVMe scratch root
  // and the move log (JSON lines, one file per rank: <path>.rank<r> when more than one rank).
  // A budget not given comes from the hardware, exactly as the simulator takes it
  // (sim/chunk/runtime_config.h): GPU memory less its reservation, host memory less its
  // reservation per GPU of the node, NVMe capacity per GPU of the node. Without hardware the GPU
  // budget is required, the CPU budget is half this machine's memory per rank, and there is no
  // NVMe tier.
  std::optional<int64_t> gpu_budget_bytes;   // the "GPU" pool here
  std::optional<int64_t> cpu_budget_bytes;
  std::optional<int64_t> nvme_budget_bytes;  // 0: no NVMe tier
  int64_t non_model_bytes = -1;            // per moment; -1: estimated from the batch
  std::string scratch_dir = "/tmp";
  std::string move_log_path;
  bool lru = false;                        // LRU eviction instead of farthest next use
  bool no_prefetch = false;
  bool bind_cores = false;                 // main() binds the rank before it trains (exec/launcher.h)
  bool quiet = false;
  // c10d's timeout: a collective that waits longer for a rank (hung, or dead without closing
  // its connections) fails with an error instead of blocking the run forever.
  int64_t timeout_s = 300;
};

// Parses argv (without --nproc). Throws SpecError with a usage hint for bad flags.
RunOptions parse_run_options(const std::vector<std::string>& args);
const char* run_usage();

// Throws SpecError (naming the flag and path) unless every output of the run can be written:
// --report, --params-out and --move-log in an existing, writable folder (a bare name: the
// current one); --checkpoint-dir created when missing (it must exist with --resume); --scratch
// an existing, writable folder. Run before the first iteration (and before starting ranks).
void check_run_outputs(const RunOptions& options);

// Runs this rank; returns the process exit status. Errors propagate as exceptions.
int run_rank(const RunOptions& options);

}  // namespace starfish::exec

#pragma once
// Plan search: enumerate every plan of a space (plan_space.h), prune and evaluate them with the
// analytic tier (analytic.h) on a pool of threads, optionally refine the best with a second,
// simulated tier (the refiner hook, filled in by the schedule/DES engine) until K of them pass
// it -- a plan it refuses is no answer and the next takes its place -- and rank.
//
// Determinism: each plan has its enumeration index; rows are ordered by score and then by
// index, and rejection summaries are merged by key, so the result does not depend on the
// number of threads or on which thread evaluated what.
// Cancellation: workers poll `cancel` between small blocks of plans, the refiner within its
// simulation (des_refiner); a cancelled search returns the best rows among the plans evaluated
// so far (cancelled = true; rows refined before the cancel keep their refined numbers).
// Refinement replaces each row the simulator rejects by the next analytic row, so up to K
// refined rows are returned whenever that many of the best 2K analytic rows fit.
#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "sim/cost/constraint.h"
#include "sim/cost/estimate.h"
#include "sim/search/plan_space.h"
#include "sim/spec/job.h"

namespace starfish::search {

// One tier's verdict on a plan: what the refiner returns (and what the analytic tier is
// converted to), so both tiers can be ranked the same way.
struct Evaluation {
  bool fits = false;
  std::string why_not;           // empty when it fits
  Constraint constraint = Constraint::none;  // when it does not: the tier check_memory names,
                                 // time, or the simulator (refused the plan)
  double iteration_s = 0;
  double tokens_per_s = 0;
  double mfu = 0;
  double tflops_per_gpu = 0;
  double bubble_fraction = 0;
  double gpu_peak_bytes = 0;     // per GPU, most loaded
  double cpu_peak_bytes = 0;     // per node
  double nvme_peak_bytes = 0;    // per node
  std::string source;            // "analytic", "des", ...
};
Evaluation to_evaluation(const Estimate& e);

using Refiner = std::function<Evaluation(const Job&)>;

struct Progress {
  int64_t done = 0;              // plans evaluated (or pruned) so far
  int64_t total = 0;
  int64_t fitting = 0;
  double best_tokens_per_s = 0;  // analytic
  int64_t refined = 0;           // plans the refiner has simulated so far
  int64_t refine_total = 0;      // plans it will simulate (grows when it replaces rejected ones)
  const char* phase = "analytic";  // "analytic", then "refine" while the refiner runs, then "done"
};
using ProgressFn = std::function<void(const Progress&)>;

struct SearchOptions {
  SearchSpace space;
  int top_k = 10;                // rows returned
  Refiner refiner;               // optional second tier
  int refine_top = 0;            // plans that must pass the refiner (0: top_k) when one is given
  int refine_reserve = 32;       // rows beyond refine_top kept to replace the plans it refuses
  int threads = 0;               // 0: every hardware thread
  ProgressFn progress;           // called on the calling thread every progress_interval_s, and at the end
  double progress_interval_s = 0.1;
  const std::atomic<bool>* cancel = nullptr;
  double max_iteration_s = 0;    // > 0: a plan with a longer iteration is rejected ("time")
  bool prune = true;             // family-level memory lower bound before evaluating (never
                                 // drops a plan that fits; off only to test exactly that)
  // Only plans `admit` accepts are evaluated (the exports search for the best plan their
  // framework can run); the others count in SearchResult::not_admitted.
  std::function<bool(const Plan&)> admit;
};

struct Row {
  int64_t index = 0;             // enumeration index (the tie-breaker)
  Candidate candidate;
  Plan plan;                     // dp resolved
  Estimate analytic;
  std::optional<Evaluation> refined;
  double tokens_per_s = 0;       // the ranking throughput: refined when refined, else analytic
  double cost_per_million_tokens = 0;  // price_per_gpu_hour known; else 0
  std::string label() const { return short_label(candidate); }
};

// Plans rejected for one reason, grouped by family (TP, PP, ZeRO, offload, chunked/static):
// "TP1 PP1 ZeRO-0 static: GPU memory (needs 2.8 TiB of 78 GiB) x 1234 plans"; the numbers are
// the plan of the family that came closest to fitting.
struct RejectedFamily {
  std::string family;
  Constraint constraint = Constraint::none;  // a memory tier or time
  double needed = 0;             // bytes (memory) or seconds (time) of the closest plan
  double capacity = 0;
  int64_t plans = 0;
  std::string text() const;
};

// How far a rejected plan is from fitting: needed over capacity (1e300 without any capacity).
// The search keeps each family's closest plan by it, and the closest family is the lowest.
inline double closeness(double needed, double capacity) { return capacity > 0 ? needed / capacity : 1e300; }

// The family closest to fitting (the first of equals), among those rejected for `constraint`
// when any was (Constraint::none: all); nullptr for none.
const RejectedFamily* closest_family(const std::vector<RejectedFamily>& rejected, Constraint constraint = Constraint::none);

struct SearchResult {
  // Plans the analytic tier ranked high but the simulator rejected: (label, why), best first;
  // simulator_binding is the first one's Evaluation::constraint.
  std::vector<std::pair<std::string, std::string>> simulator_rejected;
  Constraint simulator_binding = Constraint::none;
  Model model;
  Cluster cluster;
  Training training;
  std::vector<Row> rows;                 // best first
  std::vector<RejectedFamily> rejected;  // most plans first
  int64_t enumerated = 0;                // plans in the space
  int64_t evaluated = 0;                 // plans the analytic tier looked at (not pruned)
  int64_t pruned = 0;                    // plans dropped by the family memory bound
  int64_t chunked_accumulation_left_out = 0;  // chunked plans with several micro-batches per rank
                                              // (not in `enumerated`: make_job refuses them)
  int64_t not_admitted = 0;              // plans SearchOptions::admit turned away
  int64_t fitting = 0;
  int64_t refined = 0;
  bool cancelled = false;
  double elapsed_s = 0;
  double analytic_s = 0;                 // wall time of the analytic phase
  int threads = 1;

  Job job(const Row& row) const;         // make_job of the row: validated like any job
  // The binding constraint when nothing fits: time when some plan fit in memory but ran over
  // max_iteration_s, else the memory tier of the rejected family closest to fitting, else
  // (every plan the analytic tier accepted was refused by the simulator) simulator_binding;
  // Constraint::none when some plan fits.
  Constraint binding_constraint() const;
};

// Ranks the space's plans with the analytic tier and refines the best with opt.refiner. A plan
// that recomputes every layer under Megatron is ranked as the faster of itself and its block
// variant: the first N layers of each virtual stage recompute, the fewest that fit (Megatron's
// --recompute-method block, Starfish's recompute_layers).
SearchResult search(const Model& model, const Cluster& cluster, const Training& training,
                    const SearchOptions& options);

// Whether the search has an answer its refiner passed (rows.front() refined and fitting): what
// maxsize and size-cluster count as "fits", so they never answer with a plan the simulator
// refused or did not see (a search cancelled before it refined its best row).
bool has_simulated_answer(const SearchResult& result);

// Training used when the user gives no global batch: bf16 (or fp16, else fp32) mixed-precision
// Adam and about 4Mi tokens per iteration (GPT-3's 175B batch: 1536-3.2M tokens), rounded up to
// a multiple of the GPU count so pure data parallelism is always possible.
Training default_search_training(const Model& model, const Cluster& cluster);

}  // namespace starfish::search

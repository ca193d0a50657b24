#pragma once
// The largest model of a family (model_family.h) that some plan can train on a cluster, found
// by binary search over size -- first over the heads step of the main series (hidden and layers
// growing together), then over layers at that hidden size -- each probe a full plan search.
// A size fits when the search's best plan passes the discrete-event simulator (has_simulated_answer:
// plans it refuses give way to the next), so the answer is one `simulate` and `estimate` accept.
// Fits-or-not is assumed monotone in size (true for the memory model; a layer count with few
// divisors can hide a pipeline plan, which is why the coarse search steps by whole heads steps).
#include <cstdint>
#include <functional>
#include <string>

#include "sim/search/budget.h"
#include "sim/search/search.h"

namespace starfish::search {

struct MaxSizeOptions {
  std::string family = "gpt";
  int seq_len = 0;              // 0: the family's default
  // 0: one sequence per GPU. The largest model is bound by memory, and the batch sets how much
  // of it activations take: a framework with gradient accumulation runs any batch in
  // micro-batches of one, but the chunk runtime (PatrickStar) runs each rank's share at once, so
  // the smallest batch every GPU works on is the one under which each runtime trains its largest.
  int64_t global_batch = 0;
  int heads_step = 0;           // 0: the largest TP the space allows (so every TP divides)
  int max_heads = 4096;         // the search's ceiling (about 13 quadrillion parameters)
  SearchOptions search;         // space, threads, ...; no refiner: the discrete-event simulator
                                // (des_refiner); max_iteration_s is set per size from `budget`
  // A size fits when some plan trains it within the budget (its simulated iteration at most
  // budget_max_iteration_s for the size's parameters), so time binds as well as memory.
  TrainingBudget budget{false};
  // Called before each probe's search with the model it tries (a progress display's context).
  std::function<void(const Model& model, int probe)> on_probe;
};

struct MaxSizeResult {
  bool found = false;           // false: not even the smallest model fits
  Model model;                  // the largest that fits
  int64_t parameters = 0;
  SearchResult best;            // the search at that size (rows: its best plans)
  Model next_model;             // the smallest that does not fit
  Constraint binding = Constraint::none;  // what stops next_model: a memory tier, time, the
                                // simulator, or no valid plan for its shape
  TrainingBudget budget{false}; // the budget it was found within
  double tokens = 0;            // the budget's tokens for the answer (the default count without a budget)
  double days_to_train = 0;     // those tokens at its simulated throughput
  std::string binding_detail;   // its closest family's summary line
  int probes = 0;               // plan searches run
};

MaxSizeResult max_model_size(const Cluster& cluster, const MaxSizeOptions& options);

}  // namespace starfish::search

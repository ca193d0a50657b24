#pragma once
// The fewest nodes of a hardware profile that train a model on a number of tokens within a
// number of days, with the plan that does it.
//
// Method: the node counts considered are those for which some TP x PP x DP layout is a valid plan
// for the global batch (a cheap check); among them, a lower bound (every GPU at its dense peak
// on the model's FLOPs) skips the hopeless ones, and a binary search finds the first count whose
// best plan is fast enough -- assuming more nodes never make the best plan slower, which holds
// while DP can grow (a count between two tried ones is not searched when the bisection has
// already passed it). Each count's best plan is the search's best that the discrete-event
// simulator accepts (has_simulated_answer), and its simulated throughput decides.
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/search/search.h"

namespace starfish::search {

// "300B" / "1T" / "2.5T" (B = billion tokens, T = trillion, M, K), "300G" (units::parse_count),
// or a plain number "300e9". Throws SpecError on anything else.
int64_t parse_token_count(std::string_view text);

struct SizeClusterOptions {
  int64_t tokens = 0;
  double days = 0;
  int64_t global_batch = 0;     // 0: about 4Mi tokens (fixed across node counts)
  int max_nodes = 4096;
  // Larger node counts searched beside the fewest, to rank the answers that meet the deadline
  // by time and by cost: the candidate counts nearest 1.5, 2, 3 and 4 times the fewest.
  bool alternatives = true;
  SearchOptions search;         // no refiner: the discrete-event simulator (des_refiner)
  // Called before each probe's search with the node count it tries (a progress display's context).
  std::function<void(int nodes, int probe)> on_probe;
};

// One node count that meets the deadline, with its simulated best plan.
struct SizeClusterOption {
  int nodes = 0;
  int64_t gpus = 0;
  double days_needed = 0;
  double gpu_hours = 0;         // GPUs x days_needed x 24: what a price per GPU-hour multiplies
  double tokens_per_s = 0;      // simulated
  std::string plan_label;
};

struct SizeClusterResult {
  bool found = false;
  int nodes = 0;
  Cluster cluster;              // with that many nodes
  SearchResult best;            // the search at that size
  double days_needed = 0;       // tokens / best tokens/s
  double cost = 0;              // price_per_gpu_hour known: GPUs x hours x price; else 0
  std::string why_not;          // found == false: what the largest count tried achieves
  int probes = 0;
  // found: the fewest nodes first, then the alternatives that also meet the deadline, in node
  // order (by_time and by_cost rank them).
  std::vector<SizeClusterOption> options;
  std::vector<size_t> by_time() const;  // indices into options, fastest first
  std::vector<size_t> by_cost() const;  // fewest GPU-hours first (the cheapest at any price)
};

SizeClusterResult size_cluster(const Model& model, const Cluster& hardware, const SizeClusterOptions& options);

}  // namespace starfish::search

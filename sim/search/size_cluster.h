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
  SearchOptions search;         // no refiner: the discrete-event simulator (des_refiner)
  // Called before each probe's search with the node count it tries (a progress display's context).
  std::function<void(int nodes, int probe)> on_probe;
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
};

SizeClusterResult size_cluster(const Model& model, const Cluster& hardware, const SizeClusterOptions& options);

}  // namespace starfish::search

#pragma once
// A training budget: how many tokens a model is trained on and within how long, or the
// throughput or iteration time a plan must reach. `maxsize` answers the largest model that
// trains within it, so an answer is one a team could act on, not a capacity bound.
//
// The default is Chinchilla-style: 20 tokens per parameter (Hoffmann et al. 2022, "Training
// Compute-Optimal Large Language Models", Table 3: ~20 tokens per parameter at compute-optimal
// sizes) within 90 days.
#include <cstdint>
#include <string>

namespace starfish::search {

struct TrainingBudget {
  bool time_limited = true;       // false: memory alone decides (a capacity bound)
  int64_t tokens = 0;             // 0: tokens_per_parameter x the model's parameters
  double tokens_per_parameter = 20;
  double days = 90;               // 0: no deadline (only the two floors below)
  double min_tokens_per_s = 0;    // > 0: a throughput floor
  double max_iteration_s = 0;     // > 0: an iteration-time ceiling
};

// Tokens the model of `parameters` parameters trains on.
double budget_tokens(const TrainingBudget& budget, int64_t parameters);

// The longest iteration of `tokens_per_iteration` tokens that keeps within the budget for a
// model of `parameters` parameters; 0 when nothing limits it.
double budget_max_iteration_s(const TrainingBudget& budget, int64_t parameters, double tokens_per_iteration);

// Days to train `tokens` at `tokens_per_s`.
double days_to_train(double tokens, double tokens_per_s);

// "20 tokens per parameter (Chinchilla) within 90 days", "300B tokens within 30 days, at least
// 1.00 K tokens/s", "none (memory alone)".
std::string describe(const TrainingBudget& budget);

}  // namespace starfish::search

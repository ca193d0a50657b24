#include "sim/search/budget.h"

#include <algorithm>

#include <fmt/core.h>

#include "sim/spec/units.h"

namespace starfish::search {

namespace {
constexpr double kSecondsPerDay = 86400;

std::string number(double x) { return fmt::format("{:g}", x); }
}  // namespace

double budget_tokens(const TrainingBudget& b, int64_t parameters) {
  return b.tokens > 0 ? static_cast<double>(b.tokens) : b.tokens_per_parameter * static_cast<double>(parameters);
}

double budget_max_iteration_s(const TrainingBudget& b, int64_t parameters, double tokens_per_iteration) {
  if (!b.time_limited) return 0;
  double limit = b.max_iteration_s > 0 ? b.max_iteration_s : 0;
  auto tighten = [&](double s) { limit = limit > 0 ? std::min(limit, s) : s; };
  if (b.min_tokens_per_s > 0) tighten(tokens_per_iteration / b.min_tokens_per_s);
  if (b.days > 0) {
    const double tokens = budget_tokens(b, parameters);
    if (tokens > 0) tighten(b.days * kSecondsPerDay * tokens_per_iteration / tokens);
  }
  return limit;
}

double days_to_train(double tokens, double tokens_per_s) {
  return tokens_per_s > 0 ? tokens / tokens_per_s / kSecondsPerDay : 0;
}

std::string describe(const TrainingBudget& b) {
  if (!b.time_limited) return "none (memory alone)";
  std::string s;
  auto add = [&](const std::string& part) { s += (s.empty() ? "" : ", ") + part; };
  if (b.days > 0) {
    const std::string tokens = b.tokens > 0 ? units::human_count(static_cast<double>(b.tokens)) + " tokens"
                                            : number(b.tokens_per_parameter) +
                                                  " tokens per parameter (Chinchilla)";
    add(tokens + " within " + number(b.days) + " days");
  }
  if (b.min_tokens_per_s > 0) add("at least " + units::human_count(b.min_tokens_per_s) + " tokens/s");
  if (b.max_iteration_s > 0) add("iterations of at most " + units::human_seconds(b.max_iteration_s));
  return s.empty() ? "none (memory alone)" : s;
}

}  // namespace starfish::search

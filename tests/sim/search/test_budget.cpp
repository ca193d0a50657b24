// The training budget's arithmetic (budget.h) against hand-computed values, and maxsize answering
// the largest model that trains within it.
#include <gtest/gtest.h>

#include "sim/cost/params.h"
#include "sim/search/budget.h"
#include "sim/search/maxsize.h"
#include "support.h"

namespace starfish::search {
namespace {

TEST(Budget, ChinchillaTokensWithinNinetyDaysByDefault) {
  const TrainingBudget b;
  EXPECT_TRUE(b.time_limited);
  EXPECT_DOUBLE_EQ(budget_tokens(b, 1'000'000'000), 20e9);
  // 20e9 tokens in 90 days = 7,776,000 s at 4e6 tokens per iteration: 5,000 iterations, so at
  // most 1555.2 s each.
  EXPECT_DOUBLE_EQ(budget_max_iteration_s(b, 1'000'000'000, 4e6), 1555.2);
  EXPECT_EQ(describe(b), "20 tokens per parameter (Chinchilla) within 90 days");
}

TEST(Budget, TokensDaysFloorsAndCeilingTakeTheTightest) {
  TrainingBudget b;
  b.tokens = 300'000'000'000;
  b.days = 30;
  // 300e9 tokens in 2,592,000 s at 1e6 tokens per iteration: 300,000 iterations of 8.64 s.
  EXPECT_DOUBLE_EQ(budget_max_iteration_s(b, 7, 1e6), 8.64);
  b.min_tokens_per_s = 200'000;  // 1e6 / 2e5 = 5 s: tighter
  EXPECT_DOUBLE_EQ(budget_max_iteration_s(b, 7, 1e6), 5.0);
  b.max_iteration_s = 2;
  EXPECT_DOUBLE_EQ(budget_max_iteration_s(b, 7, 1e6), 2.0);
  EXPECT_EQ(describe(b), "300 B tokens within 30 days, at least 200 K tokens/s, iterations of at most 2.00 s");
  TrainingBudget floor_only;
  floor_only.days = 0;
  floor_only.min_tokens_per_s = 1000;
  EXPECT_DOUBLE_EQ(budget_max_iteration_s(floor_only, 1'000'000'000, 8192), 8.192);
  EXPECT_EQ(budget_max_iteration_s(TrainingBudget{false}, 1'000'000'000, 8192), 0);
  EXPECT_EQ(describe(TrainingBudget{false}), "none (memory alone)");
}

TEST(Budget, DaysToTrain) {
  EXPECT_DOUBLE_EQ(days_to_train(86400e3, 1000), 1.0);  // 86,400 s
  EXPECT_EQ(days_to_train(1e9, 0), 0);
}

TEST(Budget, MaxsizeAnswersTheLargestModelThatTrainsWithinIt) {
  const Cluster c = search_test::small_cluster(1, 4.0);
  MaxSizeOptions o;
  o.seq_len = 512;
  o.heads_step = 4;
  o.global_batch = 16;
  // Static plans: their memory edge is the analytic tier's, so what binds the next size is
  // memory or time, never the simulator (chunked plans near the host's edge: see test_maxsize).
  o.search.space.chunk_elements = {0};
  const MaxSizeResult memory_bound = max_model_size(c, o);
  ASSERT_TRUE(memory_bound.found);
  // A deadline the memory-bound answer misses by half: time binds and the answer shrinks, and
  // the answer trains on its 20 tokens per parameter within the deadline.
  o.budget = TrainingBudget{};
  o.budget.days = 0.5 * memory_bound.days_to_train;
  const MaxSizeResult r = max_model_size(c, o);
  ASSERT_TRUE(r.found);
  EXPECT_EQ(r.binding, Constraint::time) << r.binding_detail;
  EXPECT_LT(r.parameters, memory_bound.parameters);
  EXPECT_DOUBLE_EQ(r.tokens, 20.0 * static_cast<double>(r.parameters));
  EXPECT_LE(r.days_to_train, o.budget.days);
  const double tokens_per_s = r.best.rows.front().refined->tokens_per_s;
  EXPECT_NEAR(r.days_to_train, r.tokens / tokens_per_s / 86400, 1e-9 * r.days_to_train);
  EXPECT_EQ(count_parameters(r.model).total, r.parameters);
}

}  // namespace
}  // namespace starfish::search

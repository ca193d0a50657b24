// maxsize and size-cluster: the answers are edges (the found size fits, the next does not).
#include <gtest/gtest.h>

#include <atomic>
#include <string>

#include "sim/cost/params.h"
#include "sim/search/maxsize.h"
#include "sim/search/model_family.h"
#include "sim/search/size_cluster.h"
#include "sim/spec/error.h"
#include "support.h"

namespace starfish::search {
namespace {

TEST(ModelFamily, ReproducesGpt3Shapes) {
  EXPECT_NEAR(count_parameters(family_model("gpt", 96, 96)).total / 1e9, 175.0, 0.5);
  EXPECT_NEAR(count_parameters(family_model("gpt", 32, 32)).total / 1e9, 6.7, 0.1);
  EXPECT_NEAR(count_parameters(family_model("gpt", 40, 40)).total / 1e9, 13.0, 0.2);
  EXPECT_NEAR(count_parameters(family_model("llama", 32, 32)).total / 1e9, 6.74, 0.01);  // LLaMA 2 7B
  EXPECT_THROW(family_model("bert", 8, 8), SpecError);
}

// GPT sizes in steps of 4 heads at sequence 512, every state on the GPU: memory binds.
MaxSizeOptions gpu_only_options() {
  MaxSizeOptions o;
  o.seq_len = 512;
  o.heads_step = 4;
  o.search.space.param_tiers = o.search.space.grad_tiers = o.search.space.optimizer_tiers = {Tier::gpu};
  return o;
}

TEST(MaxSize, FoundSizeFitsAndTheNextDoesNot) {
  const Cluster c = search_test::small_cluster(1, 1.0);
  const MaxSizeOptions o = gpu_only_options();
  const MaxSizeResult r = max_model_size(c, o);
  ASSERT_TRUE(r.found);
  EXPECT_FALSE(r.best.rows.empty());
  EXPECT_EQ(r.binding, "GPU memory");
  // The next model (one layer more, or the next heads step) does not fit under the same search.
  SearchOptions so = o.search;
  EXPECT_TRUE(search(r.next_model, c, default_search_training(r.next_model, c), so).rows.empty());
  EXPECT_EQ(r.next_model.hidden, r.model.hidden);
  EXPECT_EQ(r.next_model.layers, r.model.layers + 1);
  EXPECT_LT(r.probes, 20);  // a bisection, not a scan of every size
}

TEST(MaxSize, CancelledWhileGrowingGivesNoAnswerInsteadOfCrashing) {
  // Cancelled after the first size fitted, before any size failed (a GUI closing its what-if
  // panel): the bisection has no failing size to refine towards.
  const Cluster c = search_test::small_cluster(1, 1.0);
  MaxSizeOptions o = gpu_only_options();
  std::atomic<bool> cancel{false};
  o.search.cancel = &cancel;
  o.search.progress = [&](const Progress& p) {
    if (std::string(p.phase) == "done") cancel = true;  // the first probe's search has ended
  };
  const MaxSizeResult r = max_model_size(c, o);
  EXPECT_FALSE(r.found);
  EXPECT_EQ(r.probes, 1);
}

TEST(MaxSize, TimeLimitBinds) {
  const Cluster c = search_test::small_cluster(1, 4.0);
  MaxSizeOptions o;
  o.seq_len = 512;
  o.heads_step = 4;
  o.global_batch = 16;
  const MaxSizeResult memory_bound = max_model_size(c, o);
  ASSERT_TRUE(memory_bound.found);
  EXPECT_NE(memory_bound.binding, "time");
  // Half the iteration time of the memory-bound answer: time binds, and the answer shrinks.
  o.search.max_iteration_s = 0.5 * memory_bound.best.rows.front().analytic.time.iteration_s;
  const MaxSizeResult r = max_model_size(c, o);
  ASSERT_TRUE(r.found);
  EXPECT_EQ(r.binding, "time");
  EXPECT_LT(r.parameters, memory_bound.parameters);
  EXPECT_LE(r.best.rows.front().analytic.time.iteration_s, o.search.max_iteration_s);
}

TEST(SizeCluster, TokenCounts) {
  EXPECT_EQ(parse_token_count("300B"), 300'000'000'000);
  EXPECT_EQ(parse_token_count("1T"), 1'000'000'000'000);
  EXPECT_EQ(parse_token_count("2.5T"), 2'500'000'000'000);
  EXPECT_EQ(parse_token_count("300e9"), 300'000'000'000);
  EXPECT_EQ(parse_token_count("300G"), 300'000'000'000);
  EXPECT_THROW(parse_token_count("many"), SpecError);
  EXPECT_THROW(parse_token_count("-5B"), SpecError);
}

TEST(SizeCluster, FewestNodesMeetTheDeadlineAndFewerDoNot) {
  const Model m = search_test::small_gpt();
  const Cluster hw = search_test::small_cluster(1, 4.0);
  SizeClusterOptions o;
  o.tokens = parse_token_count("400B");
  o.days = 1;
  o.global_batch = 256;
  o.max_nodes = 64;
  const SizeClusterResult r = size_cluster(m, hw, o);
  ASSERT_TRUE(r.found) << r.why_not;
  EXPECT_LE(r.days_needed, o.days);
  EXPECT_GT(r.nodes, 1);
  // Every smaller node count misses the deadline (or has no plan).
  for (int n = 1; n < r.nodes; ++n) {
    Cluster c = hw;
    c.nodes = n;
    Training t = default_search_training(m, c);
    t.global_batch = o.global_batch;
    SearchOptions so;
    so.top_k = 1;
    const SearchResult s = search(m, c, t, so);
    if (!s.rows.empty()) {
      EXPECT_GT(static_cast<double>(o.tokens) / s.rows.front().tokens_per_s / 86400.0, o.days) << n;
    }
  }
}

}  // namespace
}  // namespace starfish::search

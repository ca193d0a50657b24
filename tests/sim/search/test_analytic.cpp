// The search's analytic evaluator gives exactly what starfish::estimate() gives, on every plan
// of a small space (all tiers in play) and on a sample of GPT-3 175B's plans on 1024 GPUs.
#include <gtest/gtest.h>

#include "sim/cost/estimate.h"
#include "sim/search/analytic.h"
#include "sim/spec/spec_io.h"
#include "support.h"

namespace starfish::search {
namespace {

void expect_same(const Estimate& a, const Estimate& b, const std::string& what) {
  SCOPED_TRACE(what);
  EXPECT_EQ(a.fits, b.fits);
  EXPECT_EQ(a.why_not, b.why_not);
  EXPECT_EQ(a.peak_stage, b.peak_stage);
  EXPECT_DOUBLE_EQ(a.params_per_gpu, b.params_per_gpu);
  EXPECT_EQ(a.micro_batches, b.micro_batches);
  EXPECT_DOUBLE_EQ(a.model_flops, b.model_flops);
  EXPECT_DOUBLE_EQ(a.hardware_flops, b.hardware_flops);
  for (auto [x, y] : {std::pair{&a.gpu, &b.gpu}, std::pair{&a.cpu, &b.cpu}, std::pair{&a.nvme, &b.nvme}}) {
    EXPECT_DOUBLE_EQ(x->params_bytes, y->params_bytes);
    EXPECT_DOUBLE_EQ(x->grads_bytes, y->grads_bytes);
    EXPECT_DOUBLE_EQ(x->optimizer_bytes, y->optimizer_bytes);
    EXPECT_DOUBLE_EQ(x->activations_bytes, y->activations_bytes);
    EXPECT_DOUBLE_EQ(x->buffers_bytes, y->buffers_bytes);
    EXPECT_DOUBLE_EQ(x->capacity_bytes, y->capacity_bytes);
  }
  EXPECT_DOUBLE_EQ(a.time.compute_s, b.time.compute_s);
  EXPECT_DOUBLE_EQ(a.time.bubble_s, b.time.bubble_s);
  EXPECT_DOUBLE_EQ(a.time.tp_comm_s, b.time.tp_comm_s);
  EXPECT_DOUBLE_EQ(a.time.pp_comm_s, b.time.pp_comm_s);
  EXPECT_DOUBLE_EQ(a.time.dp_comm_s, b.time.dp_comm_s);
  EXPECT_DOUBLE_EQ(a.time.optimizer_s, b.time.optimizer_s);
  EXPECT_DOUBLE_EQ(a.time.offload_s, b.time.offload_s);
  EXPECT_DOUBLE_EQ(a.time.iteration_s, b.time.iteration_s);
  EXPECT_DOUBLE_EQ(a.tokens_per_s, b.tokens_per_s);
  EXPECT_DOUBLE_EQ(a.mfu, b.mfu);
  EXPECT_DOUBLE_EQ(a.bubble_fraction, b.bubble_fraction);
}

void check_parity(const Model& m, const Cluster& c, const Training& t, size_t stride) {
  const auto plans = enumerate_plans(m, c, t, SearchSpace{});
  ASSERT_FALSE(plans.empty());
  AnalyticEvaluator ev(m, c, t);
  ev.prepare(plans);
  Estimate fast;
  int fitting = 0, not_fitting = 0;
  for (size_t i = 0; i < plans.size(); i += stride) {
    const Plan p = plans[i].to_plan();
    const Estimate slow = estimate(make_job(m, c, t, p));
    ev.evaluate(p, fast);
    expect_same(fast, slow, short_label(plans[i]));
    (slow.fits ? fitting : not_fitting)++;
    if (::testing::Test::HasFailure()) return;  // one plan's diff is enough to read
  }
  EXPECT_GT(fitting, 0);
  EXPECT_GT(not_fitting, 0);
}

TEST(Analytic, MatchesEstimateOnEveryPlanOfASmallSpace) {
  check_parity(search_test::small_gpt(), search_test::small_cluster(2, 1.0), search_test::fp16_training(16), 1);
}

TEST(Analytic, MatchesEstimateOnGpt3On1024A100s) {
  const Model m = load_model(std::string(STARFISH_SOURCE_DIR) + "/configs/models/gpt3-175b.yaml");
  Cluster c = load_cluster(std::string(STARFISH_SOURCE_DIR) + "/hwprofiles/dgx-a100-80gb.yaml");
  c.nodes = 128;
  Training t;
  t.global_batch = 1536;
  check_parity(m, c, t, 997);  // ~340 plans spread over the whole space
}

// A plan the space does not enumerate, block recomputation (plan.recompute_layers), through the
// evaluator as the GUI's what-if and the exports pass user plans: the same as estimate().
TEST(Analytic, MatchesEstimateUnderBlockRecomputation) {
  const Model m = search_test::small_gpt(8, 512, 8);
  const Cluster c = search_test::small_cluster(4);
  const Training t = search_test::fp16_training(64);
  Plan p;
  p.tp = 2;
  p.pp = 2;
  p.virtual_stages = 2;
  p.schedule = Schedule::interleaved;
  p.recompute = Recompute::full;
  p.recompute_layers = 1;
  AnalyticEvaluator ev(m, c, t);
  Estimate fast;
  ev.evaluate(make_job(m, c, t, p).plan, fast);
  const Estimate slow = estimate(make_job(m, c, t, p));
  expect_same(fast, slow, "block recompute");
  p.recompute_layers = 0;
  EXPECT_GT(estimate(make_job(m, c, t, p)).hardware_flops, slow.hardware_flops);
}

TEST(Analytic, StatesBoundNeverExceedsTheEstimate) {
  const Model m = search_test::small_gpt();
  const Cluster c = search_test::small_cluster(2, 1.0);
  const Training t = search_test::fp16_training(16);
  const auto plans = enumerate_plans(m, c, t, SearchSpace{});
  AnalyticEvaluator ev(m, c, t);
  ev.prepare(plans);
  Estimate e;
  for (const Candidate& k : plans) {
    const Plan p = k.to_plan();
    ev.evaluate(p, e);
    const auto b = ev.states_lower_bound(p);
    ASSERT_LE(b.gpu_bytes, e.gpu.total()) << short_label(k);
    ASSERT_LE(b.cpu_bytes, e.cpu.total() * (1 + 1e-12)) << short_label(k);
    ASSERT_LE(b.nvme_bytes, e.nvme.total() * (1 + 1e-12)) << short_label(k);
  }
}

}  // namespace
}  // namespace starfish::search

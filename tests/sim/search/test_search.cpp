// Search behaviour: pruning keeps every fitting plan, ranking is deterministic whatever the
// thread count, cancellation returns the best so far, the refiner re-ranks the top K.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "sim/des/engine.h"
#include "sim/search/analytic.h"
#include "sim/search/des_refiner.h"
#include "sim/search/search.h"
#include "sim/spec/job.h"
#include "sim/spec/spec_io.h"
#include "support.h"

namespace starfish::search {
namespace {

struct Case {
  Model m = search_test::small_gpt();
  Cluster c = search_test::small_cluster(2, 1.0);
  Training t = search_test::fp16_training(16);
};

TEST(Search, PruningNeverDropsAPlanThatFits) {
  Case k;
  k.c = search_test::small_cluster(2, 0.25);  // tight: model states alone overflow some families
  SearchOptions on, off;
  on.top_k = off.top_k = 1000000;  // every fitting plan
  off.prune = false;
  const SearchResult a = search(k.m, k.c, k.t, on), b = search(k.m, k.c, k.t, off);
  EXPECT_GT(a.pruned, 0);
  EXPECT_EQ(b.pruned, 0);
  EXPECT_GT(a.fitting, 0);
  EXPECT_EQ(a.fitting, b.fitting);
  ASSERT_EQ(a.rows.size(), b.rows.size());
  for (size_t i = 0; i < a.rows.size(); ++i) EXPECT_EQ(a.rows[i].index, b.rows[i].index);
  // And the fitting set is exactly the plans estimate() accepts.
  AnalyticEvaluator ev(k.m, k.c, k.t);
  const auto plans = enumerate_plans(k.m, k.c, k.t, SearchSpace{});
  ev.prepare(plans);
  int64_t fits = 0;
  Estimate e;
  for (const auto& p : plans) {
    ev.evaluate(p.to_plan(), e);
    fits += e.fits;
    EXPECT_EQ(e.fits, estimate(make_job(k.m, k.c, k.t, p.to_plan())).fits);
  }
  EXPECT_EQ(fits, a.fitting);
}

// A space that recomputes every layer, under Megatron-LM: rows whose block recomputation fits
// recompute only the fewest layers per virtual stage that do (one fewer would not fit), are
// faster for it, say so in their label, rank by it, and are plans the space and estimate take.
TEST(Search, RowsRecomputingEveryLayerRecomputeTheFewestThatFit) {
  Case k;
  k.c = search_test::small_cluster(2, 0.5);
  SearchOptions o;
  o.space.recompute = {Recompute::full};
  o.top_k = 40;
  const SearchResult r = search(k.m, k.c, k.t, o);
  ASSERT_FALSE(r.rows.empty());
  int block = 0, fewest_above_one = 0;
  for (size_t i = 0; i < r.rows.size(); ++i) {
    const Row& row = r.rows[i];
    if (i > 0) {
      EXPECT_GE(r.rows[i - 1].tokens_per_s, row.tokens_per_s);
    }
    EXPECT_EQ(row.plan.recompute, Recompute::full);
    if (row.plan.recompute_layers == 0) continue;
    ++block;
    const Job j = r.job(row);
    EXPECT_NE(row.label().find(" rc-full/" + std::to_string(row.plan.recompute_layers)), std::string::npos) << row.label();
    EXPECT_TRUE(is_enumerated_shape(j.plan, k.c, o.space)) << row.label();
    const Estimate e = estimate(j);
    EXPECT_TRUE(e.fits) << row.label();
    EXPECT_DOUBLE_EQ(e.tokens_per_s, row.tokens_per_s) << row.label();
    Job full = j;
    full.plan.recompute_layers = 0;
    EXPECT_LT(estimate(full).tokens_per_s, row.tokens_per_s) << row.label();
    if (row.plan.recompute_layers > 1) {
      ++fewest_above_one;
      Job fewer = j;
      --fewer.plan.recompute_layers;
      EXPECT_FALSE(estimate(fewer).fits) << row.label();
    }
  }
  EXPECT_GT(block, 0);
  EXPECT_GT(fewest_above_one, 0);  // memory binds somewhere: not every row gets away with one layer
}

// Every plan the search answers with runs on the framework it names: the space's (Megatron-LM)
// where that framework holds the states as the plan places them, Starfish's chunk runtime for
// chunks, DeepSpeed or FSDP for the offload Megatron cannot run (its grad buffer stays on the
// GPU) and for ZeRO-2/3 (Megatron-LM 2021-22 shards the optimizer only); their labels say so,
// and make_job takes each row as it is.
TEST(Search, EveryRowRunsOnTheFrameworkItNames) {
  Case k;
  k.c = search_test::small_cluster(1, 1.5);  // tight: offloaded and chunked plans rank (DeepSpeed's 1 GB bucket fits)
  SearchOptions o;
  o.top_k = 100000;
  o.space.chunk_elements = {0, 1 << 20};
  const SearchResult r = search(k.m, k.c, k.t, o);
  std::map<Framework, int> rows;
  int chunked_rows = 0;
  for (const Row& row : r.rows) {
    const Plan& p = row.plan;
    ++rows[p.framework];
    EXPECT_EQ(placement_problem(p).why, "") << row.label();
    EXPECT_EQ(framework_schedule_problem(p).why, nullptr) << row.label();  // e.g. no SP on DeepSpeed
    EXPECT_NO_THROW(r.job(row)) << row.label();
    const bool offloaded = p.offload.params != Tier::gpu || p.offload.grads != Tier::gpu ||
                           (p.offload.optimizer != Tier::gpu && p.zero_stage != 1);
    if (p.chunked()) {
      EXPECT_EQ(p.framework, Framework::starfish) << row.label();
      ++chunked_rows;
    }
    // Starfish's executor, which runs every chunked plan, trains data parallelism only.
    if (p.framework == Framework::starfish) EXPECT_EQ(executor_problem(p).why, nullptr) << row.label();
    else if (!offloaded && p.zero_stage <= 1) EXPECT_EQ(p.framework, Framework::megatron_lm) << row.label();
    else EXPECT_NE(p.framework, Framework::megatron_lm) << row.label();
    EXPECT_EQ(row.label().find(" ds") != std::string::npos, p.framework == Framework::deepspeed) << row.label();
  }
  EXPECT_GT(rows[Framework::megatron_lm], 0);
  EXPECT_GT(rows[Framework::deepspeed], 0);
  EXPECT_GT(chunked_rows, 0);
  EXPECT_GT(rows[Framework::starfish], 0);
  int deepspeed_tp_rows = 0;
  for (const Row& row : r.rows) deepspeed_tp_rows += row.plan.framework == Framework::deepspeed && row.plan.tp > 1;
  EXPECT_GT(deepspeed_tp_rows, 0);  // where sequence parallelism could have been offered
}

TEST(Search, RankingIsTheSameForAnyThreadCount) {
  Case k;
  SearchOptions one, many;
  one.threads = 1;
  many.threads = 5;
  one.top_k = many.top_k = 50;
  const SearchResult a = search(k.m, k.c, k.t, one), b = search(k.m, k.c, k.t, many);
  ASSERT_EQ(a.rows.size(), 50u);
  ASSERT_EQ(a.rows.size(), b.rows.size());
  for (size_t i = 0; i < a.rows.size(); ++i) {
    EXPECT_EQ(a.rows[i].index, b.rows[i].index);
    EXPECT_EQ(a.rows[i].tokens_per_s, b.rows[i].tokens_per_s);
    if (i > 0) {
      EXPECT_GE(a.rows[i - 1].tokens_per_s, a.rows[i].tokens_per_s);
    }
  }
  ASSERT_EQ(a.rejected.size(), b.rejected.size());
  for (size_t i = 0; i < a.rejected.size(); ++i) EXPECT_EQ(a.rejected[i].text(), b.rejected[i].text());
}

TEST(Search, RejectionSummaryNamesFamilyTierAndCount) {
  Case k;
  const SearchResult r = search(k.m, k.c, k.t, SearchOptions{});
  ASSERT_FALSE(r.rejected.empty());
  int64_t plans = 0;
  for (const auto& f : r.rejected) plans += f.plans;
  EXPECT_EQ(plans + r.fitting, r.enumerated);
  const RejectedFamily& f = r.rejected.front();
  EXPECT_NE(f.text().find(f.family + ": " + constraint_name(f.constraint) + " (needs "), std::string::npos) << f.text();
  EXPECT_NE(f.text().find(" x " + std::to_string(f.plans) + (f.plans == 1 ? " plan" : " plans")), std::string::npos) << f.text();
}

TEST(Search, CancellationReturnsTheBestOfThePlansEvaluatedSoFar) {
  const Model m = load_model(std::string(STARFISH_SOURCE_DIR) + "/configs/models/gpt3-175b.yaml");
  Cluster c = load_cluster(std::string(STARFISH_SOURCE_DIR) + "/hwprofiles/dgx-a100-80gb.yaml");
  c.nodes = 128;
  Training t;
  t.global_batch = 1536 * 4;  // many micro-batch sizes: a big space
  std::atomic<bool> cancel{false};
  SearchOptions o;
  o.threads = 1;
  o.space.max_virtual_stages = 48;  // a big space (over a million plans): it runs for seconds
  o.space.chunk_elements = {0, 1 << 22, 1 << 23, 1 << 24, 1 << 25, 1 << 26, 1 << 27, 1 << 28};
  o.cancel = &cancel;
  o.progress_interval_s = 0.002;  // report (and so cancel) long before the search could end
  int64_t done_at_cancel = -1;
  o.progress = [&](const Progress& p) {
    // Only while the analytic tier runs: the final "done" report comes after the search ended.
    if (done_at_cancel < 0 && p.done > 0 && p.fitting > 0 && std::string(p.phase) == "analytic") {
      done_at_cancel = p.done;
      cancel = true;
    }
  };
  const SearchResult r = search(m, c, t, o);
  ASSERT_TRUE(r.cancelled);
  ASSERT_GT(done_at_cancel, 0);
  ASSERT_LT(r.evaluated + r.pruned, r.enumerated);
  ASSERT_FALSE(r.rows.empty());
  // One thread takes blocks in order: the plans looked at are a prefix of the enumeration.
  const int64_t seen = r.evaluated + r.pruned;
  for (const Row& row : r.rows) EXPECT_LT(row.index, seen);
  // The best of that prefix, found independently: each plan, or for one recomputing every
  // layer its block variant with the fewest layers that fit when that is faster.
  const auto plans = enumerate_plans(m, c, t, o.space);
  AnalyticEvaluator ev(m, c, t);
  ev.prepare(plans);
  double best = 0;
  int64_t best_index = -1;
  Estimate e;
  for (int64_t i = 0; i < seen; ++i) {
    Plan p = plans[i].to_plan();
    ev.evaluate(p, e);
    if (!e.fits) continue;
    double speed = e.tokens_per_s;
    const int layers = fewest_fitting_recompute_layers(m, p, [&](int n) {
      Plan q = p;
      q.recompute_layers = n;
      ev.evaluate(q, e);
      return e.fits;
    });
    if (layers > 0) {
      p.recompute_layers = layers;
      ev.evaluate(p, e);
      speed = std::max(speed, e.tokens_per_s);
    }
    if (speed > best) {
      best = speed;
      best_index = i;
    }
  }
  EXPECT_EQ(r.rows.front().index, best_index);
}

TEST(Search, RefinerReranksTheBestKAndReplacesThePlansItRefuses) {
  Case k;
  SearchOptions o;
  o.top_k = 6;
  const SearchResult plain = search(k.m, k.c, k.t, o);  // analytic only: the best 6
  ASSERT_EQ(plain.rows.size(), 6u);
  o.top_k = 5;
  const Plan first = plain.rows[0].plan, second = plain.rows[1].plan, sixth = plain.rows[5].plan;
  // A stand-in "simulator": the analytic verdict, except that it finds the analytic winner
  // does not fit and the runner-up twice as fast.
  o.refiner = [&](const Job& job) {
    Evaluation v = to_evaluation(estimate(job));
    v.source = "des";
    if (job.plan == first) {
      v.fits = false;
      v.why_not = "simulated peak over capacity";
    }
    if (job.plan == second) v.tokens_per_s *= 2;
    return v;
  };
  const SearchResult r = search(k.m, k.c, k.t, o);
  // The rejected winner is dropped from the ranking and reported with the simulator's reason;
  // the analytic sixth takes its place, refined too, so every row shown passed the simulator.
  EXPECT_EQ(r.refined, 6);
  ASSERT_EQ(r.rows.size(), 5u);
  EXPECT_EQ(r.rows.front().plan, second);
  for (const Row& row : r.rows) {
    EXPECT_NE(row.plan, first);
    ASSERT_TRUE(row.refined.has_value());
    EXPECT_TRUE(row.refined->fits);
    EXPECT_EQ(row.refined->source, "des");
    EXPECT_EQ(row.tokens_per_s, row.refined->tokens_per_s);
  }
  EXPECT_TRUE(std::any_of(r.rows.begin(), r.rows.end(), [&](const Row& row) { return row.plan == sixth; }));
  ASSERT_EQ(r.simulator_rejected.size(), 1u);
  EXPECT_EQ(r.simulator_rejected[0].first, plain.rows[0].label());
  EXPECT_EQ(r.simulator_rejected[0].second, "simulated peak over capacity");
  EXPECT_TRUE(has_simulated_answer(r));
}

TEST(Search, WhenTheSimulatorRefusesEveryPlanThereIsNoAnswerAndItsReasonBinds) {
  Case k;
  SearchOptions o;
  o.top_k = 1;
  o.refine_reserve = 3;
  int calls = 0;
  o.refiner = [&](const Job&) {
    ++calls;
    Evaluation v;
    v.constraint = Constraint::cpu_memory;
    v.why_not = "simulated CPU memory: needs more";
    return v;
  };
  const SearchResult r = search(k.m, k.c, k.t, o);
  EXPECT_GT(r.fitting, 4);
  EXPECT_EQ(calls, 4);  // the best plan, then the 3 in reserve, one at a time
  EXPECT_TRUE(r.rows.empty());
  EXPECT_FALSE(has_simulated_answer(r));
  EXPECT_EQ(r.simulator_rejected.size(), 4u);
  EXPECT_EQ(r.binding_constraint(), Constraint::cpu_memory);
}

TEST(Search, ASimulatedIterationOverTheTimeLimitIsRefused) {
  Case k;
  SearchOptions o;
  o.top_k = 1;
  const SearchResult plain = search(k.m, k.c, k.t, o);
  ASSERT_FALSE(plain.rows.empty());
  const Plan winner = plain.rows[0].plan;
  o.max_iteration_s = 2 * plain.rows[0].analytic.time.iteration_s;  // the analytic tier passes it
  // A "simulator" that finds the winner 3x slower than the analytic tier, the rest as it is.
  o.refiner = [&](const Job& job) {
    Evaluation v = to_evaluation(estimate(job));
    if (job.plan == winner) v.iteration_s *= 3;
    return v;
  };
  const SearchResult r = search(k.m, k.c, k.t, o);
  ASSERT_EQ(r.simulator_rejected.size(), 1u);
  EXPECT_EQ(r.simulator_rejected[0].first, plain.rows[0].label());
  EXPECT_EQ(r.simulator_rejected[0].second.rfind("simulated iteration ", 0), 0u) << r.simulator_rejected[0].second;
  ASSERT_EQ(r.rows.size(), 1u);
  EXPECT_NE(r.rows[0].plan, winner);
  EXPECT_LE(r.rows[0].refined->iteration_s, o.max_iteration_s);
}

TEST(Search, TimeLimitRejectsSlowPlans) {
  Case k;
  SearchOptions o;
  o.top_k = 1;
  const SearchResult all = search(k.m, k.c, k.t, o);
  ASSERT_FALSE(all.rows.empty());
  o.max_iteration_s = all.rows.front().analytic.time.iteration_s * 0.5;
  const SearchResult none = search(k.m, k.c, k.t, o);
  EXPECT_TRUE(none.rows.empty());
  EXPECT_EQ(none.binding_constraint(), Constraint::time);
}

TEST(Search, CancellingDuringRefinementStopsTheSimulationItIsIn) {
  // The event simulator polls the flag while it runs: raised just before a simulation starts,
  // that simulation stops (des::Cancelled) instead of running to its end, the row stays
  // analytic and the search says it was interrupted. Progress reports the refine phase.
  const Model m = load_model(std::string(STARFISH_SOURCE_DIR) + "/configs/models/gpt3-175b.yaml");
  Cluster c = load_cluster(std::string(STARFISH_SOURCE_DIR) + "/hwprofiles/dgx-a100-80gb.yaml");
  c.nodes = 16;
  const Training t = default_search_training(m, c);
  std::atomic<bool> cancel{false};
  SearchOptions o;
  o.threads = 1;
  o.top_k = 3;
  o.cancel = &cancel;
  int started = 0, stopped = 0;
  const Refiner des = des_refiner(&cancel);
  o.refiner = [&](const Job& job) {
    ++started;
    cancel = true;  // Ctrl-C as the simulation starts
    try {
      return des(job);
    } catch (const des::Cancelled&) {
      ++stopped;
      throw;
    }
  };
  int64_t refine_reports = 0, refine_total = 0;
  o.progress = [&](const Progress& p) {
    if (std::string(p.phase) != "refine") return;
    ++refine_reports;
    refine_total = p.refine_total;
  };
  const SearchResult r = search(m, c, t, o);
  EXPECT_TRUE(r.cancelled);
  EXPECT_EQ(started, 1);
  EXPECT_EQ(stopped, 1);
  EXPECT_EQ(r.refined, 0);
  ASSERT_EQ(r.rows.size(), 3u);  // the analytic best, unrefined
  for (const Row& row : r.rows) EXPECT_FALSE(row.refined.has_value());
  EXPECT_GT(refine_reports, 0);
  EXPECT_EQ(refine_total, 3);
}

TEST(Search, RefinementReportsItsOwnProgress) {
  Case k;
  SearchOptions o;
  o.top_k = 4;
  o.progress_interval_s = 1e-4;
  o.refiner = [](const Job& job) {
    Evaluation v = to_evaluation(estimate(job));
    v.source = "des";
    return v;
  };
  std::vector<std::pair<int64_t, int64_t>> refine;  // (refined, refine_total) per report
  std::string last_phase;
  o.progress = [&](const Progress& p) {
    last_phase = p.phase;
    if (last_phase == "refine") refine.emplace_back(p.refined, p.refine_total);
  };
  const SearchResult r = search(k.m, k.c, k.t, o);
  ASSERT_EQ(r.refined, 4);
  ASSERT_FALSE(refine.empty());
  EXPECT_EQ(refine.back(), std::make_pair(int64_t{4}, int64_t{4}));  // the last refine report: all done
  for (const auto& [done, total] : refine) EXPECT_LE(done, total);
  EXPECT_EQ(last_phase, "done");
}

}  // namespace
}  // namespace starfish::search

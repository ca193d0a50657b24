// search_bench: how fast the plan search is.
//  1. analytic evaluations per second on one core: starfish::estimate() (with make_job) against
//     the search's AnalyticEvaluator, full model (memory + time) for every plan;
//  2. the wall time of a full search (enumerate, prune, evaluate, rank) for GPT-3 175B on 1024
//     A100s (128 DGX A100 nodes), with 1 thread and with every hardware thread;
//  3. Ctrl-C while the event simulator refines the best plans: the time from raising the cancel
//     flag to the search's return, against the mean wall time of one simulation (the latency
//     when the flag was only looked at between simulations);
//  4. what `search --megatron --megatron-bridge --deepspeed --torchtitan` adds to a plain search
//     (the README's main job, the default batch): the second searches DeepSpeed and
//     Megatron-Bridge need (their plans only, costed as DeepSpeed / Megatron-core run them, one
//     simulated answer each; Megatron-LM runs row #1, torchtitan's export refuses GPT-3's
//     LayerNorm model before any search) against the plain search with the simulator (the issue
//     asks for <= 2x in total; it was 2,700x when the exports re-simulated 5,000 plans).
// Usage: search_bench [path/to/repo]   (default: the source tree it was built from)
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "sim/cost/estimate.h"
#include "sim/search/analytic.h"
#include "sim/search/des_refiner.h"
#include "sim/search/plan_export.h"
#include "sim/search/search.h"
#include "sim/spec/spec_io.h"

using namespace starfish;
using Clock = std::chrono::steady_clock;

static double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// The job every measurement searches: GPT-3 175B on 128 DGX A100 nodes.
struct Bench {
  Model model;
  Cluster cluster;
  Training training;
  int hw_threads = 1;
};

// 1. Analytic evaluations per second on one core: estimate() on a sample, the evaluator on every
// plan. Returns a sum of the results, so the loops are not optimised away.
double analytic_rates(const Bench& b) {
  const auto t_enum = Clock::now();
  const std::vector<search::Candidate> plans = search::enumerate_plans(b.model, b.cluster, b.training, search::SearchSpace{});
  const double enum_s = seconds_since(t_enum);
  // 1a. estimate() on a sample (it is ~100 us per call: the whole space would take minutes).
  const size_t sample = std::min<size_t>(plans.size(), 3000);
  double sink = 0;
  auto t0 = Clock::now();
  for (size_t i = 0; i < sample; ++i) {
    const Job job = make_job(b.model, b.cluster, b.training, plans[i * (plans.size() / sample)].to_plan());
    sink += estimate(job).tokens_per_s;
  }
  const double estimate_rate = sample / seconds_since(t0);
  // 1b. the evaluator, every plan, memory and time each.
  search::AnalyticEvaluator evaluator(b.model, b.cluster, b.training);
  t0 = Clock::now();
  evaluator.prepare(plans);
  const double prepare_s = seconds_since(t0);
  Estimate e;
  t0 = Clock::now();
  for (const auto& c : plans) {
    evaluator.evaluate(c.to_plan(), e, false, false);
    sink += e.tokens_per_s;
  }
  const double full_rate = plans.size() / seconds_since(t0);
  std::printf("GPT-3 175B on 128 x DGX A100 (1024 GPUs), global batch 1536: %zu plans (enumerated in %.3f s)\n\n",
              plans.size(), enum_s);
  std::printf("%-52s %16s\n", "analytic tier, one core", "plans/s");
  std::printf("%-52s %16.0f\n", "make_job + starfish::estimate()", estimate_rate);
  std::printf("%-52s %16.0f\n", "AnalyticEvaluator (memory + time, every plan)", full_rate);
  std::printf("%-52s %16.3f s\n", "  (shape cache prepared in)", prepare_s);
  return sink;
}

// 2. The whole search, with one thread and with every hardware thread: the same best row.
void full_search(const Bench& b) {
  search::SearchOptions one;
  one.threads = 1;
  const search::SearchResult r1 = search::search(b.model, b.cluster, b.training, one);
  search::SearchOptions all;
  all.threads = b.hw_threads;
  const search::SearchResult rn = search::search(b.model, b.cluster, b.training, all);
  std::printf("\n%-22s %8s %10s %10s %10s %10s %12s %14s\n", "full search", "threads", "wall s", "plans", "evaluated",
              "pruned", "fitting", "plans/s/core");
  for (const auto* r : {&r1, &rn})
    std::printf("%-22s %8d %10.3f %10lld %10lld %10lld %12lld %14.0f\n", "GPT-3 175B / 1024", r->threads, r->elapsed_s,
                static_cast<long long>(r->enumerated), static_cast<long long>(r->evaluated),
                static_cast<long long>(r->pruned), static_cast<long long>(r->fitting),
                r->enumerated / r->analytic_s / r->threads);
  if (!rn.rows.empty())
    std::printf("\nbest: %s  %.0f tokens/s  MFU %.1f%%\n", rn.rows.front().label().c_str(), rn.rows.front().tokens_per_s,
                100 * rn.rows.front().analytic.mfu);
  std::printf("same best row with 1 and %d threads: %s\n", b.hw_threads,
              (!r1.rows.empty() && !rn.rows.empty() && r1.rows.front().index == rn.rows.front().index) ? "yes" : "NO");
}

// 3. Cancel latency in the refine phase, one thread (one simulation in flight).
void cancel_latency(const Bench& b) {
  std::atomic<bool> cancel{false};
  search::SearchOptions refine;
  refine.threads = 1;
  refine.top_k = 6;
  refine.cancel = &cancel;
  refine.refiner = search::des_refiner(&cancel);
  const auto t_uncancelled = Clock::now();
  const search::SearchResult full = search::search(b.model, b.cluster, b.training, refine);
  const double per_simulation_s = (seconds_since(t_uncancelled) - full.analytic_s) / std::max<int64_t>(1, full.refined);
  Clock::time_point raised;
  refine.progress_interval_s = 0.01;
  refine.progress = [&](const search::Progress& p) {
    if (std::string(p.phase) == "refine" && p.refined >= 1 && !cancel) {
      raised = Clock::now();  // part-way through the second simulation
      cancel = true;
    }
  };
  const search::SearchResult stopped = search::search(b.model, b.cluster, b.training, refine);
  const double latency_s = seconds_since(raised);
  std::printf("\ncancel while simulating (1 thread): returned %.1f ms after the flag was raised; one simulation takes "
              "%.1f ms (latency / simulation = %.3f); %lld of %d refined, cancelled: %s\n",
              1e3 * latency_s, 1e3 * per_simulation_s, latency_s / per_simulation_s, static_cast<long long>(stopped.refined),
              refine.top_k, stopped.cancelled ? "yes" : "NO");
}

// 4. The exports' extra search against the plain one, both with the simulator.
void exports_overhead(const Bench& b) {
  const Training main_job = search::default_search_training(b.model, b.cluster);
  search::SearchOptions plain;
  plain.threads = b.hw_threads;
  plain.refiner = search::des_refiner(nullptr);
  auto t4 = Clock::now();
  const search::SearchResult main_result = search::search(b.model, b.cluster, main_job, plain);
  const double plain_s = seconds_since(t4);
  search::SearchOptions deepspeed = plain;
  deepspeed.top_k = deepspeed.refine_top = 1;
  deepspeed.space.framework = Framework::deepspeed;
  deepspeed.admit = [&](const Plan& p) { return search::deepspeed_unsupported(p, main_job).empty(); };
  t4 = Clock::now();
  const search::SearchResult ds = search::search(b.model, b.cluster, main_job, deepspeed);
  const double deepspeed_s = seconds_since(t4);
  search::SearchOptions bridge = deepspeed;
  bridge.space.framework = Framework::megatron_core;
  bridge.admit = [&](const Plan& p) { return search::megatron_bridge_unsupported(p, main_job).empty(); };
  t4 = Clock::now();
  const search::SearchResult mb = search::search(b.model, b.cluster, main_job, bridge);
  const double bridge_s = seconds_since(t4);
  std::printf("\nsearch --megatron --megatron-bridge --deepspeed --torchtitan against plain search (main job, %d threads):"
              " plain %.3f s (%lld simulated), DeepSpeed's own search %.3f s (%lld simulated), Megatron-Bridge's %.3f s"
              " (%lld simulated); total / plain = %.2f\n",
              b.hw_threads, plain_s, static_cast<long long>(main_result.refined), deepspeed_s, static_cast<long long>(ds.refined),
              bridge_s, static_cast<long long>(mb.refined), (plain_s + deepspeed_s + bridge_s) / plain_s);
}

int main(int argc, char** argv) {
  const std::string root = argc > 1 ? argv[1] : STARFISH_SOURCE_DIR;
  Bench b;
  b.model = load_model(root + "/configs/models/gpt3-175b.yaml");
  b.cluster = load_cluster(root + "/hwprofiles/dgx-a100-80gb.yaml");
  b.cluster.nodes = 128;
  b.training.global_batch = 1536;  // Narayanan et al. 2021's batch for GPT-3 175B
  b.training.dtype = DType::bf16;
  b.hw_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const double sink = analytic_rates(b);
  full_search(b);
  cancel_latency(b);
  exports_overhead(b);
  return sink > 0 ? 0 : 1;
}

#include "sim/search/search.h"

#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>
#include <tuple>

#include "sim/search/analytic.h"
#include "sim/spec/limits.h"
#include "sim/spec/units.h"

namespace starfish::search {
namespace {

using Clock = std::chrono::steady_clock;

// Rejection summaries are keyed by the family's fields (no strings on the hot path).
using FamilyKey = std::tuple<int, int, int, int, int, int, bool, uint8_t>;
FamilyKey family_key(const Candidate& c, Constraint why) {
  return {c.tp, c.pp, c.zero_stage, static_cast<int>(c.params), static_cast<int>(c.grads),
          static_cast<int>(c.optimizer), c.chunk_elements > 0, static_cast<uint8_t>(why)};
}
struct Rejections {
  double needed = 0, capacity = 0;  // of the plan closest to fitting
  int64_t plans = 0;
  Candidate example;
  int64_t example_index = 0;
  void add(double need, double cap, const Candidate& c, int64_t index) {
    const double ratio = closeness(need, cap);
    const double best = closeness(needed, capacity);
    if (plans == 0 || ratio < best || (ratio == best && index < example_index)) {
      needed = need;
      capacity = cap;
      example = c;
      example_index = index;
    }
    ++plans;
  }
  void merge(const Rejections& o) {
    if (o.plans == 0) return;
    const int64_t n = plans;
    add(o.needed, o.capacity, o.example, o.example_index);
    plans = n + o.plans;
  }
};

// The family memory bound's verdict, memoised per family (the bound ignores micro-batch,
// schedule, recompute and SP).
using BoundKey = std::tuple<int, int, int, int, int, int, int, int64_t, int, int, int>;
struct BoundVerdict {
  bool reject = false;
  Constraint why = Constraint::gpu_memory;
  double needed = 0, capacity = 0;
};

bool better(const Row& a, const Row& b) {
  if (a.tokens_per_s != b.tokens_per_s) return a.tokens_per_s > b.tokens_per_s;
  return a.index < b.index;
}

struct Worker {
  Plan plan;             // scratch, reused for every candidate
  Estimate estimate;     // likewise
  Estimate block, trial;  // scratch of the block-recomputation variants (AnalyticPass::recompute_fewer)
  std::vector<Row> top;  // a heap of at most `keep` rows, worst at the front
  std::map<FamilyKey, Rejections> rejected;
  std::map<BoundKey, BoundVerdict> bounds;
  int64_t evaluated = 0, pruned = 0, fitting = 0, not_admitted = 0;
};

// The one parallel loop of the search: body(worker, begin, end) over [0, n) in blocks of `block`,
// each block claimed from a shared counter so fast and slow workers balance, on a Boost.Asio
// thread pool of `threads` threads (worker in [0, threads)); a worker stops claiming once
// `cancelled()`. The calling thread calls tick() every interval_s until all have ended, so the
// progress reports come from the caller's thread.
void parallel_for(int threads, int64_t n, int64_t block, const std::function<void(int, int64_t, int64_t)>& body,
                  const std::function<bool()>& cancelled, const std::function<void()>& tick, double interval_s) {
  std::atomic<int64_t> next{0};
  std::mutex mu;
  std::condition_variable cv;
  int finished = 0;
  boost::asio::thread_pool pool(static_cast<size_t>(threads));
  for (int t = 0; t < threads; ++t)
    boost::asio::post(pool, [&, t] {
      while (!cancelled()) {
        const int64_t begin = next.fetch_add(block);
        if (begin >= n) break;
        body(t, begin, std::min(n, begin + block));
      }
      std::lock_guard<std::mutex> lock(mu);
      ++finished;
      cv.notify_all();
    });
  std::unique_lock<std::mutex> lock(mu);
  const auto interval = std::chrono::duration<double>(std::max(1e-4, interval_s));
  while (!cv.wait_for(lock, interval, [&] { return finished == threads; })) {
    lock.unlock();
    tick();
    lock.lock();
  }
  lock.unlock();
  pool.join();
}

// The second tier, in waves: the best K analytic rows first (K = refine_top, else top_k); each
// row the simulator rejects is replaced by the next analytic row, so K refined rows survive
// whenever that many of the kept rows fit. Afterwards: the refined rows that fit (by refined
// throughput), then any row left unrefined (a cancelled search) in analytic order. Rejected
// rows go to simulator_rejected. Cancelling stops within one engine poll (des::Cancelled from
// the refiner leaves that row unrefined).
void refine_best(SearchResult& result, std::vector<Row>& rows, const SearchOptions& opt, int threads,
                 int64_t analytic_done) {
  const int want = std::min<int>(static_cast<int>(rows.size()), opt.refine_top > 0 ? opt.refine_top : opt.top_k);
  auto cancelled = [&] { return opt.cancel && opt.cancel->load(std::memory_order_relaxed); };
  const double price = result.cluster.price_per_gpu_hour, gpus = result.cluster.total_gpus();
  std::atomic<int64_t> refined_done{0};
  int64_t refine_total = want;
  auto report = [&] {
    if (!opt.progress) return;
    Progress p;
    p.done = analytic_done;
    p.total = result.enumerated;
    p.fitting = result.fitting;
    p.best_tokens_per_s = rows.front().analytic.tokens_per_s;
    p.refined = refined_done.load();
    p.refine_total = refine_total;
    p.phase = "refine";
    opt.progress(p);
  };
  size_t next = 0;
  int fit = 0;
  while (fit < want && next < rows.size() && !cancelled()) {
    const size_t wave_begin = next, wave_end = std::min(rows.size(), next + static_cast<size_t>(want - fit));
    refine_total = static_cast<int64_t>(wave_end);
    std::vector<std::string> errors(wave_end - wave_begin);
    auto refine = [&](int, int64_t k, int64_t) {
      const size_t i = wave_begin + static_cast<size_t>(k);
      try {
        rows[i].refined = opt.refiner(result.job(rows[i]));
      } catch (const std::exception& ex) {
        if (!cancelled()) errors[i - wave_begin] = ex.what();  // else: stopped part-way, unrefined
      }
      refined_done.fetch_add(1);
    };
    const int64_t wave = static_cast<int64_t>(wave_end - wave_begin);
    parallel_for(std::min<int>(threads, static_cast<int>(wave)), wave, 1, refine, cancelled, report, opt.progress_interval_s);
    for (size_t i = wave_begin; i < wave_end; ++i) {
      if (!errors[i - wave_begin].empty())
        throw std::runtime_error("search: the refiner failed on " + rows[i].label() + ": " + errors[i - wave_begin]);
      if (!rows[i].refined) continue;
      ++result.refined;
      Evaluation& v = *rows[i].refined;
      if (v.fits && opt.max_iteration_s > 0 && v.iteration_s > opt.max_iteration_s) {
        v.fits = false;
        v.constraint = Constraint::time;
        v.why_not = "simulated iteration " + units::human_seconds(v.iteration_s) + " over the limit " +
                    units::human_seconds(opt.max_iteration_s);
      }
      if (v.fits) ++fit;
    }
    next = wave_end;
  }
  report();
  std::vector<Row> kept, unrefined;
  for (size_t i = 0; i < rows.size(); ++i) {
    Row& r = rows[i];
    if (!r.refined) {
      if (i < next) unrefined.push_back(std::move(r));  // cancelled before or during its simulation
      continue;
    }
    if (!r.refined->fits) {
      if (result.simulator_rejected.empty()) result.simulator_binding = r.refined->constraint;
      result.simulator_rejected.emplace_back(r.label(), r.refined->why_not);
      continue;
    }
    r.tokens_per_s = r.refined->tokens_per_s;
    if (price > 0) r.cost_per_million_tokens = price * gpus / 3600.0 / r.tokens_per_s * 1e6;
    kept.push_back(std::move(r));
  }
  std::stable_sort(kept.begin(), kept.end(), better);
  // Rows never reached (the refill reserve, or a cancelled search) follow in analytic order.
  for (size_t i = next; i < rows.size(); ++i) unrefined.push_back(std::move(rows[i]));
  for (Row& r : unrefined) kept.push_back(std::move(r));
  rows = std::move(kept);
  result.cancelled = cancelled();
}

// The first tier: every candidate through the family memory bound and the analytic model, on
// `result.threads` workers, each keeping its own best rows and rejection summaries; run()
// merges them (order-independent: rows by score then index, rejections by key) into `result`
// and returns the rows kept: the top_k, and with a refiner its reserve.
class AnalyticPass {
 public:
  AnalyticPass(SearchResult& result, const std::vector<Candidate>& candidates, const SearchOptions& opt)
      : result_(result), candidates_(candidates), opt_(opt), evaluator_(result.model, result.cluster, result.training),
        capacity_(usable_capacity(result.cluster)), workers_(result.threads) {
    evaluator_.prepare(candidates);
    // With a refiner, `refine_reserve` more rows stand by for the plans the refiner refuses.
    keep_ = std::max({1, opt.top_k,
                      opt.refiner ? (opt.refine_top > 0 ? opt.refine_top : opt.top_k) + opt.refine_reserve : 0});
  }

  std::vector<Row> run() {
    constexpr int64_t kBlock = 256;
    parallel_for(
        result_.threads, result_.enumerated, kBlock, [&](int t, int64_t begin, int64_t end) { evaluate_block(workers_[t], begin, end); },
        [&] { return cancelled(); }, [&] { report(); }, opt_.progress_interval_s);
    result_.cancelled = cancelled();
    report();
    return merge();
  }
  int64_t done() const { return done_.load(); }

 private:
  bool cancelled() const { return opt_.cancel && opt_.cancel->load(std::memory_order_relaxed); }

  void report() const {
    if (!opt_.progress) return;
    Progress p;
    p.done = done_.load();
    p.total = result_.enumerated;
    p.fitting = fitting_.load();
    p.best_tokens_per_s = best_tokens_per_s_.load();
    p.phase = "analytic";
    opt_.progress(p);
  }

  void evaluate_block(Worker& w, int64_t begin, int64_t end) {
    const int64_t fitting_before = w.fitting;
    for (int64_t i = begin; i < end; ++i) {
      const Candidate& c = candidates_[i];
      // The candidate carries its framework: the space's (an export's own search names it), or
      // the one that runs its chunks and offload; fp8 only under Megatron-core (plan_space.cpp).
      c.fill(w.plan);
      if (opt_.admit && !opt_.admit(w.plan)) {
        ++w.not_admitted;
        continue;
      }
      if (opt_.prune && pruned_by_bound(w, c, i)) continue;
      ++w.evaluated;
      evaluator_.evaluate(w.plan, w.estimate, /*memory_only_if_rejected=*/true, /*explain=*/false);
      const Estimate& e = w.estimate;
      if (!e.fits) {
        w.rejected[family_key(c, e.memory.constraint())].add(e.memory.needed_bytes, e.memory.capacity_bytes, c, i);
      } else if (opt_.max_iteration_s > 0 && e.time.iteration_s > opt_.max_iteration_s) {
        w.rejected[family_key(c, Constraint::time)].add(e.time.iteration_s, opt_.max_iteration_s, c, i);
      } else {
        ++w.fitting;
        if (!recompute_fewer(w, c, i)) offer_row(w, c, i);
      }
    }
    done_.fetch_add(end - begin, std::memory_order_relaxed);
    fitting_.fetch_add(w.fitting - fitting_before, std::memory_order_relaxed);
  }

  // A fitting plan that recomputes every layer, where Megatron's block method could recompute
  // fewer: the fewest layers per virtual stage that still fit (fewest_fitting_recompute_layers,
  // the rule `estimate` advises by), offered instead when that plan is faster; true when it was.
  // Skipped when even recomputing nothing could not enter the kept rows: recomputation adds one
  // forward to a forward and backward (at most a third of the compute), so no block plan is
  // more than 1.5x faster than the full one.
  bool recompute_fewer(Worker& w, const Candidate& c, int64_t i) {
    if (c.recompute != Recompute::full || c.chunk_elements > 0) return false;
    const double fastest = 1.5 * w.estimate.tokens_per_s;
    if (static_cast<int>(w.top.size()) >= keep_ && fastest < w.top.front().tokens_per_s) return false;
    // The bisection's fewest fitting count so far; w.block holds its estimate.
    int fewest = 0;
    auto fits = [&](int n) {
      w.plan.recompute_layers = n;
      evaluator_.evaluate(w.plan, w.trial, /*memory_only_if_rejected=*/true, /*explain=*/false);
      const bool ok = w.trial.fits && !(opt_.max_iteration_s > 0 && w.trial.time.iteration_s > opt_.max_iteration_s);
      if (ok && (fewest == 0 || n < fewest)) {
        fewest = n;
        std::swap(w.block, w.trial);
      }
      return ok;
    };
    w.plan.recompute_layers = 0;
    const int layers = fewest_fitting_recompute_layers(result_.model, w.plan, fits);
    const bool faster = layers > 0 && w.block.tokens_per_s > w.estimate.tokens_per_s;
    if (faster) {
      Candidate block = c;
      block.recompute_layers = layers;
      w.plan.recompute_layers = layers;
      std::swap(w.estimate, w.block);
      offer_row(w, block, i);
      std::swap(w.estimate, w.block);
    }
    w.plan.recompute_layers = 0;
    return faster;
  }


  // The family memory bound's verdict, memoised per family; true when it rejects the plan.
  bool pruned_by_bound(Worker& w, const Candidate& c, int64_t i) {
    const BoundKey key{c.tp, c.pp, c.virtual_stages, c.zero_stage, static_cast<int>(c.params),
                       static_cast<int>(c.grads), static_cast<int>(c.optimizer), c.chunk_elements, c.ep, c.etp, c.cp};
    auto it = w.bounds.find(key);
    if (it == w.bounds.end()) {
      const AnalyticEvaluator::StatesBound b = evaluator_.states_lower_bound(w.plan);
      const MemoryVerdict m = check_memory(TierBytes{b.gpu_bytes, b.cpu_bytes, b.nvme_bytes}, capacity_);
      it = w.bounds.emplace(key, BoundVerdict{!m.fits, m.constraint(), m.needed_bytes, m.capacity_bytes}).first;
    }
    if (!it->second.reject) return false;
    ++w.pruned;
    w.rejected[family_key(c, it->second.why)].add(it->second.needed, it->second.capacity, c, i);
    return true;
  }

  // A fitting plan into the worker's heap of the `keep` best (front: the worst kept).
  void offer_row(Worker& w, const Candidate& c, int64_t i) {
    const Estimate& e = w.estimate;
    const bool full = static_cast<int>(w.top.size()) >= keep_;
    if (full) {
      const Row& worst = w.top.front();
      if (e.tokens_per_s < worst.tokens_per_s || (e.tokens_per_s == worst.tokens_per_s && i > worst.index)) return;
    }
    Row r;
    r.index = i;
    r.candidate = c;
    r.plan = w.plan;
    r.analytic = e;
    r.tokens_per_s = e.tokens_per_s;
    const double price = result_.cluster.price_per_gpu_hour;
    if (price > 0) r.cost_per_million_tokens = price * result_.cluster.total_gpus() / 3600.0 / e.tokens_per_s * 1e6;
    if (full) {
      std::pop_heap(w.top.begin(), w.top.end(), better);
      w.top.back() = std::move(r);
    } else {
      w.top.push_back(std::move(r));
    }
    std::push_heap(w.top.begin(), w.top.end(), better);
    double seen = best_tokens_per_s_.load(std::memory_order_relaxed);
    while (e.tokens_per_s > seen && !best_tokens_per_s_.compare_exchange_weak(seen, e.tokens_per_s)) {
    }
  }

  std::vector<Row> merge() {
    std::vector<Row> rows;
    std::map<FamilyKey, Rejections> rejected;
    for (Worker& w : workers_) {
      result_.evaluated += w.evaluated;
      result_.pruned += w.pruned;
      result_.not_admitted += w.not_admitted;
      result_.fitting += w.fitting;
      for (Row& r : w.top) rows.push_back(std::move(r));
      for (const auto& [k, v] : w.rejected) rejected[k].merge(v);
    }
    std::sort(rows.begin(), rows.end(), better);
    if (static_cast<int>(rows.size()) > keep_) rows.resize(keep_);
    for (const auto& [k, v] : rejected) {
      RejectedFamily f;
      f.family = family_label(v.example);
      f.constraint = static_cast<Constraint>(std::get<7>(k));
      f.needed = v.needed;
      f.capacity = v.capacity;
      f.plans = v.plans;
      result_.rejected.push_back(std::move(f));
    }
    std::stable_sort(result_.rejected.begin(), result_.rejected.end(),
                     [](const RejectedFamily& a, const RejectedFamily& b) { return a.plans > b.plans; });
    return rows;
  }

  SearchResult& result_;
  const std::vector<Candidate>& candidates_;
  const SearchOptions& opt_;
  AnalyticEvaluator evaluator_;
  const TierBytes capacity_;
  std::vector<Worker> workers_;
  int keep_ = 1;
  std::atomic<int64_t> done_{0}, fitting_{0};
  std::atomic<double> best_tokens_per_s_{0};
};

}  // namespace

Evaluation to_evaluation(const Estimate& e) {
  Evaluation v;
  v.fits = e.fits;
  v.why_not = e.why_not;
  if (!e.fits) v.constraint = e.memory.constraint();
  v.iteration_s = e.time.iteration_s;
  v.tokens_per_s = e.tokens_per_s;
  v.mfu = e.mfu;
  v.tflops_per_gpu = e.tflops_per_gpu;
  v.bubble_fraction = e.bubble_fraction;
  v.gpu_peak_bytes = e.gpu.total();
  v.cpu_peak_bytes = e.cpu.total();
  v.nvme_peak_bytes = e.nvme.total();
  v.source = "analytic";
  return v;
}

std::string RejectedFamily::text() const {
  const std::string what =
      constraint == Constraint::time
          ? fmt::format("iteration {} over the limit {}", units::human_seconds(needed), units::human_seconds(capacity))
          : fmt::format("needs {} of {}", units::human_bytes(needed), units::human_bytes(capacity));
  return fmt::format("{}: {} ({}) x {} {}", family, constraint_name(constraint), what, plans, plans == 1 ? "plan" : "plans");
}

bool has_simulated_answer(const SearchResult& r) {
  return !r.rows.empty() && r.rows.front().refined && r.rows.front().refined->fits;
}

Job SearchResult::job(const Row& row) const { return make_job(model, cluster, training, row.plan); }

Constraint SearchResult::binding_constraint() const {
  if (!rows.empty()) return Constraint::none;
  // Plans passed the analytic tier, but the simulator refused them: its reason binds.
  if (fitting > 0 && !simulator_rejected.empty()) return simulator_binding;
  // Plans that fit in memory but ran too long: time is what binds.
  for (const RejectedFamily& r : rejected)
    if (r.constraint == Constraint::time) return Constraint::time;
  const RejectedFamily* closest = closest_family(rejected);
  return closest ? closest->constraint : Constraint::none;
}

const RejectedFamily* closest_family(const std::vector<RejectedFamily>& rejected, Constraint constraint) {
  bool any = false;
  for (const RejectedFamily& r : rejected) any |= r.constraint == constraint;
  const RejectedFamily* closest = nullptr;
  for (const RejectedFamily& r : rejected) {
    if (any && r.constraint != constraint) continue;
    if (!closest || closeness(r.needed, r.capacity) < closeness(closest->needed, closest->capacity)) closest = &r;
  }
  return closest;
}

Training default_search_training(const Model& model, const Cluster& cluster) {
  Training t;
  const GpuSpec& gpu = cluster.node.gpu;
  t.dtype = gpu.peak_flops.count(DType::bf16) ? DType::bf16 : gpu.peak_flops.count(DType::fp16) ? DType::fp16 : DType::fp32;
  const int64_t gpus = cluster.total_gpus();
  const int64_t sequences = ((int64_t{1} << 22) + model.seq_len - 1) / std::max(1, model.seq_len);
  t.global_batch = std::max<int64_t>(1, (sequences + gpus - 1) / gpus) * gpus;
  return t;
}

SearchResult search(const Model& model, const Cluster& cluster, const Training& training, const SearchOptions& opt) {
  const auto start = Clock::now();
  SearchResult result;
  result.model = model;
  result.cluster = cluster;
  result.training = training;
  const std::vector<Candidate> candidates =
      enumerate_plans(model, cluster, training, opt.space, &result.chunked_accumulation_left_out);
  result.enumerated = static_cast<int64_t>(candidates.size());
  // Bounded before it starts: the analytic tier estimates every plan layer by layer.
  if (!limits::checked_mul(result.enumerated, model.layers, limits::kMaxSearchPlanLayers))
    throw SpecError(model.provenance.where("layers").to_string() + ": field 'layers': " +
                    std::to_string(result.enumerated) + " plans x " + std::to_string(model.layers) +
                    " layers is more than a search evaluates (" + std::to_string(limits::kMaxSearchPlanLayers) +
                    " plan-layers, Starfish's limit): search a model with fewer layers, or narrow the space (--max-tp, "
                    "--batch, or a fixed plan with `estimate`)");
  result.threads = std::max(1, opt.threads > 0 ? opt.threads : static_cast<int>(std::thread::hardware_concurrency()));

  AnalyticPass pass(result, candidates, opt);
  std::vector<Row> rows = pass.run();
  result.analytic_s = std::chrono::duration<double>(Clock::now() - start).count();

  // Second tier: refine the best with the simulator, several at a time.
  if (opt.refiner && !result.cancelled && !rows.empty()) refine_best(result, rows, opt, result.threads, pass.done());
  if (static_cast<int>(rows.size()) > opt.top_k) rows.resize(std::max(0, opt.top_k));
  result.rows = std::move(rows);
  result.elapsed_s = std::chrono::duration<double>(Clock::now() - start).count();
  if (opt.progress) {
    Progress p;
    p.done = pass.done();
    p.total = result.enumerated;
    p.fitting = result.fitting;
    p.best_tokens_per_s = result.rows.empty() ? 0 : result.rows.front().tokens_per_s;
    p.refined = p.refine_total = result.refined;
    p.phase = "done";
    opt.progress(p);
  }
  return result;
}

}  // namespace starfish::search

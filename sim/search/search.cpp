#include "sim/search/search.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
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

enum class Constraint : uint8_t { gpu, cpu, nvme, time };
const char* constraint_name(Constraint c) {
  switch (c) {
    case Constraint::gpu: return "GPU memory";
    case Constraint::cpu: return "CPU memory";
    case Constraint::nvme: return "NVMe";
    case Constraint::time: return "time";
  }
  return "?";
}

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
    const double ratio = cap > 0 ? need / cap : 1e300;
    const double best = capacity > 0 ? needed / capacity : 1e300;
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
using BoundKey = std::tuple<int, int, int, int, int, int, int, int64_t>;
struct BoundVerdict {
  bool reject = false;
  Constraint why = Constraint::gpu;
  double needed = 0, capacity = 0;
};

bool better(const Row& a, const Row& b) {
  if (a.tokens_per_s != b.tokens_per_s) return a.tokens_per_s > b.tokens_per_s;
  return a.index < b.index;
}

struct Worker {
  std::vector<Row> top;  // a heap of at most `keep` rows, worst at the front
  std::map<FamilyKey, Rejections> rejected;
  std::map<BoundKey, BoundVerdict> bounds;
  int64_t evaluated = 0, pruned = 0, fitting = 0;
};

}  // namespace

Evaluation to_evaluation(const Estimate& e) {
  Evaluation v;
  v.fits = e.fits;
  v.why_not = e.why_not;
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
  char buf[96];
  if (constraint == "time")
    std::snprintf(buf, sizeof buf, "iteration %s over the limit %s", units::human_seconds(needed).c_str(),
                  units::human_seconds(capacity).c_str());
  else
    std::snprintf(buf, sizeof buf, "needs %s of %s", units::human_bytes(needed).c_str(),
                  units::human_bytes(capacity).c_str());
  return family + ": " + constraint + " (" + buf + ") x " + std::to_string(plans) + (plans == 1 ? " plan" : " plans");
}

Job SearchResult::job(const Row& row) const { return make_job(model, cluster, training, row.plan); }

std::string SearchResult::binding_constraint() const {
  if (!rows.empty()) return "";
  // Plans that fit in memory but ran too long: time is what binds.
  for (const RejectedFamily& r : rejected)
    if (r.constraint == "time") return "time";
  const RejectedFamily* closest = nullptr;
  for (const RejectedFamily& r : rejected) {
    const double ratio = r.capacity > 0 ? r.needed / r.capacity : 1e300;
    if (!closest || ratio < closest->needed / std::max(1e-300, closest->capacity)) closest = &r;
  }
  return closest ? closest->constraint : "";
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
  const std::vector<Candidate> candidates = enumerate_plans(model, cluster, training, opt.space);
  result.enumerated = static_cast<int64_t>(candidates.size());
  // Bounded before it starts: the analytic tier estimates every plan layer by layer.
  if (!limits::checked_mul(result.enumerated, model.layers, limits::kMaxSearchPlanLayers))
    throw SpecError(model.provenance.where("layers").to_string() + ": field 'layers': " +
                    std::to_string(result.enumerated) + " plans x " + std::to_string(model.layers) +
                    " layers is more than a search evaluates (" + std::to_string(limits::kMaxSearchPlanLayers) +
                    " plan-layers, Starfish's limit): search a model with fewer layers, or narrow the space (--max-tp, "
                    "--batch, or a fixed plan with `estimate`)");

  AnalyticEvaluator evaluator(model, cluster, training);
  evaluator.prepare(candidates);
  const int keep = std::max({1, opt.top_k, opt.refiner ? (opt.refine_top > 0 ? opt.refine_top : opt.top_k) : 0});
  const int threads = std::max(1, opt.threads > 0 ? opt.threads : static_cast<int>(std::thread::hardware_concurrency()));
  result.threads = threads;
  const double price = cluster.price_per_gpu_hour;
  const double gpus = cluster.total_gpus();

  constexpr int64_t kBlock = 256;
  std::atomic<int64_t> next{0}, done{0}, fitting{0};
  std::atomic<double> best_tps{0};
  std::vector<Worker> workers(threads);
  auto cancelled = [&] { return opt.cancel && opt.cancel->load(std::memory_order_relaxed); };

  auto work = [&](Worker& w) {
    Plan plan;
    Estimate e;
    const double gpu_cap = static_cast<double>(cluster.node.gpu.memory_bytes - cluster.node.gpu.reserved_bytes);
    const double cpu_cap = static_cast<double>(cluster.node.host.memory_bytes - cluster.node.host.reserved_bytes);
    const double nvme_cap = cluster.node.nvme ? static_cast<double>(cluster.node.nvme->capacity_bytes) : 0;
    for (;;) {
      if (cancelled()) return;
      const int64_t begin = next.fetch_add(kBlock);
      if (begin >= result.enumerated) return;
      const int64_t end = std::min(result.enumerated, begin + kBlock);
      int64_t block_fitting = 0;
      for (int64_t i = begin; i < end; ++i) {
        const Candidate& c = candidates[i];
        c.fill(plan);
        if (opt.prune) {
          const BoundKey key{c.tp, c.pp, c.virtual_stages, c.zero_stage, static_cast<int>(c.params),
                             static_cast<int>(c.grads), static_cast<int>(c.optimizer), c.chunk_elements};
          auto it = w.bounds.find(key);
          if (it == w.bounds.end()) {
            const AnalyticEvaluator::StatesBound b = evaluator.states_lower_bound(plan);
            BoundVerdict v;
            const bool spill = opt.chunk_spill && plan.chunked();
            if (b.gpu_bytes > gpu_cap) v = {true, Constraint::gpu, b.gpu_bytes, gpu_cap};
            else if (!spill && b.cpu_bytes > cpu_cap) v = {true, Constraint::cpu, b.cpu_bytes, cpu_cap};
            else if (!spill && b.nvme_bytes > nvme_cap) v = {true, Constraint::nvme, b.nvme_bytes, nvme_cap};
            it = w.bounds.emplace(key, v).first;
          }
          if (it->second.reject) {
            ++w.pruned;
            w.rejected[family_key(c, it->second.why)].add(it->second.needed, it->second.capacity, c, i);
            continue;
          }
        }
        ++w.evaluated;
        evaluator.evaluate(plan, e, /*memory_only_if_rejected=*/true, /*explain=*/false);
        double spilled = 0;
        if (!e.fits && opt.chunk_spill) {
          spilled = chunk_spill_bytes(e, plan, cluster.node.gpus);
          if (spilled >= 0) {  // fits thanks to the chunk runtime: now run the time model
            evaluator.evaluate(plan, e, false, false);
            e.fits = true;
          }
        }
        if (!e.fits) {
          if (!e.gpu.fits()) w.rejected[family_key(c, Constraint::gpu)].add(e.gpu.total(), e.gpu.capacity_bytes, c, i);
          else if (!e.cpu.fits()) w.rejected[family_key(c, Constraint::cpu)].add(e.cpu.total(), e.cpu.capacity_bytes, c, i);
          else w.rejected[family_key(c, Constraint::nvme)].add(e.nvme.total(), e.nvme.capacity_bytes, c, i);
          continue;
        }
        if (opt.max_iteration_s > 0 && e.time.iteration_s > opt.max_iteration_s) {
          w.rejected[family_key(c, Constraint::time)].add(e.time.iteration_s, opt.max_iteration_s, c, i);
          continue;
        }
        ++w.fitting;
        ++block_fitting;
        // w.top is a heap whose front is the worst row kept (comparator `better`).
        const bool full = static_cast<int>(w.top.size()) >= keep;
        if (full) {
          const Row& worst = w.top.front();
          if (e.tokens_per_s < worst.tokens_per_s || (e.tokens_per_s == worst.tokens_per_s && i > worst.index))
            continue;
        }
        Row r;
        r.index = i;
        r.candidate = c;
        r.plan = plan;
        r.analytic = e;
        r.spilled_bytes = spilled;
        r.tokens_per_s = e.tokens_per_s;
        if (price > 0) r.cost_per_million_tokens = price * gpus / 3600.0 / e.tokens_per_s * 1e6;
        if (full) {
          std::pop_heap(w.top.begin(), w.top.end(), better);
          w.top.back() = std::move(r);
        } else {
          w.top.push_back(std::move(r));
        }
        std::push_heap(w.top.begin(), w.top.end(), better);
        double seen = best_tps.load(std::memory_order_relaxed);
        while (e.tokens_per_s > seen && !best_tps.compare_exchange_weak(seen, e.tokens_per_s)) {
        }
      }
      done.fetch_add(end - begin, std::memory_order_relaxed);
      fitting.fetch_add(block_fitting, std::memory_order_relaxed);
    }
  };

  auto report = [&](const char* phase) {
    if (!opt.progress) return;
    Progress p;
    p.done = done.load();
    p.total = result.enumerated;
    p.fitting = fitting.load();
    p.best_tokens_per_s = best_tps.load();
    p.phase = phase;
    opt.progress(p);
  };

  {
    std::mutex mu;
    std::condition_variable cv;
    int finished = 0;
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        work(workers[t]);
        std::lock_guard<std::mutex> lock(mu);
        ++finished;
        cv.notify_all();
      });
    std::unique_lock<std::mutex> lock(mu);
    const auto interval = std::chrono::duration<double>(std::max(1e-4, opt.progress_interval_s));
    while (!cv.wait_for(lock, interval, [&] { return finished == threads; })) {
      lock.unlock();
      report("analytic");
      lock.lock();
    }
    lock.unlock();
    for (auto& th : pool) th.join();
  }
  result.cancelled = cancelled();
  report("analytic");
  result.analytic_s = std::chrono::duration<double>(Clock::now() - start).count();

  // ---- merge (order-independent: rows by score then index, rejections by key)
  std::vector<Row> rows;
  std::map<FamilyKey, Rejections> rejected;
  for (Worker& w : workers) {
    result.evaluated += w.evaluated;
    result.pruned += w.pruned;
    result.fitting += w.fitting;
    for (Row& r : w.top) rows.push_back(std::move(r));
    for (const auto& [k, v] : w.rejected) rejected[k].merge(v);
  }
  std::sort(rows.begin(), rows.end(), better);
  if (static_cast<int>(rows.size()) > keep) rows.resize(keep);
  for (const auto& [k, v] : rejected) {
    RejectedFamily f;
    f.family = family_label(v.example);
    f.constraint = constraint_name(static_cast<Constraint>(std::get<7>(k)));
    f.needed = v.needed;
    f.capacity = v.capacity;
    f.plans = v.plans;
    result.rejected.push_back(std::move(f));
  }
  std::stable_sort(result.rejected.begin(), result.rejected.end(),
                   [](const RejectedFamily& a, const RejectedFamily& b) { return a.plans > b.plans; });

  // ---- second tier: refine the best K with the simulator, several at a time
  if (opt.refiner && !result.cancelled && !rows.empty()) {
    const int k = std::min<int>(static_cast<int>(rows.size()), opt.refine_top > 0 ? opt.refine_top : opt.top_k);
    std::atomic<int> next_row{0};
    std::atomic<int64_t> refined_done{0};
    std::vector<std::string> errors(k);
    auto refine = [&] {
      for (;;) {
        if (cancelled()) return;
        const int i = next_row.fetch_add(1);
        if (i >= k) return;
        try {
          rows[i].refined = opt.refiner(result.job(rows[i]));
        } catch (const std::exception& ex) {
          errors[i] = ex.what();
        }
        refined_done.fetch_add(1);
      }
    };
    std::vector<std::thread> pool;
    for (int t = 0; t < std::min(threads, k); ++t) pool.emplace_back(refine);
    for (auto& th : pool) th.join();
    for (int i = 0; i < k; ++i) {
      if (!errors[i].empty()) throw std::runtime_error("search: the refiner failed on " + rows[i].label() + ": " + errors[i]);
      if (!rows[i].refined) continue;  // cancelled before this row
      ++result.refined;
      rows[i].tokens_per_s = rows[i].refined->fits ? rows[i].refined->tokens_per_s : 0;
      if (price > 0 && rows[i].tokens_per_s > 0)
        rows[i].cost_per_million_tokens = price * gpus / 3600.0 / rows[i].tokens_per_s * 1e6;
    }
    // Refined rows first (by refined throughput; those the simulator says do not fit last among
    // them), then the rest in analytic order.
    std::stable_sort(rows.begin(), rows.begin() + k, better);
    // A plan the simulator says does not fit is no answer: report it, drop it.
    std::vector<Row> kept;
    kept.reserve(rows.size());
    for (int i = 0; i < static_cast<int>(rows.size()); ++i) {
      if (i < k && rows[i].refined && !rows[i].refined->fits) result.simulator_rejected.emplace_back(rows[i].label(), rows[i].refined->why_not);
      else kept.push_back(std::move(rows[i]));
    }
    rows = std::move(kept);
    result.cancelled = cancelled();
  }
  if (static_cast<int>(rows.size()) > opt.top_k) rows.resize(std::max(0, opt.top_k));
  result.rows = std::move(rows);
  result.elapsed_s = std::chrono::duration<double>(Clock::now() - start).count();
  if (opt.progress) {
    Progress p;
    p.done = done.load();
    p.total = result.enumerated;
    p.fitting = result.fitting;
    p.best_tokens_per_s = result.rows.empty() ? 0 : result.rows.front().tokens_per_s;
    p.phase = "done";
    opt.progress(p);
  }
  return result;
}

}  // namespace starfish::search

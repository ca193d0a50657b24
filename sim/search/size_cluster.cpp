#include "sim/search/size_cluster.h"

#include "sim/cost/energy.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "sim/cost/flops.h"
#include "sim/search/des_refiner.h"
#include "sim/spec/error.h"
#include "sim/spec/units.h"

namespace starfish::search {

int64_t parse_token_count(std::string_view text) {
  const std::string s(text);
  auto bad = [&] {
    return SpecError("'" + s + "' is not a token count (examples: 300B, 1T, 300G, 300e9)");
  };
  if (s.empty()) throw bad();
  const char last = s.back();
  double scale = 0;
  switch (last) {
    case 'K': scale = 1e3; break;
    case 'M': scale = 1e6; break;
    case 'B': scale = 1e9; break;  // "billion" tokens, as papers write them
    case 'T': scale = 1e12; break;
    default: break;
  }
  double value = 0;
  try {
    if (scale > 0) value = units::parse_number(s.substr(0, s.size() - 1)) * scale;
    else {
      try {
        return units::parse_count(s);
      } catch (const std::exception&) {
        value = units::parse_number(s);
      }
    }
  } catch (const std::exception&) {
    throw bad();
  }
  if (!(value >= 1) || value > 9e18) throw bad();
  return static_cast<int64_t>(std::llround(value));
}

namespace {

// Some TP x PP layout is a valid plan on the cluster for the batch (plan_invalid_reason: make_job's
// rules, micro-batch 1 and DP derived), the enumerator's first filter.
bool has_layout(const Model& m, const Cluster& c, const Training& t, int max_tp) {
  Plan p;
  for (p.tp = 1; p.tp <= std::min(max_tp, c.node.gpus); ++p.tp)
    for (p.pp = 1; p.pp <= m.layers; ++p.pp)
      if (!plan_invalid_reason(m, c, t, p)) return true;
  return false;
}

SizeClusterOption option_of(const SearchResult& r, int nodes, int64_t tokens) {
  SizeClusterOption o;
  o.nodes = nodes;
  o.gpus = r.cluster.total_gpus();
  o.tokens_per_s = r.rows.front().tokens_per_s;
  o.days_needed = static_cast<double>(tokens) / o.tokens_per_s / 86400.0;
  o.gpu_hours = static_cast<double>(o.gpus) * o.days_needed * 24.0;
  o.plan_label = r.rows.front().label();
  return o;
}

// The candidate counts nearest 1.5, 2, 3 and 4 times `fewest` (the first at or above each).
std::vector<int> alternative_counts(const std::vector<int>& counts, int fewest) {
  std::vector<int> out;
  for (double factor : {1.5, 2.0, 3.0, 4.0}) {
    const auto it = std::lower_bound(counts.begin(), counts.end(), static_cast<int>(std::ceil(factor * fewest)));
    if (it != counts.end() && *it > fewest && (out.empty() || *it > out.back())) out.push_back(*it);
  }
  return out;
}

std::vector<size_t> ranked(const std::vector<SizeClusterOption>& options, double SizeClusterOption::*key) {
  std::vector<size_t> order(options.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return options[a].*key < options[b].*key; });
  return order;
}

}  // namespace

std::vector<size_t> SizeClusterResult::by_time() const { return ranked(options, &SizeClusterOption::days_needed); }
std::vector<size_t> SizeClusterResult::by_cost() const { return ranked(options, &SizeClusterOption::gpu_hours); }

SizeClusterResult size_cluster(const Model& model, const Cluster& hw, const SizeClusterOptions& options) {
  SizeClusterOptions o = options;
  if (!o.search.refiner) o.search.refiner = des_refiner();  // every answer is simulated
  if (o.tokens < 1) throw SpecError("size-cluster: the token count must be positive");
  if (!(o.days > 0)) throw SpecError("size-cluster: the number of days must be positive");
  SizeClusterResult out;
  Training training = default_search_training(model, hw);
  // A fixed batch across node counts: about 4Mi tokens unless given.
  training.global_batch = o.global_batch > 0 ? o.global_batch
                                             : std::max<int64_t>(1, ((int64_t{1} << 22) + model.seq_len - 1) / model.seq_len);
  const double seconds = o.days * 86400.0;
  const double needed_tokens_per_s = static_cast<double>(o.tokens) / seconds;
  // Lower bound: model FLOPs per token at the GPUs' dense peak.
  const double flop_per_token = iteration_flops(model, training.global_batch, Recompute::none).model /
                                (static_cast<double>(training.global_batch) * model.seq_len);
  // (A Megatron-core space may also run its GEMMs in fp8, plan_space.h: then the fp8 peak bounds.)
  const bool fp8 = o.search.space.framework == Framework::megatron_core && hw.node.gpu.peak_flops.count(DType::fp8) &&
                   std::any_of(o.search.space.fp8.begin(), o.search.space.fp8.end(), [](Fp8 f) { return f != Fp8::none; });
  const double peak_node = hw.node.gpu.peak(fp8 ? DType::fp8 : training.dtype) * hw.node.gpus;
  const int min_nodes = std::max(1, static_cast<int>(std::floor(needed_tokens_per_s * flop_per_token / peak_node)));
  const int max_tp = o.search.space.max_tp > 0 ? o.search.space.max_tp : hw.node.gpus;
  const int max_nodes = hw.node.nic ? o.max_nodes : 1;
  std::vector<int> counts;
  Cluster sized = hw;
  for (int n = min_nodes; n <= max_nodes; ++n) {
    sized.nodes = n;
    if (has_layout(model, sized, training, max_tp)) counts.push_back(n);
  }
  if (counts.empty()) {
    out.why_not = "no node count in [" + std::to_string(min_nodes) + ", " + std::to_string(max_nodes) +
                  "] admits a TP x PP x DP layout for a global batch of " + std::to_string(training.global_batch);
    return out;
  }
  struct Try {
    bool ok = false;
    SearchResult r;
    Cluster c;
  };
  auto cancelled = [&] { return o.search.cancel && o.search.cancel->load(); };
  auto attempt = [&](int nodes) {
    Try t;
    t.c = hw;
    t.c.nodes = nodes;
    ++out.probes;
    if (o.on_probe) o.on_probe(nodes, out.probes);
    try {
      t.r = search(model, t.c, training, o.search);
      // The simulator refused every plan the reserve held: that says nothing about the plans
      // behind them, and a count judged too slow for it would break the bisection's premise
      // (more nodes never slower). Look deeper before judging the count.
      if (!has_simulated_answer(t.r) && !t.r.simulator_rejected.empty() && !cancelled()) {
        SearchOptions deeper = o.search;
        deeper.refine_reserve = 8 * std::max(1, o.search.refine_reserve);
        t.r = search(model, t.c, training, deeper);
      }
    } catch (const SpecError&) {
      return t;
    }
    t.ok = has_simulated_answer(t.r) && t.r.rows.front().tokens_per_s >= needed_tokens_per_s;
    return t;
  };
  // Bisect over the candidate list: counts[hi] is known good once found.
  size_t lo = 0, hi = counts.size() - 1;
  Try best = attempt(counts[hi]);
  if (!best.ok) {
    const std::string most = std::to_string(counts[hi]) + " nodes (the most tried)";
    if (has_simulated_answer(best.r)) {
      out.why_not = most + " reach " + units::human_count(best.r.rows.front().tokens_per_s) + " tokens/s; " +
                    units::human_count(needed_tokens_per_s) + " tokens/s are needed";
    } else {
      out.why_not = most + ": no plan fits";
      if (!best.r.simulator_rejected.empty())
        out.why_not += " (the simulator refused " + best.r.simulator_rejected.front().first + ": " +
                       best.r.simulator_rejected.front().second + ")";
    }
    return out;
  }
  while (lo < hi && !cancelled()) {
    const size_t mid = lo + (hi - lo) / 2;
    Try t = attempt(counts[mid]);
    if (t.ok) {
      hi = mid;
      best = std::move(t);
    } else {
      lo = mid + 1;
    }
  }
  out.found = true;
  out.nodes = best.c.nodes;
  out.cluster = best.c;
  out.best = std::move(best.r);
  out.days_needed = static_cast<double>(o.tokens) / out.best.rows.front().tokens_per_s / 86400.0;
  out.cost = training_cost(hw.node, out.cluster.total_gpus(), out.days_needed, hw.price_per_gpu_hour, {}).dollars;
  out.options.push_back(option_of(out.best, out.nodes, o.tokens));
  if (o.alternatives)
    for (int n : alternative_counts(counts, out.nodes)) {
      if (cancelled()) break;
      const Try t = attempt(n);
      if (t.ok) out.options.push_back(option_of(t.r, n, o.tokens));
    }
  return out;
}

}  // namespace starfish::search

#include "sim/search/size_cluster.h"

#include "sim/cost/energy.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "sim/cost/flops.h"
#include "sim/search/bisect.h"
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

// A fixed batch across node counts: the one given, else about 4Mi tokens.
Training sizing_training(const Model& model, const Cluster& hw, const SizeClusterOptions& o) {
  Training training = default_search_training(model, hw);
  training.global_batch = o.global_batch > 0 ? o.global_batch
                                             : std::max<int64_t>(1, ((int64_t{1} << 22) + model.seq_len - 1) / model.seq_len);
  return training;
}

// The fewest nodes that could reach `needed_tokens_per_s` were every GPU at its dense peak on
// the model's FLOPs (at least 1).
int lower_bound_nodes(const Model& model, const Cluster& hw, const Training& training, const SearchSpace& space,
                      double needed_tokens_per_s) {
  const double flop_per_token = iteration_flops(model, training.global_batch, Recompute::none).model /
                                (static_cast<double>(training.global_batch) * model.seq_len);
  // (A Megatron-core space may also run its GEMMs in fp8, plan_space.h: then the fp8 peak bounds.)
  const bool fp8 = space.framework == Framework::megatron_core && hw.node.gpu.peak_flops.count(DType::fp8) &&
                   std::any_of(space.fp8.begin(), space.fp8.end(), [](Fp8 f) { return f != Fp8::none; });
  const double peak_node = hw.node.gpu.peak(fp8 ? DType::fp8 : training.dtype) * hw.node.gpus;
  return std::max(1, static_cast<int>(std::floor(needed_tokens_per_s * flop_per_token / peak_node)));
}

// The node counts in [min_nodes, max_nodes] with some valid TP x PP x DP layout, ascending.
std::vector<int> layout_counts(const Model& model, const Cluster& hw, const Training& training, int min_nodes,
                               int max_nodes, int max_tp) {
  std::vector<int> counts;
  Cluster sized = hw;
  for (int n = min_nodes; n <= max_nodes; ++n) {
    sized.nodes = n;
    if (has_layout(model, sized, training, max_tp)) counts.push_back(n);
  }
  return counts;
}

// One node count's plan search, and whether its simulated best meets the deadline.
struct Try {
  bool ok = false;
  SearchResult r;
  Cluster c;
};

// The searches at each node count the sizing tries, counted in `probes`.
class CountProber {
 public:
  CountProber(const Model& model, const Cluster& hw, const Training& training, const SizeClusterOptions& o,
              double needed_tokens_per_s, int& probes)
      : model_(model), hw_(hw), training_(training), o_(o), needed_tokens_per_s_(needed_tokens_per_s), probes_(probes) {}

  bool cancelled() const { return o_.search.cancel && o_.search.cancel->load(); }

  Try attempt(int nodes) const {
    Try t;
    t.c = hw_;
    t.c.nodes = nodes;
    ++probes_;
    if (o_.on_probe) o_.on_probe(nodes, probes_);
    try {
      t.r = search(model_, t.c, training_, o_.search);
      // The simulator refused every plan the reserve held: that says nothing about the plans
      // behind them, and a count judged too slow for it would break the bisection's premise
      // (more nodes never slower). Look deeper before judging the count.
      if (!has_simulated_answer(t.r) && !t.r.simulator_rejected.empty() && !cancelled()) {
        SearchOptions deeper = o_.search;
        deeper.refine_reserve = 8 * std::max(1, o_.search.refine_reserve);
        t.r = search(model_, t.c, training_, deeper);
      }
    } catch (const SpecError&) {
      return t;
    }
    t.ok = has_simulated_answer(t.r) && t.r.rows.front().tokens_per_s >= needed_tokens_per_s_;
    return t;
  }

 private:
  const Model& model_;
  const Cluster& hw_;
  const Training& training_;
  const SizeClusterOptions& o_;
  const double needed_tokens_per_s_;
  int& probes_;
};

// Why even the most nodes tried miss the deadline: too slow, or no plan fits.
std::string most_nodes_why_not(const Try& most, double needed_tokens_per_s) {
  const std::string head = std::to_string(most.c.nodes) + " nodes (the most tried)";
  if (has_simulated_answer(most.r))
    return head + " reach " + units::human_count(most.r.rows.front().tokens_per_s) + " tokens/s; " +
           units::human_count(needed_tokens_per_s) + " tokens/s are needed";
  std::string why = head + ": no plan fits";
  if (!most.r.simulator_rejected.empty())
    why += " (the simulator refused " + most.r.simulator_rejected.front().first + ": " +
           most.r.simulator_rejected.front().second + ")";
  return why;
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
  const Training training = sizing_training(model, hw, o);
  const double needed_tokens_per_s = static_cast<double>(o.tokens) / (o.days * 86400.0);
  const int min_nodes = lower_bound_nodes(model, hw, training, o.search.space, needed_tokens_per_s);
  const int max_tp = o.search.space.max_tp > 0 ? o.search.space.max_tp : hw.node.gpus;
  const int max_nodes = hw.node.nic ? o.max_nodes : 1;
  const std::vector<int> counts = layout_counts(model, hw, training, min_nodes, max_nodes, max_tp);
  if (counts.empty()) {
    out.why_not = "no node count in [" + std::to_string(min_nodes) + ", " + std::to_string(max_nodes) +
                  "] admits a TP x PP x DP layout for a global batch of " + std::to_string(training.global_batch);
    return out;
  }
  const CountProber prober(model, hw, training, o, needed_tokens_per_s, out.probes);
  // The most nodes first: if they miss the deadline, so does every count below them.
  Try best = prober.attempt(counts.back());
  if (!best.ok) {
    out.why_not = most_nodes_why_not(best, needed_tokens_per_s);
    return out;
  }
  // The fewest that meet it: bisect between the last count (passes) and one before the first.
  const auto meets = [&](ptrdiff_t i) {
    Try t = prober.attempt(counts[static_cast<size_t>(i)]);
    const bool ok = t.ok;
    if (ok) best = std::move(t);
    return ok;
  };
  bisect<ptrdiff_t>(static_cast<ptrdiff_t>(counts.size()) - 1, -1, meets, [&] { return prober.cancelled(); });
  out.found = true;
  out.nodes = best.c.nodes;
  out.cluster = best.c;
  out.best = std::move(best.r);
  out.days_needed = static_cast<double>(o.tokens) / out.best.rows.front().tokens_per_s / 86400.0;
  out.cost = training_cost(hw.node, out.cluster.total_gpus(), out.days_needed, hw.price_per_gpu_hour, {}).dollars;
  out.options.push_back(option_of(out.best, out.nodes, o.tokens));
  if (o.alternatives)
    for (int n : alternative_counts(counts, out.nodes)) {
      if (prober.cancelled()) break;
      const Try t = prober.attempt(n);
      if (t.ok) out.options.push_back(option_of(t.r, n, o.tokens));
    }
  return out;
}

}  // namespace starfish::search

#include "sim/search/maxsize.h"

#include <algorithm>

#include "sim/cost/params.h"
#include "sim/search/bisect.h"
#include "sim/search/des_refiner.h"
#include "sim/search/model_family.h"
#include "sim/spec/error.h"

namespace starfish::search {
namespace {

struct Probe {
  bool fits = false;
  Model model;
  SearchResult result;
};

// TP's largest degree: the main series' heads step (heads divisible by every TP tried).
int heads_step(const Cluster& cluster, const MaxSizeOptions& o) {
  if (o.heads_step > 0) return o.heads_step;
  if (!o.search.space.tp.empty()) return *std::max_element(o.search.space.tp.begin(), o.search.space.tp.end());
  return o.search.space.max_tp > 0 ? o.search.space.max_tp : cluster.node.gpus;
}

// Why the next size fails: the simulator's refusal of the best plan the analytic tier accepted,
// else the summary line of the family that came closest to fitting (of those the binding
// constraint rejected, when any was).
std::string binding_detail(const SearchResult& fail, Constraint binding) {
  if (fail.fitting > 0 && !fail.simulator_rejected.empty()) {
    const auto& [label, why] = fail.simulator_rejected.front();
    return "the simulator refused " + label + ": " + why;
  }
  const RejectedFamily* closest = closest_family(fail.rejected, binding);
  return closest ? closest->text() : "";
}

}  // namespace

MaxSizeResult max_model_size(const Cluster& cluster, const MaxSizeOptions& options) {
  MaxSizeOptions o = options;
  if (!o.search.refiner) o.search.refiner = des_refiner();  // every answer is simulated
  MaxSizeResult out;
  out.budget = o.budget;
  const int step = heads_step(cluster, o);
  auto probe = [&](int heads, int layers) {
    Probe p;
    p.model = family_model(o.family, heads, layers, o.seq_len);
    Training t = default_search_training(p.model, cluster);
    t.global_batch = o.global_batch > 0 ? o.global_batch : cluster.total_gpus();
    ++out.probes;
    if (o.on_probe) o.on_probe(p.model, out.probes);
    SearchOptions so = o.search;
    const double limit_s = budget_max_iteration_s(o.budget, count_parameters(p.model).total,
                                                  static_cast<double>(t.global_batch) * p.model.seq_len);
    if (limit_s > 0) so.max_iteration_s = so.max_iteration_s > 0 ? std::min(so.max_iteration_s, limit_s) : limit_s;
    try {
      p.result = search(p.model, cluster, t, so);
    } catch (const SpecError&) {
      return p;  // no plan at all for this shape (e.g. the batch does not divide): does not fit
    }
    p.fits = has_simulated_answer(p.result);
    return p;
  };
  auto cancelled = [&] { return o.search.cancel && o.search.cancel->load(); };

  // 1. Main series: heads = step * k, layers = heads. Grow k geometrically, then bisect.
  int lo = 0, hi = 0;  // fits at lo (0 = nothing yet), not at hi
  Probe best, fail;
  // A bisection step's probe: the largest fitting one is kept in `best`, the smallest failing in `fail`.
  auto keep = [&](Probe p) {
    const bool fits = p.fits;
    (fits ? best : fail) = std::move(p);
    return fits;
  };
  for (int k = 1;; k *= 2) {
    if (step * k > o.max_heads) throw SpecError("maxsize: a model with over " + std::to_string(o.max_heads) +
                                                " heads still fits; raise max_heads");
    if (!keep(probe(step * k, step * k))) {
      hi = k;
      break;
    }
    lo = k;
    if (cancelled()) break;
  }
  // Cancelled while the sizes still grew: no size has failed, so there is no bracket to refine
  // (and `fail` holds no model): no answer, as for any search stopped before it has one.
  if (hi == 0) return out;
  lo = bisect(lo, hi, [&](int k) { return keep(probe(step * k, step * k)); }, cancelled);
  if (lo == 0) {
    out.next_model = fail.model;
    out.binding = fail.result.binding_constraint();
    return out;
  }
  // 2. At hidden = 128 * heads(lo), add layers up to where the next step's parameters begin.
  const int heads = step * lo;
  const int64_t next_params = count_parameters(fail.model).total;
  int l_lo = heads, l_hi = heads + 1;
  while (count_parameters(family_model(o.family, heads, l_hi, o.seq_len)).total < next_params) ++l_hi;
  // fits at l_lo; l_hi is at least as large as the failing model: not tested yet
  // (That it fits is not expected: the larger model failed.)
  if (!keep(probe(heads, l_hi))) bisect(l_lo, l_hi, [&](int layers) { return keep(probe(heads, layers)); }, cancelled);
  out.found = true;
  out.model = best.model;
  out.parameters = count_parameters(best.model).total;
  out.best = std::move(best.result);
  out.tokens = budget_tokens(o.budget, out.parameters);
  out.days_to_train = days_to_train(out.tokens, out.best.rows.front().refined->tokens_per_s);
  out.next_model = fail.model;
  out.binding = fail.result.binding_constraint();
  if (out.binding == Constraint::none) out.binding = Constraint::no_valid_plan;
  out.binding_detail = binding_detail(fail.result, out.binding);
  return out;
}

}  // namespace starfish::search

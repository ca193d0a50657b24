#include "gui/whatif_eval.h"

#include <algorithm>

#include "sim/search/des_refiner.h"
#include "sim/search/search.h"
#include "sim/spec/job.h"

namespace starfish::gui {

WhatIfSettings settings_of(const Cluster& c, const std::optional<Plan>& plan) {
  WhatIfSettings s;
  s.nodes = c.nodes;
  s.gpus_per_node = c.node.gpus;
  s.pcie_generation = c.node.pcie.generation;
  s.nvlink = c.node.nvlink.has_value();
  s.host_memory_bytes = c.node.host.memory_bytes;
  if (plan && plan->chunked()) s.chunk_elements = plan->chunk_elements;
  return s;
}

Cluster apply_settings(const Cluster& base, const WhatIfSettings& s) {
  Cluster c = base;
  c.nodes = s.nodes;
  c.node.gpus = s.gpus_per_node;
  c.node.pcie.generation = s.pcie_generation;
  c.node.pcie.gpus_per_root = std::min(c.node.pcie.gpus_per_root, s.gpus_per_node);
  if (s.nvlink && !c.node.nvlink) c.node.nvlink = NvlinkSpec{300e9, 2e-6, NvlinkTopology::switched};
  if (!s.nvlink) c.node.nvlink.reset();
  if (c.nodes > 1 && !c.node.nic) c.node.nic = NicSpec{1, 200e9 / 8, 5e-6};
  c.node.host.memory_bytes = s.host_memory_bytes;
  c.node.host.reserved_bytes = std::min(c.node.host.reserved_bytes, s.host_memory_bytes / 2);
  return c;
}

WhatIfResult evaluate_whatif(const Cluster& base, const Model& model, const Training& training,
                             const std::optional<Plan>& plan, const WhatIfSettings& s, const std::atomic<bool>* cancel) {
  WhatIfResult r;
  r.cluster = apply_settings(base, s);
  search::SearchSpace space;
  space.chunk_elements = {0, s.chunk_elements};

  // The chosen plan, re-derived for the GPU count (DP follows; TP and PP stay; a chunk plan's
  // micro-batch follows DP too, since the chunk runtime runs one per iteration).
  if (plan) {
    Plan p = *plan;
    p.dp = 0;
    Training t = training;
    if (p.chunked()) {
      p.chunk_elements = s.chunk_elements;
      const int dp = r.cluster.total_gpus() / std::max(1, p.tp * p.pp);
      if (dp > 0 && t.global_batch % dp == 0) p.micro_batch = static_cast<int>(t.global_batch / dp);
    }
    try {
      r.plan_estimate = estimate(make_job(model, r.cluster, t, p));
    } catch (const std::exception& e) {
      r.plan_error = e.what();
    }
  }

  search::SearchOptions opt;
  opt.space = space;
  opt.top_k = 1;
  opt.refiner = search::des_refiner();  // the best plan shown is one the simulator accepts
  opt.cancel = cancel;
  try {
    const Training t = search::default_search_training(model, r.cluster);
    const search::SearchResult best = search::search(model, r.cluster, t, opt);
    r.cancelled = best.cancelled;
    if (!best.rows.empty()) r.best = best.rows.front();
    else r.best_why_not = constraint_name(best.binding_constraint());
  } catch (const std::exception& e) {
    r.best_why_not = e.what();
  }
  if (cancel && cancel->load()) {
    r.cancelled = true;
    return r;
  }

  search::MaxSizeOptions mo;
  mo.family = model.family;
  mo.seq_len = model.seq_len;
  mo.heads_step = r.cluster.node.gpus;
  mo.search = opt;
  mo.budget = s.budget;
  r.max_size = search::max_model_size(r.cluster, mo);
  if (cancel && cancel->load()) r.cancelled = true;
  return r;
}

}  // namespace starfish::gui

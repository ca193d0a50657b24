#include "sim/schedule/iteration.h"

#include <algorithm>

#include "sim/schedule/chunked_iteration.h"
#include "sim/schedule/static_iteration.h"

namespace starfish::schedule {

void intern_categories(des::Engine& eng, BuiltIteration& out) {
  out.fwd = eng.category(category::forward);
  out.bwd = eng.category(category::backward);
  out.recompute = eng.category(category::recompute);
  out.tp = eng.category(category::tp);
  out.pp = eng.category(category::pp);
  out.dp = eng.category(category::dp);
  out.optimizer = eng.category(category::optimizer);
  out.offload = eng.category(category::offload);
  out.ep = eng.category(category::ep);
  out.cp = eng.category(category::cp);
}

double lead_group_pcie_scale(const Cluster& c, const std::vector<int>& ranks) {
  if (c.node.nvlink || ranks.size() < 2) return 1;
  std::vector<int> sorted = ranks;
  std::sort(sorted.begin(), sorted.end());
  if (c.over_nics(sorted.front(), sorted.back())) return 1;
  return c.pcie_uplink_sharers(static_cast<int>(sorted.size()), sorted[1] - sorted[0]);
}

double lead_send_pcie_scale(const Cluster& c, int from, int to, int senders) {
  if (c.node.nvlink || c.over_nics(from, to)) return 1;
  const int per_node = c.node.gpus, per_root = std::max(1, c.node.pcie.gpus_per_root);
  if ((from % per_node) / per_root == (to % per_node) / per_root) return 1;
  return c.pcie_senders_per_switch(senders);
}

IterationBuilder iteration_builder_for(const Plan& plan) {
  return plan.chunked() ? &build_chunked_iteration : &build_static_iteration;
}

BuiltIteration build_iteration(const Job& job, des::Engine& engine, const BuildOptions& options) {
  return iteration_builder_for(job.plan)(job, engine, options);
}

}  // namespace starfish::schedule

#include "sim/search/analytic.h"

#include <algorithm>
#include <cstdio>

#include "sim/cost/activations.h"
#include "sim/cost/capacity.h"
#include "sim/cost/collectives.h"
#include "sim/cost/moe.h"
#include "sim/cost/op_time.h"
#include "sim/spec/units.h"

namespace starfish::search {
namespace {

int recompute_index(Recompute r) { return r == Recompute::none ? 0 : r == Recompute::selective ? 1 : 2; }

}  // namespace

double headroom_fraction(const TierUse& u) {
  if (u.capacity_bytes <= 0) return u.total() > 0 ? -1.0 : 0.0;
  return (u.capacity_bytes - u.total()) / u.capacity_bytes;
}

AnalyticEvaluator::AnalyticEvaluator(const Model& model, const Cluster& cluster, const Training& training)
    : model_(model), cluster_(cluster), training_(training), params_(count_parameters(model)) {
  for (Recompute r : {Recompute::none, Recompute::selective, Recompute::full})
    flops_[recompute_index(r)] = iteration_flops(model_, training_.global_batch, r);
}

void AnalyticEvaluator::prepare(const std::vector<Candidate>& candidates) {
  std::vector<double> scratch;
  Plan plan;
  for (const Candidate& c : candidates) {
    const ShapeKey key{c.tp, c.pp, c.virtual_stages, c.first_stage_layers, c.last_stage_layers, c.ep, c.etp,
                       c.embedding_slot, c.loss_slot};
    if (stage_params_.count(key)) continue;
    c.fill(plan);
    stage_params_[key] = stage_params(plan, scratch);
  }
  for (const Candidate& c : candidates) {
    if (c.chunk_elements <= 0) continue;
    c.fill(plan);
    if (!chunk_footprints_.count(chunk_key(plan)))
      chunk_footprints_[chunk_key(plan)] = plan_chunk_footprint(model_, training_, plan);
  }
}

const ChunkFootprint* AnalyticEvaluator::chunk_footprint_of(const Plan& p, ChunkFootprint& scratch) const {
  if (!p.chunked()) return nullptr;
  auto it = chunk_footprints_.find(chunk_key(p));
  if (it != chunk_footprints_.end()) return &it->second;
  scratch = plan_chunk_footprint(model_, training_, p);
  return &scratch;
}

const std::vector<double>& AnalyticEvaluator::stage_params(const Plan& p, std::vector<double>& scratch) const {
  if (p.stage_layers.per_stage.empty()) {
    auto it = stage_params_.find(
        ShapeKey{p.tp, p.pp, p.virtual_stages, p.stage_layers.first, p.stage_layers.last, p.ep, p.etp,
                 p.stage_layers.embedding_slot, p.stage_layers.loss_slot});
    if (it != stage_params_.end()) return it->second;
  }
  scratch.assign(p.pp, 0.0);
  for (int stage = 0; stage < p.pp; ++stage)
    scratch[stage] = static_cast<double>(shard_parameters(model_, plan_shard(p, stage)));
  return scratch;
}

AnalyticEvaluator::StatesBound AnalyticEvaluator::states_lower_bound(const Plan& p) const {
  std::vector<double> scratch;
  const std::vector<double>& stage_n = stage_params(p, scratch);
  ChunkFootprint chunk_scratch;
  const ChunkFootprint* chunks = chunk_footprint_of(p, chunk_scratch);
  const double layer_params = static_cast<double>(params_.per_layer) / p.tp;
  StatesBound b;
  double cpu = -1, nvme = -1;
  const TierBytes capacity = usable_capacity(cluster_);
  const double g = cluster_.node.gpus;
  for (int stage = 0; stage < p.pp; ++stage) {
    ModelStates ms = stage_model_states(model_, training_, p, stage, stage_n[stage], layer_params, chunks);
    // Chunks pool the tiers; without activations (>= 0) on the GPU, as much as can goes there,
    // so the host and NVMe shares are lower bounds of estimate()'s.
    if (p.chunked())
      ms = place_chunked_states(ms, *chunks, 0,
                                TierBytes{capacity.gpu, capacity.cpu / g, chunks_may_use_nvme(p) ? capacity.nvme / g : 0});
    b.gpu_bytes = std::max(b.gpu_bytes, ms.total_gpu());
    cpu = cpu < 0 ? ms.params.cpu + ms.grads.cpu + ms.optimizer.cpu
                  : std::min(cpu, ms.params.cpu + ms.grads.cpu + ms.optimizer.cpu);
    nvme = nvme < 0 ? ms.params.nvme + ms.grads.nvme + ms.optimizer.nvme
                    : std::min(nvme, ms.params.nvme + ms.grads.nvme + ms.optimizer.nvme);
  }
  b.cpu_bytes = std::max(0.0, cpu) * cluster_.node.gpus;
  b.nvme_bytes = std::max(0.0, nvme) * cluster_.node.gpus;
  return b;
}

void AnalyticEvaluator::evaluate(const Plan& p, Estimate& e, bool memory_only_if_rejected, bool explain) const {
  std::vector<double> scratch;
  const std::vector<double>& stage_n = stage_params(p, scratch);
  ChunkFootprint chunk_scratch;
  // The model's FLOPs per recompute mode are cached; block recomputation's, and selective
  // recomputation's of modules other than the attention core alone, depend on the plan.
  namespace rm = recompute_module;
  const bool own_flops = p.recompute_layers > 0 || (p.recompute == Recompute::selective && p.recompute_modules != rm::core_attn);
  const IterationFlops flops = own_flops ? plan_iteration_flops(model_, training_.global_batch, p)
                                         : flops_[recompute_index(p.recompute)];
  estimate_into(model_, cluster_, training_, p, params_, stage_n, flops, EstimateOptions{memory_only_if_rejected, explain},
                chunk_footprint_of(p, chunk_scratch), e);
}

}  // namespace starfish::search

#include "sim/search/analytic.h"

#include <algorithm>
#include <cstdio>

#include "sim/cost/activations.h"
#include "sim/cost/collectives.h"
#include "sim/cost/op_time.h"
#include "sim/spec/units.h"

namespace starfish::search {
namespace {

// estimate.cpp's overflow() text, so a search row explains itself exactly like `estimate`.
std::string overflow(const char* tier, const TierUse& u) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s memory: needs %s of %s (params %s, grads %s, optimizer %s, activations %s)", tier,
                units::human_bytes(u.total()).c_str(), units::human_bytes(u.capacity_bytes).c_str(),
                units::human_bytes(u.params_bytes).c_str(), units::human_bytes(u.grads_bytes).c_str(),
                units::human_bytes(u.optimizer_bytes).c_str(), units::human_bytes(u.activations_bytes).c_str());
  return buf;
}

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
  for (const Candidate& c : candidates) {
    const ShapeKey key{c.tp, c.pp, c.virtual_stages};
    if (stage_params_.count(key)) continue;
    stage_params_[key] = stage_params(c.tp, c.pp, c.virtual_stages, scratch);
  }
}

const std::vector<double>& AnalyticEvaluator::stage_params(int tp, int pp, int v, std::vector<double>& scratch) const {
  auto it = stage_params_.find(ShapeKey{tp, pp, v});
  if (it != stage_params_.end()) return it->second;
  scratch.assign(pp, 0.0);
  for (int stage = 0; stage < pp; ++stage)
    scratch[stage] = static_cast<double>(shard_parameters(model_, Shard{tp, pp, stage, v}));
  return scratch;
}

AnalyticEvaluator::StatesBound AnalyticEvaluator::states_lower_bound(const Plan& p) const {
  std::vector<double> scratch;
  const std::vector<double>& stage_n = stage_params(p.tp, p.pp, p.virtual_stages, scratch);
  const double chunk_bytes = static_cast<double>(p.chunk_elements) * bytes_of(training_.dtype);
  const double layer_params = static_cast<double>(params_.per_layer) / p.tp;
  StatesBound b;
  double cpu = -1, nvme = -1;
  for (int stage = 0; stage < p.pp; ++stage) {
    const ModelStates ms = model_states(training_, p, p.dp, stage_n[stage], layer_params, chunk_bytes);
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

double chunk_spill_bytes(const Estimate& e, const Plan& p, int gpus_per_node) {
  if (e.fits) return 0;
  if (!p.chunked() || !e.gpu.fits()) return -1;
  const double gpu_margin = gpus_per_node * (e.gpu.capacity_bytes - e.gpu.total());
  const double cpu_over = e.cpu.total() - e.cpu.capacity_bytes;  // > 0: excess, < 0: margin
  const double nvme_excess = std::max(0.0, e.nvme.total() - e.nvme.capacity_bytes);
  // NVMe excess goes to the host's margin first, then (like the host's own excess) to the GPUs.
  const double to_gpu = std::max(0.0, cpu_over + nvme_excess);
  if (to_gpu > gpu_margin) return -1;
  return std::max(0.0, cpu_over) + nvme_excess;
}

void AnalyticEvaluator::evaluate(const Plan& p, Estimate& e, bool memory_only_if_rejected, bool explain) const {
  const Model& m = model_;
  const Cluster& c = cluster_;
  const Training& t = training_;
  const GpuSpec& gpu = c.node.gpu;
  const int dp = p.dp;
  const int64_t act_bytes = bytes_of(t.dtype);

  e = Estimate{};
  e.params = params_;
  e.micro_batches = t.global_batch / (int64_t{p.micro_batch} * p.dp);
  const IterationFlops& fl = flops_[recompute_index(p.recompute)];
  e.model_flops = fl.model;
  e.hardware_flops = fl.hardware;

  // ---- memory: every stage, keep the most loaded one (estimate.cpp, same order of operations)
  std::vector<double> scratch;
  const std::vector<double>& stage_n = stage_params(p.tp, p.pp, p.virtual_stages, scratch);
  const double chunk_bytes = static_cast<double>(p.chunk_elements) * act_bytes;
  const double layer_params = static_cast<double>(e.params.per_layer) / p.tp;
  double worst_gpu = -1;
  ModelStates worst_states;
  const double p2p = p.pp > 1 ? 2.0 * act_bytes * m.seq_len * p.micro_batch * m.hidden : 0;
  for (int stage = 0; stage < p.pp; ++stage) {
    const double n = stage_n[stage];
    const ModelStates ms = model_states(t, p, dp, n, layer_params, chunk_bytes);
    const StageActivations act = peak_stage_activations(m, p, e.micro_batches, act_bytes, stage);
    const double total = ms.total_gpu() + act.total() + p2p;
    if (total > worst_gpu) {
      worst_gpu = total;
      worst_states = ms;
      e.peak_stage = stage;
      e.params_per_gpu = n;
      e.gpu.params_bytes = ms.params.gpu;
      e.gpu.grads_bytes = ms.grads.gpu;
      e.gpu.optimizer_bytes = ms.optimizer.gpu;
      e.gpu.activations_bytes = act.total();
      e.gpu.buffers_bytes = ms.gpu_working_bytes + p2p;
    }
  }
  e.gpu.capacity_bytes = static_cast<double>(gpu.memory_bytes - gpu.reserved_bytes);
  const double g = c.node.gpus;
  e.cpu.params_bytes = worst_states.params.cpu * g;
  e.cpu.grads_bytes = worst_states.grads.cpu * g;
  e.cpu.optimizer_bytes = worst_states.optimizer.cpu * g;
  e.cpu.capacity_bytes = static_cast<double>(c.node.host.memory_bytes - c.node.host.reserved_bytes);
  e.nvme.params_bytes = worst_states.params.nvme * g;
  e.nvme.grads_bytes = worst_states.grads.nvme * g;
  e.nvme.optimizer_bytes = worst_states.optimizer.nvme * g;
  e.nvme.capacity_bytes = c.node.nvme ? static_cast<double>(c.node.nvme->capacity_bytes) : 0;
  const bool gpu_fits = e.gpu.fits(), cpu_fits = e.cpu.fits(), nvme_fits = e.nvme.fits();
  e.fits = gpu_fits && cpu_fits && nvme_fits;
  if (explain) {
    if (!gpu_fits) e.why_not = overflow("GPU", e.gpu);
    else if (!cpu_fits) e.why_not = overflow("CPU (per node)", e.cpu);
    else if (!nvme_fits) e.why_not = overflow("NVMe (per node)", e.nvme);
  }
  if (!e.fits && memory_only_if_rejected) return;

  // ---- time of one micro-batch on the slowest stage
  const LayerTime lt = layer_time(gpu, t.dtype, m, p.micro_batch, p.tp, p.sequence_parallel, p.recompute);
  const double layers_per_stage = static_cast<double>(m.layers) / p.pp;
  const double stage_compute = layers_per_stage * (lt.forward_s + lt.backward_s + lt.recompute_s) +
                               output_layer_time_s(gpu, t.dtype, m, p.micro_batch, p.tp);
  const double boundary_bytes = static_cast<double>(act_bytes) * m.seq_len * p.micro_batch * m.hidden;
  double tp_comm = 0;
  if (p.tp > 1) {
    const LinkParams link = link_for_group(c, p.tp, 1);
    const double ar = collective_time_s(CollectiveKind::all_reduce, CollectiveAlgorithm::ring, p.tp, boundary_bytes, link);
    const double per_layer = (4 + (p.recompute == Recompute::full ? 2 : 0)) * ar;
    tp_comm = layers_per_stage * per_layer;
  }
  double pp_comm = 0;
  if (p.pp > 1) {
    const LinkParams link = link_for_group(c, p.pp, p.tp * dp);
    pp_comm = 2.0 * p.virtual_stages *
              collective_time_s(CollectiveKind::send_recv, CollectiveAlgorithm::ring, 2, boundary_bytes / p.tp, link);
  }
  const double per_micro_batch = stage_compute + tp_comm + pp_comm;
  const double mb = static_cast<double>(e.micro_batches);
  e.time.compute_s = mb * stage_compute;
  e.time.tp_comm_s = mb * tp_comm;
  e.time.pp_comm_s = mb * pp_comm;
  e.time.bubble_s = (p.pp - 1.0) / p.virtual_stages * per_micro_batch;

  const StateBytes sb = state_bytes_per_param(t, p.chunked());
  const double grad_bytes = e.params_per_gpu * static_cast<double>(act_bytes);
  if (dp > 1) {
    const LinkParams link = link_for_group(c, dp, p.tp);
    double dp_time = collective_time_s(CollectiveKind::all_reduce, CollectiveAlgorithm::ring, dp, grad_bytes, link);
    if (p.zero_stage == 3)
      dp_time += 2 * collective_time_s(CollectiveKind::all_gather, CollectiveAlgorithm::ring, dp, grad_bytes, link);
    e.time.dp_comm_s = dp_time;
  }

  const double opt_params = e.params_per_gpu / (p.zero_stage >= 1 ? dp : 1);
  if (p.offload.optimizer == Tier::gpu) {
    const double bytes_per_param = 2 * sb.optimizer + 2 * static_cast<double>(act_bytes);
    e.time.optimizer_s = memory_bound_time_s(gpu, opt_params * bytes_per_param);
  } else {
    e.time.optimizer_s = opt_params * g / c.node.host.cpu_adam_params_per_s;
    if (p.offload.optimizer == Tier::nvme && c.node.nvme) {
      const double node_bytes = opt_params * g * sb.optimizer;
      e.time.optimizer_s += node_bytes / c.node.nvme->read_Bps + node_bytes / c.node.nvme->write_Bps;
    }
    const double pcie = c.node.pcie.bandwidth_Bps() / c.node.pcie.gpus_per_root;
    e.time.offload_s += 2 * opt_params * static_cast<double>(act_bytes) / pcie;
  }
  if (p.offload.params != Tier::gpu) {
    const double pcie = c.node.pcie.bandwidth_Bps() / c.node.pcie.gpus_per_root;
    e.time.offload_s += 2 * e.params_per_gpu / (p.zero_stage >= 3 ? dp : 1) * act_bytes / pcie;
  }

  e.time.iteration_s = e.time.compute_s + e.time.tp_comm_s + e.time.pp_comm_s + e.time.bubble_s + e.time.dp_comm_s +
                       e.time.optimizer_s + e.time.offload_s;
  const double gpus = c.total_gpus();
  e.tokens_per_s = static_cast<double>(t.global_batch) * m.seq_len / e.time.iteration_s;
  e.tflops_per_gpu = e.hardware_flops / e.time.iteration_s / gpus / 1e12;
  e.mfu = e.model_flops / e.time.iteration_s / gpus / gpu.peak(t.dtype);
  e.bubble_fraction = e.time.bubble_s / e.time.iteration_s;
}

}  // namespace starfish::search

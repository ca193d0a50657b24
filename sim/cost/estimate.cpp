#include "sim/cost/estimate.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "sim/cost/activations.h"
#include "sim/cost/capacity.h"
#include "sim/cost/chunk_layout.h"
#include "sim/cost/collectives.h"
#include "sim/cost/cpu_embedding.h"
#include "sim/cost/context_parallel.h"
#include "sim/cost/flops.h"
#include "sim/cost/low_precision.h"
#include "sim/cost/framework.h"
#include "sim/cost/moe.h"
#include "sim/cost/op_time.h"
#include "sim/cost/pipeline_slots.h"
#include "sim/spec/pipeline_layout.h"
#include "sim/spec/units.h"

namespace starfish {
namespace {

// The verdict's text with the overflowing tier's breakdown.
std::string overflow(Tier tier, const Estimate& e) {
  const TierUse& u = tier == Tier::gpu ? e.gpu : tier == Tier::cpu ? e.cpu : e.nvme;
  const char* name = tier == Tier::gpu ? "GPU" : tier == Tier::cpu ? "CPU (per node)" : "NVMe (per node)";
  std::string text = fmt::format("{} memory: needs {} of {} (params {}, grads {}, optimizer {}, activations {}", name,
                                 units::human_bytes(u.total()), units::human_bytes(u.capacity_bytes),
                                 units::human_bytes(u.params_bytes), units::human_bytes(u.grads_bytes),
                                 units::human_bytes(u.optimizer_bytes), units::human_bytes(u.activations_bytes));
  if (u.allocator_bytes > 0) text += ", allocator reserve " + units::human_bytes(u.allocator_bytes);
  if (u.communicator_bytes > 0) text += ", NCCL buffers " + units::human_bytes(u.communicator_bytes);
  text += ")";
  if (tier == Tier::gpu && e.memory.within_allocator_reserve) text += MemoryVerdict::allocator_reserve_note();
  return text;
}

// ---- memory: every stage, keep the most loaded one; its states' share of the host and NVMe.
// Returns false when the plan does not fit.
bool estimate_memory(const Model& m, const Cluster& c, const Training& t, const Plan& p, const std::vector<double>& stage_n,
                     const EstimateOptions& options, const ChunkFootprint* chunks, Estimate& e) {
  const int64_t act_bytes = bytes_of(t.dtype);
  const double layer_params = static_cast<double>(e.params.per_layer) / p.tp;
  double worst_gpu = -1;        // the most loaded stage's reserved bytes, NCCL's buffers included
  double worst_allocated = 0;   // its tensors' bytes
  ModelStates worst_states;
  const double p2p = pipeline_buffer_bytes(m, p, act_bytes);
  const double framework_buffers = framework_buffer_bytes(t, p) + moe_dispatch_buffer_bytes(m, p, act_bytes);
  const TierBytes capacity = usable_capacity(c);
  const double g = c.node.gpus;
  const LayerActivations layer_activations = plan_layer_activations(m, p, act_bytes);
  for (int stage = 0; stage < p.pp; ++stage) {
    const double n = stage_n[stage];
    ModelStates ms = stage_model_states(m, t, p, stage, n, layer_params, chunks);
    const StageActivations act = peak_stage_activations(m, p, e.micro_batches, act_bytes, stage, layer_activations);
    // The chunk runtime's steps also hold the hidden states flowing between layers
    // (chunked_step_non_model_bytes, what the simulator charges): their peak, where higher.
    const double activations =
        p.chunked() ? std::max(act.total(), chunked_peak_non_model_bytes(chunked_step_activations(m, p, act_bytes, layer_activations)))
                    : act.total();
    const double quantized_weights = quantized_weight_cache_bytes(m, p, stage);
    const double communicators = communicator_buffer_bytes(p, c.node.gpu, stage, m.tied_embeddings);
    // NCCL's buffers take their share of the GPU before the chunk runtime places its chunks.
    if (p.chunked())
      ms = place_chunked_states(ms, *chunks, activations + p2p + framework_buffers + quantized_weights,
                                TierBytes{capacity.gpu - communicators, capacity.cpu / g,
                                          chunks_may_use_nvme(p) ? capacity.nvme / g : 0});
    const double allocated = ms.total_gpu() + activations + p2p + framework_buffers + quantized_weights;
    const double total = allocator_reserved_bytes(p, allocated) + communicators;
    if (total > worst_gpu) {
      worst_gpu = total;
      worst_allocated = allocated;
      e.gpu.communicator_bytes = communicators;
      worst_states = ms;
      e.peak_stage = stage;
      e.params_per_gpu = n;
      e.gpu.params_bytes = ms.params.gpu;
      e.chunk_shares = ms.chunk_shares;
      e.gpu.grads_bytes = ms.grads.gpu;
      e.gpu.optimizer_bytes = ms.optimizer.gpu;
      e.gpu.activations_bytes = activations;
      e.gpu.buffers_bytes = ms.gpu_working_bytes + p2p + framework_buffers + quantized_weights;
    }
  }
  e.gpu.allocator_bytes = allocator_reserved_bytes(p, worst_allocated) - worst_allocated;
  e.gpu.capacity_bytes = capacity.gpu;
  e.cpu.params_bytes = worst_states.params.cpu * g;
  e.cpu.grads_bytes = worst_states.grads.cpu * g;
  e.cpu.optimizer_bytes = worst_states.optimizer.cpu * g;
  e.cpu.capacity_bytes = capacity.cpu;
  e.nvme.params_bytes = worst_states.params.nvme * g;
  e.nvme.grads_bytes = worst_states.grads.nvme * g;
  e.nvme.optimizer_bytes = worst_states.optimizer.nvme * g;
  e.nvme.capacity_bytes = capacity.nvme;
  e.memory = check_memory(TierBytes{e.gpu.total(), e.cpu.total(), e.nvme.total()}, capacity,
                          e.gpu.total() - e.gpu.allocator_bytes);
  e.fits = e.memory.fits;
  if (options.explain && !e.fits) e.why_not = overflow(e.memory.tier, e);
  return e.fits;
}

// One micro-batch's costs per layer and stage (StageCosts) for the pipeline slots: the layer's
// compute, its TP all-reduces (two in forward, two in backward, two more when full recompute
// redoes the forward), the pipeline sends, the gradient accumulation and the MoE layers' extra.
StageCosts micro_batch_costs(const Model& m, const Cluster& c, const Training& t, const Plan& p, const PlanLayerTimes& times) {
  const GpuSpec& gpu = c.node.gpu;
  const int64_t act_bytes = bytes_of(t.dtype);
  const LayerTime& lt = times.layer;
  const double boundary = boundary_bytes(m, p, act_bytes);
  double tp_all_reduce = 0;
  if (p.tp > 1)
    tp_all_reduce = collective_time_s(CollectiveKind::all_reduce, CollectiveAlgorithm::ring, p.tp, boundary,
                                      link_for_group(c, p.tp, 1));
  double pp_comm = 0;
  if (p.pp > 1) {
    const LinkParams link = link_for_send(c, p.pp, p.tp * p.dp_cp());
    const PipelineSend send = pipeline_send(p, boundary);
    double one_way = collective_time_s(CollectiveKind::send_recv, CollectiveAlgorithm::ring, 2, send.bytes_per_rank, link);
    if (send.receiver_all_gathers)
      one_way += collective_time_s(CollectiveKind::all_gather, CollectiveAlgorithm::ring, p.tp, boundary,
                                   link_for_group(c, p.tp, 1));
    pp_comm = 2.0 * p.virtual_stages * one_way;
  }
  StageCosts costs;
  costs.layer_s = lt.total_s();
  costs.layer_forward_s = lt.forward_s;
  costs.tp_forward_per_layer_s = 2 * tp_all_reduce;
  costs.output_s = times.output_s;
  costs.metric_s = times.metric_s;
  costs.tp_per_layer_s = (2 + backward_tp_all_reduces(p, false)) * tp_all_reduce;
  costs.pp_comm_s = pp_comm;
  // Context parallelism: the ring's sends that attention's blocks do not hide (context_parallel.h).
  const CpRing ring = cp_ring(c, m, p, act_bytes, lt);
  costs.cp_per_layer_s = ring.layer_exposed_s;
  costs.cp_forward_per_layer_s = ring.forward_exposed_s;
  // Micro-batches after the first add their weight gradients into the (ZeRO-2+: partitioned) buffer.
  costs.accumulate_s_per_param = grad_accumulate_time_s(gpu, 1.0 / (p.zero_stage >= 2 ? p.dp_cp() : 1), act_bytes);
  // A sliding-window layer: its attention core's saving (PlanLayerTimes::window_saving).
  const LayerTime& w = times.window_saving;
  costs.window_extra_s = -w.total_s();
  costs.window_forward_extra_s = -w.forward_s;
  // A layer kept in bf16 under fp8: its GEMMs' time over the fp8 ones' (PlanLayerTimes::bf16_extra).
  costs.bf16_extra_s = times.bf16_extra.total_s();
  costs.bf16_forward_extra_s = times.bf16_extra.forward_s;
  costs.moe_bf16_extra_s = times.moe_bf16_extra.total_s();
  costs.moe_bf16_forward_extra_s = times.moe_bf16_extra.forward_s;
  if (m.is_moe()) {
    // An MoE layer: its experts instead of the dense MLP, and per pass two all-to-alls over EP
    // (dispatch, combine) with the ETP all-gathers of the dispatched tokens: 2 in forward, 2 in
    // backward, 2 more when full recomputation redoes the forward.
    const LayerTime moe = layer_time(gpu, t.dtype, m, plan_layer_shape(p, true), p.recompute);
    const double exchange = moe_all_to_all_time_s(c, m, p, act_bytes) + moe_etp_gather_time_s(c, m, p, act_bytes);
    costs.moe_exchange_forward_s = 2 * exchange;
    costs.moe_exchange_s = (4 + (recompute_reruns_token_exchange(p) ? 2 : 0)) * exchange;
    costs.moe_forward_extra_s = moe.forward_s - lt.forward_s + costs.moe_exchange_forward_s;
    // The mlp recompute module reruns a dense MLP's TP collective, not an MoE layer's, and SP
    // re-gathers a dense MLP's input, not the experts'.
    costs.moe_tp_less_s = (backward_tp_all_reduces(p, false) - backward_tp_all_reduces(p, true)) * tp_all_reduce;
    costs.moe_extra_s = moe.total_s() - costs.layer_s + costs.moe_exchange_s - costs.moe_tp_less_s;
  }
  return costs;
}

// The parameters the most loaded GPU's collectives and optimizer move: its shard's, or, for a
// chunked plan, whole chunks, padding and each ZeRO group's largest capacity included
// (chunk_footprint): the layout's elements, not the shard's parameters.
double moved_params_per_gpu(const Plan& p, const ChunkFootprint* chunks, const Estimate& e) {
  if (!chunks) return e.params_per_gpu;
  return static_cast<double>(chunks->kept_param_elements) * (p.zero_stage >= 1 ? p.dp_cp() : 1);
}

// One GPU's share of its host link: the GPUs behind one PCIe root copy alike.
double host_link_per_gpu_Bps(const Cluster& c) { return c.node.pcie.bandwidth_Bps() / c.node.pcie.gpus_per_root; }

// Where the most loaded stage's optimizer states and params sit, as fractions off the GPU (and
// on NVMe): the plan's tiers, or for a chunked plan where estimate_memory placed its chunks
// (place_chunked_states: the tiers a chunked plan names are where its chunks may go, and the
// runtime keeps them on the GPU while they fit, as the simulator's chunk runtime does). A
// chunked plan's params that spill come in with its collectives (chunked_dp_comm_time_s); a
// unit stepped on the host copies its param chunk there and back once (optimizer_offload_copies).
struct OffGpuShares {
  double optimizer = 0, optimizer_nvme = 0, params = 0;
};
OffGpuShares off_gpu_shares(const Plan& p, const Estimate& e) {
  OffGpuShares s;
  if (!p.chunked()) {
    s.optimizer = p.offload.optimizer == Tier::gpu ? 0 : 1;
    s.optimizer_nvme = p.offload.optimizer == Tier::nvme ? 1 : 0;
    s.params = p.offload.params == Tier::gpu ? 0 : 1;
    return s;
  }
  s.optimizer = e.chunk_shares.optimizer_off_gpu;
  s.optimizer_nvme = e.chunk_shares.optimizer_nvme;
  return s;
}

// A chunked plan's data-parallel collectives, as the chunk runtime runs them (PatrickStar's
// way, sim/chunk/chunk_runtime.cpp): sharded (ZeRO >= 1), it all-gathers a ZeRO group of chunks
// when a step first touches it, in the forward and again in the backward (remote chunks are
// dropped after their last forward use), and reduce-scatters each group's gradients after its
// last backward use; unsharded, it all-reduces each chunk's. Each collective is issued on the
// compute stream and waited for there (ChunkRuntime::gather, ::reduce): in series with the
// compute, nothing hidden. Own chunks that the GPU's chunk room cannot keep come in from the host
// at each use, forward and backward (place_chunked_states: the spilled share).
double chunked_dp_comm_time_s(const Cluster& c, const Training& t, const Plan& p, const ChunkFootprint& chunks,
                              const Estimate& e) {
  const StateBytes b = state_bytes_per_param(t, true);
  const double grad_bytes_per_param = b.grads > 0 ? b.grads : b.params;  // mixed precision: grads in the param chunks
  const double kept = static_cast<double>(chunks.kept_param_elements);
  double time_s = 2 * kept * e.chunk_shares.params_spilled * b.params / host_link_per_gpu_Bps(c);
  const int dp = p.dp_cp();
  if (dp <= 1) return time_s;
  const LinkParams link = link_for_group(c, dp, p.tp);
  auto ring = [&](CollectiveKind k, double bytes) { return collective_time_s(k, CollectiveAlgorithm::ring, dp, bytes, link); };
  if (p.zero_stage == 0) return time_s + ring(CollectiveKind::all_reduce, kept * grad_bytes_per_param);
  const double all = kept * dp;  // every group's chunks, the rank's and the others'
  return time_s + 2 * ring(CollectiveKind::all_gather, all * b.params) + ring(CollectiveKind::reduce_scatter, all * grad_bytes_per_param);
}

// How many of the DP group's transfers share the link that paces the TP ring of a GPU: without
// NVLink, where TP's ring climbs its PCIe switch's uplink, every DP group's behind that switch
// (pcie_uplink_sharers); otherwise the GPU's own (its NVLink, or its one x16 link).
int dp_flows_beside_tp_ring(const Cluster& c, const Plan& p) {
  return !c.node.nvlink && c.pcie_group_leaves_switch(p.tp, 1) ? c.pcie_uplink_sharers(p.dp_cp(), p.tp) : 1;
}

// What a pass of one layer takes beyond its chain (`compute_s`, then `tp_s` of collectives) when
// `link_s` of other streams' transfers (the next layer's gathers; the reduce-scatters) runs
// beside it, `flows` of them on the link that paces the chain's collectives (0: links of their
// own, where the chain covers them whole). The link is shared fairly (NCCL's kernels on several
// streams, the event-driven tier's flows): compute covers the transfers at the link's full rate,
// but while a collective of the chain runs it gets 1 / (flows + 1) of the link, stretching by
// flows x its time, and the transfers progress flows / (flows + 1) as fast. Spread over the
// chain, the transfers end after link_s / (compute_s + flows x tp_s) of it, and stretch that
// part of its collectives; what the chain cannot hold at all is exposed after it.
double prefetch_exposed_s(double compute_s, double tp_s, double link_s, int flows) {
  const double k = flows, chain_s = compute_s + tp_s;
  if (k <= 0 || tp_s <= 0) return std::max(0.0, link_s - chain_s);
  const double held_s = compute_s + k * tp_s;  // the transfers' work the chain holds
  return std::min(link_s, held_s) / held_s * k * tp_s + std::max(0.0, link_s - held_s);
}

// The bytes the most loaded stage's GPU reduces per iteration (ZeRO-2 and -3: per micro-batch),
// in the gradient buffer's dtype: its dense gradients over DP x CP, its routed experts' over the
// expert-data-parallel group (sim/cost/moe.h).
struct StageGradBytes {
  double dense = 0, expert = 0;
};
StageGradBytes stage_grad_reduce_bytes(const Model& m, const Training& t, const Plan& p, const ChunkFootprint* chunks,
                                       const Estimate& e) {
  const double expert_params = stage_expert_params(m, p, e.peak_stage), reduce_bytes = grad_buffers(t, p).reduce_bytes;
  return {(moved_params_per_gpu(p, chunks, e) - expert_params) * reduce_bytes, expert_params * reduce_bytes};
}

// What a micro-batch's pipeline sends (`sends_s` of them, 2 v one-way transfers) add to the
// slowest stage's chain. Blocking (pipeline_sends_block), all of them. Megatron-core's
// interleaved schedule posts each send and goes on (overlap_p2p_comm): in its steady state a
// forward's activations travel while the stage runs its next op, a backward, and a backward's
// gradients while it runs a forward, so what shows is what a transfer outlasts that op. Its
// warm-up and cool-down ops wait on the transfers that feed them: the share of the first
// stage's ops outside the steady state (warmup_forwards of its m v) is charged whole.
double pipeline_sends_per_micro_batch_s(const Plan& p, double sends_s, const StageSlot& slow, int64_t micro_batches) {
  if (sends_s <= 0 || pipeline_sends_block(p)) return sends_s;
  const double v = p.virtual_stages, one_way_s = sends_s / (2 * v);
  const double forward_op_s = (slow.forward_s - sends_s / 2) / v;
  const double backward_op_s = (slow.slot_s() - slow.forward_s - sends_s / 2) / v;
  const double hidden_s = v * (std::max(0.0, one_way_s - backward_op_s) + std::max(0.0, one_way_s - forward_op_s));
  const double ops = static_cast<double>(micro_batches) * v;
  const double outside = static_cast<double>(warmup_forwards(p.schedule, p.pp, 0, micro_batches, p.virtual_stages)) / ops;
  return outside * sends_s + (1 - outside) * hidden_s;
}

// The gradient copies after each backward op (a virtual stage of a micro-batch): out to the
// host, and from the second micro-batch on the running sum back before it (framework.h
// optimizer_offload_copies: FSDP's CPUOffload, DeepSpeed's ZeRO-2 offload), as the simulator
// issues them (static_iteration.cpp accumulate_on_host), behind the op's backward.
struct AccumulateCopies {
  double out_per_op_s = 0, in_per_op_s = 0;  // one op's, each way
  double ops = 0;                            // backward ops of the stage: m x v
  bool in_chain = true;                      // without overlapped reduction the next op waits
  bool shows_whole = true;                   // in the chain, or on the links of its collectives
  double out_s() const { return ops * out_per_op_s; }
  double in_s(double micro_batches) const { return ops * (micro_batches - 1) / micro_batches * in_per_op_s; }
};
AccumulateCopies accumulate_copies(const Model& m, const Cluster& c, const Training& t, const Plan& p,
                                   const ChunkFootprint* chunks, const Estimate& e) {
  AccumulateCopies a;
  const OffGpuShares off = off_gpu_shares(p, e);
  const OptimizerOffloadCopies copies = optimizer_offload_copies(t, p, e.micro_batches);
  if (off.optimizer <= 0 || (copies.accumulate_to_host <= 0 && copies.accumulate_to_gpu <= 0)) return a;
  const double op_params = optimizer_params_per_gpu(p, moved_params_per_gpu(p, chunks, e), stage_expert_params(m, p, e.peak_stage)) *
                           off.optimizer / p.virtual_stages;
  a.out_per_op_s = op_params * copies.accumulate_to_host / host_link_per_gpu_Bps(c);
  a.in_per_op_s = op_params * copies.accumulate_to_gpu / host_link_per_gpu_Bps(c);
  a.ops = static_cast<double>(e.micro_batches) * p.virtual_stages;
  a.in_chain = !p.overlap_grad_reduce;
  // Over PCIe without NVLink the copies cross the GPU's one link, which its TP collectives (and
  // the DP reductions beside them) use too: the simulator stretches the chain's collectives by
  // them, so they are charged whole rather than said hidden.
  a.shows_whole = a.in_chain || (!c.node.nvlink && p.tp > 1);
  return a;
}

// What the accumulation copies add to the iteration. In the chain (or sharing its collectives'
// links), all of them. Overlapped,
// they run on the copy engines (one per direction, PCIe being full duplex) beside the ops that
// follow (`chain_s` of them): what shows is the last op's, which the step waits for, or the
// excess of a direction's copies over the chain they run beside, whichever is more.
double accumulate_copies_exposed_s(const AccumulateCopies& a, double micro_batches, double chain_s) {
  if (a.ops <= 0) return 0;
  const double in_s = a.in_s(micro_batches);
  if (a.shows_whole) return a.out_s() + in_s;
  const double last_op_s = a.out_per_op_s + (micro_batches > 1 ? a.in_per_op_s : 0);
  return std::max(last_op_s, std::max(a.out_s(), in_s) - chain_s);
}

// One backward op's dense gradients (`stage_grad_bytes` of the stage's `stage_layers` layers over
// its virtual stages) spread evenly over the op's whole layers and cut into buckets of
// `bucket_params` (bucket_layout), as the simulator's cut_buckets cuts them; `reduce_s(k)` is the
// reduce-scatter of k layers' gradients over the DP group.
struct OpReductionBuckets {
  DpBucketLayout layout;
  int layers = 1;  // the op's
  double layer_bytes = 0;
  int dp = 1;
  LinkParams link;
  double reduce_s(int bucket_layers) const {
    return collective_time_s(CollectiveKind::reduce_scatter, CollectiveAlgorithm::ring, dp, bucket_layers * layer_bytes, link);
  }
};
OpReductionBuckets op_reduction_buckets(const Cluster& c, const Training& t, const Plan& p, double stage_grad_bytes,
                                        double stage_layers, double bucket_params) {
  OpReductionBuckets r;
  const double v = p.virtual_stages, op_layers = std::max(1.0, stage_layers / v);
  r.layer_bytes = stage_grad_bytes / v / op_layers;
  r.layers = std::max(1, static_cast<int>(std::lround(op_layers)));
  r.layout = bucket_layout(bucket_params, r.layers, r.layer_bytes / grad_buffers(t, p).reduce_bytes);
  r.dp = p.dp_cp();
  r.link = link_for_group(c, r.dp, p.tp);
  return r;
}

// ZeRO-3 / FSDP gather each layer's params before its forward and again before its backward,
// one layer ahead, and reduce-scatter its gradients after its backward, all overlapped with the
// compute: what shows is, layer by layer, what the layer's compute cannot cover, plus the
// iteration's first gather, which has nothing before it, and the last reduce-scatter of every op
// whose backward ends waiting for it (of the iteration's last elsewhere). The gathers run one
// chain over passes
// and micro-batches, as the event-driven tier's do: the backward's first gather under the
// forward's last layers, the next micro-batch's first under the backward's last (FSDP's backward
// prefetch and the forward's gather of the next unit; DeepSpeed's coordinator prefetching along
// its recorded trace) and, where the gradients' copies to the host are in the chain
// (`backward_copy_s` an op, accumulate_copies), under them too. Each layer's collective pays its
// own ring latency ((n-1) steps), which dominates at tens of thousands of ranks: a whole-stage
// gather divided by the layers would pay it once. The reduce-scatters run in the backwards of
// `reducing_micro_batches` micro-batches (a pipelined FSDP stage's last one only).
double zero3_gathers_exposed_s(const Cluster& c, const Training& t, const Plan& p, const LayerTime& lt,
                               const StageCosts& costs, double layers_per_stage, double comm_params, double grad_bytes,
                               const Estimate& e, double backward_copy_s, double reducing_micro_batches) {
  const int dp = p.dp_cp();
  const double mb = static_cast<double>(e.micro_batches);
  const LinkParams link = link_for_group(c, dp, p.tp);
  const double layers = std::max(1.0, layers_per_stage);
  const double layer_params = comm_params / layers;
  // Offloaded params (ZeRO-Infinity's offload_param): each rank copies its shard of the layer
  // in from the host before every gather, in the same prefetch chain (static_iteration.cpp).
  const double fetch = off_gpu_shares(p, e).params * layer_params / dp * offloaded_param_fetch_bytes(t, p) /
                       host_link_per_gpu_Bps(c);
  // The framework's assembly of the gathered params runs on the gather's stream behind it.
  const double assembly = memory_bound_time_s(c.node.gpu, layer_params * zero3_gather_assembly_bytes_per_param(t, p));
  const double gather = fetch + assembly +
                        collective_time_s(CollectiveKind::all_gather, CollectiveAlgorithm::ring, dp,
                                          layer_params * static_cast<double>(bytes_of(t.dtype)), link);
  const double reduce = collective_time_s(CollectiveKind::reduce_scatter, CollectiveAlgorithm::ring, dp, grad_bytes / layers, link);
  // The backward's gather and the previous layer's reduce-scatter run on their own streams at
  // once: their bytes share the link, their ring steps' latencies pass side by side.
  const double gather_and_reduce = gather + reduce - std::min(reduce, (dp - 1) * link.latency_s);
  // Pipeline sends that leave by the NICs the DP rings cross share them with the gathers: each op
  // sends once (its activations, or its input's gradients), `costs.pp_comm_s` / 2v, spread here
  // over the op's layers.
  const double v = p.virtual_stages, op_layers = std::max(1.0, layers / v);
  const double sends = p.pp > 1 && link.inter_node && link_for_send(c, p.pp, p.tp * dp).inter_node
                           ? costs.pp_comm_s / (2 * v) / op_layers
                           : 0;
  // A layer's TP collectives run in its chain, between its GEMMs, while the gather of the next
  // layer proceeds on its own stream. Where the gather crosses links TP does not use (TP over
  // NVLink, the gather across nodes through the NICs) TP covers it as the compute does; where
  // it crosses TP's (NVLink within a node; PCIe, where every GPU's traffic crosses its one x16
  // link) the two share them (prefetch_exposed_s): the GPU's own gather on its link, or, where
  // TP's ring and the gathers all climb a PCIe switch's uplink, every group's behind it.
  const int flows = c.node.nvlink && link.inter_node ? 0 : dp_flows_beside_tp_ring(c, p);
  const double tp_fwd = costs.tp_forward_per_layer_s, tp_bwd = costs.tp_backward_per_layer_s();
  const double forward = prefetch_exposed_s(lt.forward_s, tp_fwd, gather + sends, flows);
  // The m v ops' first forward gathers, under an in-chain copy as well (only the offloaded
  // params' fetch crosses the copy's link, the other way).
  const double after_copy = prefetch_exposed_s(lt.forward_s + backward_copy_s, tp_fwd, gather + sends, flows);
  // A layer's backward covers the next gather and the reduce-scatter of the layer before it. Where
  // the backward ends waiting for its reduce-scatters (zero3_backward_waits_for_reductions), an
  // op's first has none before it and its last layer's runs after it, alone; elsewhere that one
  // runs on under the next op, and only the iteration's last shows (the optimizer step waits).
  const double backward_cover_s = lt.backward_s + lt.recompute_s;
  const double ops = mb * v;
  if (const double bucket_params = zero3_bucket_params(p, dp); bucket_params > 0) {
    // DeepSpeed's buckets (zero3_bucket_params), cut per op as the simulator does: each full one
    // reduces beside the bucket's worth of backward layers after it, on its own stream beside the
    // gathers' (twice the flows on a shared link while it runs); the first bucket's layers have
    // none beside them; the remainder runs after the op's last layer, alone, and the epilogue
    // waits for it.
    const OpReductionBuckets r = op_reduction_buckets(c, t, p, grad_bytes, layers, bucket_params);
    const DpBucketLayout& b = r.layout;
    const double beside = (b.buckets - 1.0) * b.per_bucket / r.layers;  // of the layers, those a full bucket runs beside
    const double backward =
        (1 - beside) * prefetch_exposed_s(backward_cover_s, tp_bwd, gather + sends, flows) +
        beside * prefetch_exposed_s(backward_cover_s, tp_bwd, gather + sends + r.reduce_s(b.per_bucket) / b.per_bucket, 2 * flows);
    return mb * layers * (forward + backward) - ops * (forward - after_copy) + ops * r.reduce_s(b.remainder) + gather;
  }
  const double backward = prefetch_exposed_s(backward_cover_s, tp_bwd, gather_and_reduce + sends, flows);
  const double first_backward = prefetch_exposed_s(backward_cover_s, tp_bwd, gather + sends, flows);
  const double ending_ops = zero3_backward_waits_for_reductions(p) ? reducing_micro_batches * v : 1;
  return mb * layers * forward + layers * (reducing_micro_batches * backward + (mb - reducing_micro_batches) * first_backward) -
         ops * (forward - after_copy) - ending_ops * (backward - first_backward - reduce) + gather;
}

// A virtual stage's buckets (layout `b`) on the DP stream as its backward produces them: the
// full ones, `full_s` each, ready a bucket's backward (`per_bucket` layers of `layer_s`) apart,
// the stream free from `busy_s` on; the remainder, `remainder_s`, once the last layer is done
// (`end_s`). What runs past that end (`tail_s`), and how long the full buckets ran beside the
// backward (`beside_s`).
struct BucketQueue {
  double end_s = 0, tail_s = 0, beside_s = 0;
};
BucketQueue bucket_queue(const DpBucketLayout& b, double layer_s, double full_s, double remainder_s, double busy_s = 0) {
  BucketQueue q;
  q.end_s = ((b.buckets - 1) * b.per_bucket + b.remainder) * layer_s;
  double free_s = busy_s;  // when the stream is done with the buckets launched so far
  for (int k = 1; k < b.buckets; ++k) {
    const double start_s = std::max(free_s, k * b.per_bucket * layer_s);
    free_s = start_s + full_s;
    q.beside_s += std::max(0.0, std::min(free_s, q.end_s) - std::min(start_s, q.end_s));
  }
  q.tail_s = std::max(free_s, q.end_s) + remainder_s - q.end_s;
  return q;
}

// ZeRO-0/1's gradient reduction (all-reduce; reduce-scatter with the distributed optimizer) of the
// most loaded stage's `grad_bytes`, as it shows after the pipeline's flush. Not overlapped, the
// whole of it. Overlapped (plan.overlap_grad_reduce), each virtual stage's runs once its last
// backward is done, the later ones' under the backward ops still to come; the first stage's
// first virtual stage (1/v of the stage) ends the backward, and of its reduction what shows is
// what the backward still to run does not hide: in one piece, all of it; in Megatron-core's
// buckets (`buckets`: dp_bucket_layout), launched as the last micro-batch's backward produces
// them, a queue on the DP stream (the full buckets ready a bucket's backward apart, the
// remainder at the end). The next stage's first virtual stage, reduced in one piece, ends
// `stagger_s` (one backward op) before: what it outlasts that shows if more.
double overlapped_reduction_exposed_s(const Cluster& c, const Plan& p, const LayerTime& lt, const StageCosts& costs,
                                      double layers_per_stage, const DpBucketLayout& buckets, double grad_bytes,
                                      double stagger_s) {
  const int dp = p.dp_cp();
  const CollectiveKind kind = p.zero_stage == 0 ? CollectiveKind::all_reduce : CollectiveKind::reduce_scatter;
  const LinkParams link = link_for_group(c, dp, p.tp);
  auto ring = [&](double bytes) { return collective_time_s(kind, CollectiveAlgorithm::ring, dp, bytes, link); };
  if (!p.overlap_grad_reduce) return ring(grad_bytes);
  const double v = p.virtual_stages, chunk_bytes = grad_bytes / v;
  const double layer_bytes = chunk_bytes / std::max(1.0, layers_per_stage / v);
  const double one_piece_s = ring(chunk_bytes);
  const double next_stage_s = p.pp > 1 ? std::max(0.0, one_piece_s - stagger_s) : 0;
  if (buckets.buckets <= 1) return std::max(one_piece_s, next_stage_s);
  const double layer_backward_s = lt.backward_s + lt.recompute_s + costs.tp_backward_per_layer_s();
  const BucketQueue q =
      bucket_queue(buckets, layer_backward_s, ring(buckets.per_bucket * layer_bytes), ring(buckets.remainder * layer_bytes));
  return std::max(q.tail_s, next_stage_s);
}

// Megatron-core's --overlap-param-gather (param_gather_overlaps_forward): the first stage's
// first virtual stage takes its updated params under the first micro-batch's forward, in the
// reduction's buckets (`buckets`) in forward order, the remainder first; each bucket's
// all-gather is dispatched once the bucket before it has run its first layer, as the simulator
// has it (gather_params_under_forward), so what shows is the first bucket's and what each later
// one outlasts the rest of its predecessor's forward. The other virtual stages and stages take
// theirs while the pipeline fills.
double param_gather_under_forward_exposed_s(const Cluster& c, const Plan& p, const LayerTime& lt, const StageCosts& costs,
                                            double layers_per_stage, const DpBucketLayout& buckets,
                                            double dense_gather_bytes) {
  const int dp = p.dp_cp();
  const double v = p.virtual_stages, layer_bytes = dense_gather_bytes / v / std::max(1.0, layers_per_stage / v);
  const LinkParams link = link_for_group(c, dp, p.tp);
  auto gather_s = [&](int bucket_layers) {
    return collective_time_s(CollectiveKind::all_gather, CollectiveAlgorithm::ring, dp, bucket_layers * layer_bytes, link);
  };
  const double layer_forward_s = lt.forward_s + costs.tp_forward_per_layer_s, full_bucket_s = gather_s(buckets.per_bucket);
  double exposed_s = gather_s(buckets.remainder);
  for (int b = 1; b < buckets.buckets; ++b)
    exposed_s += std::max(0.0, full_bucket_s - ((b == 1 ? buckets.remainder : buckets.per_bucket) - 1) * layer_forward_s);
  return exposed_s;
}

// The transfers a slot of `slow` makes over the links the DP reductions take, each weighted by
// the share of those links the reductions keep busy: inside the node, TP's collectives and
// whichever of the CP ring, the MoE token exchange and the pipeline sends stay in it, by
// `node_share` (node_links_share); over the NICs, those of the three that leave the node (TP
// never does), by `nic_share` (the reductions' rings that cross the NICs run at their pace).
double chain_transfers_on_dp_links_s(const Cluster& c, const Plan& p, const StageSlot& slow, double node_share,
                                     double nic_share) {
  double shared_s = node_share * slow.tp_comm_s;
  auto add = [&](bool used, int ranks, int stride, double s) {
    if (used) shared_s += (link_for_group(c, ranks, stride).inter_node ? nic_share : node_share) * s;
  };
  add(p.cp > 1, p.cp, p.tp, slow.cp_comm_s);
  add(p.ep > 1, p.ep, p.expert_tp(), slow.exchange_s);
  add(p.pp > 1, p.pp, p.tp * p.dp_cp(), slow.pp_comm_s);
  return shared_s;
}

// The shares of the node's links and of the NICs that ZeRO-2's reductions keep busy: the dense
// ones over DP x CP (`dense_s`) and the routed experts' over their expert-data-parallel group
// (`expert_s`, each on its own streams), weighted by their times.
struct ReductionLinkShares {
  double node_share = 0, nic_share = 0;
};
ReductionLinkShares reduction_link_shares(const Cluster& c, const Plan& p, double dense_s, double expert_s) {
  ReductionLinkShares r;
  const double reduce_s = dense_s + expert_s;
  if (reduce_s <= 0) return r;
  auto add = [&](double s, int ranks, int stride) {
    r.node_share += s / reduce_s * node_links_share(c, ranks, stride);
    r.nic_share += link_for_group(c, ranks, stride).inter_node ? s / reduce_s : 0;
  };
  add(dense_s, p.dp_cp(), p.tp);
  add(expert_s, expert_data_parallel(p), p.ep * p.expert_tp());
  return r;
}

// ZeRO-2 with overlapped reduction (zero2_bucket_params): each backward op's dense gradients are
// reduce-scattered in buckets on the DP stream as its layers' backwards produce them, the
// remainder and the routed experts' once its last layer is done, and the op ends waiting for them
// all (the simulator's reduce_micro_batch_in_buckets). What one op adds to the stage's chain: the
// queue's tail past the op's backward (a full bucket ready every `per_bucket` layers' backward, the
// link first busy with the previous op's copies to the host where they share it), the experts'
// reduction after it, and the stretch of the op's transfers that cross the links the buckets
// take (chain_transfers_on_dp_links_s), for the share of the op's backward the buckets run beside.
// 0 where the plan does not reduce so.
double bucketed_reductions_per_op_s(const Model& m, const Cluster& c, const Training& t, const Plan& p, const LayerTime& lt,
                                    const StageCosts& costs, const StageSlot& slow, const Estimate& e,
                                    const AccumulateCopies& copies) {
  const int dp = p.dp_cp();
  const double bucket_params = zero2_bucket_params(p, dp);
  if (bucket_params <= 0) return 0;
  const StageGradBytes reduced = stage_grad_reduce_bytes(m, t, p, nullptr, e);
  const double v = p.virtual_stages;
  const OpReductionBuckets r = op_reduction_buckets(c, t, p, reduced.dense, slow.layers, bucket_params);
  const DpBucketLayout& b = r.layout;
  // The previous op's copies to and from the host where the reductions cross the GPU's PCIe link
  // (to the NICs behind its switch, or no NVLink), unless charged whole in offload.
  const bool over_pcie = (!c.node.nvlink || r.link.inter_node) && !copies.shows_whole;
  const double link_busy_s = over_pcie ? std::max(copies.out_per_op_s, copies.in_per_op_s) : 0;
  const double layer_backward_s = lt.backward_s + lt.recompute_s + costs.tp_backward_per_layer_s();
  const BucketQueue q = bucket_queue(b, layer_backward_s, r.reduce_s(b.per_bucket), r.reduce_s(b.remainder), link_busy_s);
  const double expert_s = moe_expert_reduce_time_s(c, p, reduced.expert / v, 0, 1);  // the op's virtual stage's
  const ReductionLinkShares shares = reduction_link_shares(c, p, r.reduce_s(r.layers), expert_s);
  const double flows = dp_flows_beside_tp_ring(c, p);
  const double op_shared_s = chain_transfers_on_dp_links_s(c, p, slow, shares.node_share, shares.nic_share) *
                             (slow.slot_s() - slow.forward_s) / std::max(1e-30, slow.slot_s()) / v;
  return q.tail_s + expert_s + flows * std::min(1.0, q.beside_s / std::max(1e-30, q.end_s)) * op_shared_s;
}

// The data-parallel gradient reductions (and ZeRO's parameter gathers) of the most loaded
// stage's GPU, `layers_per_stage` layers whose one-micro-batch times are `lt` and whose TP
// collectives, in the same chain as their compute, are `costs`'; `bucketed_op_s` is what
// ZeRO-2's bucketed reductions add to each backward op (bucketed_reductions_per_op_s).
double dp_comm_time_s(const Model& m, const Cluster& c, const Training& t, const Plan& p, const LayerTime& lt,
                      const StageCosts& costs, double layers_per_stage, const ChunkFootprint* chunks,
                      const Estimate& e, double backward_copy_s, double bucketed_op_s, const PipelineSlots& slots) {
  if (chunks) return chunked_dp_comm_time_s(c, t, p, *chunks, e);
  const double stagger_s = slots.shortest_backward_s / p.virtual_stages;
  const int dp = p.dp_cp();  // gradients are reduced over DP x CP
  const double mb = static_cast<double>(e.micro_batches);
  const double comm_params = moved_params_per_gpu(p, chunks, e);
  const StageGradBytes reduced = stage_grad_reduce_bytes(m, t, p, chunks, e);
  const double grad_bytes = reduced.dense;
  // What ZeRO-1/2 all-gather after the step: the params in their dtype (fp8 params: 1 byte).
  const ParamGatherBytes gathered = zero_param_gather_bytes(m, t, p, e.peak_stage, comm_params);
  const LinkParams link = link_for_group(c, dp, p.tp);
  auto ring = [&](CollectiveKind k, double bytes) { return collective_time_s(k, CollectiveAlgorithm::ring, dp, bytes, link); };
  // ZeRO-2/3 reduce every micro-batch's gradients, or a pipelined FSDP stage its last one's.
  const double reducing_mb = reduces_every_micro_batch(p, dp, e.micro_batches) ? mb : 1;
  if (zero2_bucket_params(p, dp) > 0) {  // every reducing op's buckets, and the gathers after the step
    const double expert_gather_s = moe_expert_reduce_time_s(c, p, reduced.expert, gathered.expert_bytes, 1) -
                                   moe_expert_reduce_time_s(c, p, reduced.expert, 0, 1);
    return reducing_mb * p.virtual_stages * bucketed_op_s + expert_gather_s + ring(CollectiveKind::all_gather, gathered.dense_bytes);
  }
  double total = moe_expert_reduce_time_s(c, p, reduced.expert, gathered.expert_bytes, static_cast<int64_t>(reducing_mb));
  if (dp <= 1) return total;
  // ZeRO-0 all-reduces once; ZeRO-1 reduce-scatters once and all-gathers the updated params
  // (Megatron's distributed optimizer). ZeRO-2 and -3 keep only their gradient partition, so
  // every micro-batch's gradients are reduce-scattered after its backward
  // (deepspeedai/DeepSpeed#2252); ZeRO-2 all-gathers the updated params once, ZeRO-3 gathers
  // them where they are used.
  // Megatron-core's buckets cut the first stage's first virtual stage (dp_bucket_layout), its dense
  // params spread over its layers as the slowest stage's are.
  const double v = p.virtual_stages, chunk_layers = std::max(1.0, layers_per_stage / v);
  const int bucketed_layers = virtual_stage_layer_range(m.layers, p.pp, p.virtual_stages, p.stage_layers, 0, 0).count;
  const DpBucketLayout buckets =
      dp_bucket_layout(p, 0, 0, dp, bucketed_layers, (comm_params - stage_expert_params(m, p, e.peak_stage)) / v / chunk_layers);
  double dp_time = p.zero_stage <= 1 ? overlapped_reduction_exposed_s(c, p, lt, costs, layers_per_stage, buckets, grad_bytes, stagger_s)
                                      : reducing_mb * ring(CollectiveKind::reduce_scatter, grad_bytes);
  if (p.zero_stage == 1 || p.zero_stage == 2)
    dp_time += param_gather_overlaps_forward(p, dp)
                   ? param_gather_under_forward_exposed_s(c, p, lt, costs, layers_per_stage, buckets, gathered.dense_bytes)
                   : ring(CollectiveKind::all_gather, gathered.dense_bytes);
  if (p.zero_stage == 3)
    dp_time = zero3_gathers_exposed_s(c, t, p, lt, costs, layers_per_stage, comm_params, grad_bytes, e, backward_copy_s,
                                      reducing_mb);
  return total + dp_time;
}

// ZeRO-2 without overlapped reduction reduce-scatters each micro-batch's gradients in the stage's
// chain after its backward, its dense and expert ones side by side (the simulator's
// reduce_micro_batch): they lengthen the stage's time per micro-batch, so the pipeline's fill and
// drain carry them too, (p - 1) / v of them beyond the m that dp_comm_time_s charges.
double in_chain_reduction_per_micro_batch_s(const Model& m, const Cluster& c, const Training& t, const Plan& p,
                                            const Estimate& e) {
  const int dp = p.dp_cp();
  if (p.zero_stage != 2 || p.overlap_grad_reduce || p.pp <= 1 || !reduces_every_micro_batch(p, dp, e.micro_batches)) return 0;
  const StageGradBytes reduced = stage_grad_reduce_bytes(m, t, p, nullptr, e);
  return collective_time_s(CollectiveKind::reduce_scatter, CollectiveAlgorithm::ring, dp, reduced.dense, link_for_group(c, dp, p.tp)) +
         moe_expert_reduce_time_s(c, p, reduced.expert, 0, 1);
}

// The optimizer step where its states live (GPU; or CPU Adam, with NVMe reads and writes), and
// the PCIe copies offloading adds (gradients out and params back; offloaded params in).
// The host's time after the pipeline's flush ends (the first stage's last backward) until the
// last of a node's stages is stepped, when stage s gives the host `step_s[s]` of work (CPU Adam,
// with the NVMe reads and writes) and the host takes them one at a time in the order they arrive
// (the simulator's one CPU Adam stream per node). 1F1B's flush ends stage s's last backward s x
// `stagger_s` (a backward op each, the shortest stage's at the least) before the first stage's,
// so the host steps later stages while earlier ones drain; but with tied embeddings the last
// stage waits for the first, whose embedding gradient it all-reduces
// (tied_embedding_reduce_time_s), and arrives with it. Stages are the outermost rank dimension
// (TP, then DP x CP, then PP: Megatron's and DeepSpeed's order), so a node serves consecutive
// stages, tp x dp x cp GPUs each.
int pipeline_stages_on_node(const Cluster& c, const Plan& p) {
  const int per_stage = p.tp * p.dp_cp();
  return per_stage >= c.node.gpus ? 1 : std::min(p.pp, c.node.gpus / per_stage);
}
double host_steps_tail_s(const Cluster& c, const Plan& p, bool tied_embeddings, const std::vector<double>& step_s,
                         double stagger_s) {
  const int stages_on_node = pipeline_stages_on_node(c, p);
  double tail_s = 0;
  std::vector<std::pair<double, double>> arrivals;  // (when, relative to the flush's end; work)
  for (int first = 0; first < p.pp; first += stages_on_node) {
    arrivals.clear();
    for (int s = first; s < std::min(p.pp, first + stages_on_node); ++s)
      arrivals.emplace_back(tied_embeddings && p.pp > 1 && s == p.pp - 1 ? 0.0 : -s * stagger_s, step_s[static_cast<size_t>(s)]);
    std::sort(arrivals.begin(), arrivals.end());
    double free_s = arrivals.front().first;
    for (const auto& [when_s, work_s] : arrivals) free_s = std::max(free_s, when_s) + work_s;
    tail_s = std::max(tail_s, free_s);
  }
  return tail_s;
}

void optimizer_and_offload_time(const Model& m, const Cluster& c, const Training& t, const Plan& p,
                                const std::vector<double>& stage_n, const ChunkFootprint* chunks, double stagger_s,
                                Estimate& e) {
  const double g = c.node.gpus;
  const double comm_params = moved_params_per_gpu(p, chunks, e);
  const double opt_params = optimizer_params_per_gpu(p, comm_params, stage_expert_params(m, p, e.peak_stage));
  const double pcie = host_link_per_gpu_Bps(c);
  const OffGpuShares off = off_gpu_shares(p, e);
  if (off.optimizer < 1) e.time.optimizer_s += gpu_optimizer_step_time_s(c.node.gpu, t, p, opt_params * (1 - off.optimizer));
  if (off.optimizer > 0) {
    const double host_params = opt_params * off.optimizer;
    // The host's work for `gpus` GPUs' optimizer params `gpu_params` each.
    auto host_step_s = [&](double gpu_params, double gpus) {
      double step_s = cpu_adam_time_s(c.node.host, gpu_params * off.optimizer * gpus);
      if (off.optimizer_nvme > 0 && c.node.nvme) {
        const double bytes = gpu_params * off.optimizer_nvme * gpus * state_bytes_per_param(t, p.chunked()).optimizer;
        step_s += bytes / c.node.nvme->read_Bps + bytes / c.node.nvme->write_Bps;
      }
      return step_s;
    };
    if (chunks) {
      e.time.optimizer_s += host_step_s(opt_params, g);
    } else {  // each stage of the node steps its GPUs' params
      const double gpus_per_stage = std::min(g, static_cast<double>(p.tp * p.dp_cp()));
      std::vector<double> step_s;
      for (int s = 0; s < p.pp; ++s)
        step_s.push_back(host_step_s(optimizer_params_per_gpu(p, stage_n[static_cast<size_t>(s)], stage_expert_params(m, p, s)),
                                     gpus_per_stage));
      e.time.optimizer_s += host_steps_tail_s(c, p, m.tied_embeddings, step_s, stagger_s);
    }
    // Gradients out and params back at the step, each copy exposed (framework.h
    // optimizer_offload_copies); the copies after each backward are accumulate_copies'.
    const OptimizerOffloadCopies copies = optimizer_offload_copies(t, p, e.micro_batches);
    e.time.offload_s += host_params * (copies.step_to_host + copies.step_to_gpu) / pcie;
  }
  // Quantized GEMMs: the weights' casts once per iteration, before the first micro-batch's
  // forward (low_precision.h).
  e.time.optimizer_s += quantized_weight_cast_time_s(c.node.gpu, m, p, e.peak_stage);
  // Offloaded params come in for every micro-batch's forward and backward (ZeRO-3 over DP: per
  // layer, in dp_comm_time_s; otherwise per op, offloaded_param_fetch_exposed_s).
}

// Offloaded params without ZeRO-3's per-layer gathers come in for every op of the stage (a
// virtual stage of a micro-batch, forward or backward), as the simulator fetches them: on the
// copy engine, one op ahead, under the op before (static_iteration.cpp prefetch_params; in the
// steady state a forward's under the backward before it and a backward's under the forward). What
// shows is what a fetch outlasts that op, and the first fetch, which has nothing before it. Over
// PCIe without NVLink the op's TP collectives cross the links the fetches cross (the GPU's own;
// the switch's uplink, with every GPU behind it fetching, where the TP ring climbs it): they share
// them (prefetch_exposed_s).
double offloaded_param_fetch_exposed_s(const Cluster& c, const Training& t, const Plan& p, const ChunkFootprint* chunks,
                                       const Estimate& e, const LayerTime& lt, const StageCosts& costs,
                                       double layers_per_stage, double backward_copy_s) {
  const OffGpuShares off = off_gpu_shares(p, e);
  if (off.params <= 0 || (p.zero_stage >= 3 && p.dp_cp() > 1)) return 0;
  const double v = p.virtual_stages, ops_per_pass = static_cast<double>(e.micro_batches) * v;
  const double fetch_s = moved_params_per_gpu(p, chunks, e) / v * off.params * offloaded_param_fetch_bytes(t, p) /
                         host_link_per_gpu_Bps(c);
  const double layers = layers_per_stage / v, tp_forward_s = layers * costs.tp_forward_per_layer_s;
  const double tp_backward_s = layers * costs.tp_backward_per_layer_s();
  const int flows = c.node.nvlink || p.tp <= 1                 ? 0
                    : c.pcie_group_leaves_switch(p.tp, 1) ? std::max(1, c.node.pcie.gpus_per_root)
                                                          : 1;
  // m v forwards' fetches run under a backward (the first, under nothing) and the gradient
  // copies out in its chain (`backward_copy_s`: the other direction of the link), m v backwards'
  // under a forward; each from the end of that op's first task (its first layer's recompute or
  // backward; its first layer's forward), as the simulator issues them.
  const double backward_compute_s =
      layers * (lt.backward_s + lt.recompute_s) - (lt.recompute_s > 0 ? lt.recompute_s : lt.backward_s) + backward_copy_s;
  const double forward_compute_s = (layers - 1) * lt.forward_s;
  return fetch_s + (ops_per_pass - 1) * prefetch_exposed_s(backward_compute_s, tp_backward_s, fetch_s, flows) +
         ops_per_pass * prefetch_exposed_s(forward_compute_s, tp_forward_s, fetch_s, flows);
}

}  // namespace

PlanLayerCommunication layer_communication(const Job& job) {
  const Model& m = job.model;
  const Plan& p = job.plan;
  const StageCosts costs =
      micro_batch_costs(m, job.cluster, job.training, p, plan_layer_times(job.cluster.node, job.training.dtype, m, p));
  PlanLayerCommunication out;
  for (LayerCommunication* layer : {&out.dense, &out.moe}) {
    layer->tp_forward_s = costs.tp_forward_per_layer_s;
    layer->tp_backward_s = costs.tp_backward_per_layer_s();
    layer->cp_forward_s = costs.cp_forward_per_layer_s;
    layer->cp_backward_s = costs.cp_backward_per_layer_s();
  }
  out.moe.tp_backward_s -= costs.moe_tp_less_s;
  out.moe.exchange_forward_s = costs.moe_exchange_forward_s;
  out.moe.exchange_backward_s = costs.moe_exchange_s - costs.moe_exchange_forward_s;
  return out;
}

void estimate_into(const Model& m, const Cluster& c, const Training& t, const Plan& p, const ParamCount& params,
                   const std::vector<double>& stage_n, const IterationFlops& fl, const EstimateOptions& options,
                   const ChunkFootprint* chunks, Estimate& e) {
  e = Estimate{};
  e.params = params;
  e.micro_batches = t.global_batch / (int64_t{p.micro_batch} * p.dp);
  e.model_flops = fl.model;
  e.hardware_flops = fl.hardware;
  if (!estimate_memory(m, c, t, p, stage_n, options, chunks, e) && options.memory_only_if_rejected) return;

  // ---- time of one micro-batch on each stage; the slowest one paces the pipeline
  const PlanLayerTimes times = plan_layer_times(c.node, t.dtype, m, p);
  const StageCosts costs = micro_batch_costs(m, c, t, p, times);
  // Block recomputation: the layers that keep their activations cost as without recomputation.
  const bool block = p.recompute_layers > 0;
  PlanLayerTimes kept_times;
  StageCosts kept;
  if (block) {
    Plan keeping = p;
    keeping.recompute = Recompute::none;
    keeping.recompute_layers = 0;
    kept_times = plan_layer_times(c.node, t.dtype, m, keeping);
    kept = micro_batch_costs(m, c, t, keeping, kept_times);
  }
  const PipelineSlots slots = pipeline_slots(m, p, stage_n, costs, e.micro_batches, block ? &kept : nullptr);
  const StageSlot& slow = slots.slowest;
  const double mb = static_cast<double>(e.micro_batches);
  e.time.compute_s = mb * slow.compute_s + (mb - 1) * slow.accumulate_s;
  e.time.tp_comm_s = mb * slow.tp_comm_s;
  e.time.cp_comm_s = mb * slow.cp_comm_s;
  e.time.pp_comm_s = mb * pipeline_sends_per_micro_batch_s(p, costs.pp_comm_s, slow, e.micro_batches);
  e.time.bubble_s = slots.bubble_s;
  if (!chunks) e.time.bubble_s += (p.pp - 1.0) / p.virtual_stages * in_chain_reduction_per_micro_batch_s(m, c, t, p, e);
  const AccumulateCopies accumulated = accumulate_copies(m, c, t, p, chunks, e);
  // (ZeRO-3's gathers and offloaded params' fetches hide behind a layer's compute: under block
  // recomputation, behind that of a layer without recompute, the shorter one, so that less is
  // said hidden, never more.)
  const LayerTime& covering_layer = block ? kept_times.layer : times.layer;
  const StageCosts& covering_costs = block ? kept : costs;
  // ZeRO-2's bucketed reductions end each backward op: the fill and drain carry them too.
  const double bucketed_op_s =
      chunks ? 0 : bucketed_reductions_per_op_s(m, c, t, p, covering_layer, covering_costs, slow, e, accumulated);
  // (a pipelined FSDP stage reduces its last micro-batch only: its reduction ends the stage, not
  // every op of the fill and drain)
  if (reduces_every_micro_batch(p, p.dp_cp(), e.micro_batches)) e.time.bubble_s += (p.pp - 1.0) * bucketed_op_s;
  const double backward_copy_s = accumulated.in_chain ? accumulated.out_per_op_s : 0;
  e.time.dp_comm_s = dp_comm_time_s(m, c, t, p, covering_layer, covering_costs, slow.layers, chunks, e, backward_copy_s,
                                    bucketed_op_s, slots) +
                     tied_embedding_reduce_time_s(c, m, t, p);  // after the pipeline's flush
  optimizer_and_offload_time(m, c, t, p, stage_n, chunks, slots.shortest_backward_s / p.virtual_stages, e);
  const double fetched_s =
      offloaded_param_fetch_exposed_s(c, t, p, chunks, e, covering_layer, covering_costs, slow.layers, backward_copy_s);
  const double chain_s = e.time.compute_s + e.time.tp_comm_s + e.time.cp_comm_s + e.time.pp_comm_s + e.time.bubble_s + fetched_s;
  const double copied_s = accumulate_copies_exposed_s(accumulated, mb, chain_s);
  e.time.offload_s += fetched_s + copied_s;
  // The fetches' waits and the in-chain copies lengthen every op of the stage, so the pipeline's
  // fill and drain carry them too: (p - 1) / v micro-batches' worth beyond the m charged.
  if (!chunks) e.time.bubble_s += (p.pp - 1.0) / p.virtual_stages * (fetched_s + (accumulated.shows_whole ? copied_s : 0)) / mb;
  if (p.cpu_embedding) {  // PatrickStar's CPU embedding, serial with the GPU's work (cpu_embedding.h)
    const CpuEmbeddingCosts ce = cpu_embedding_costs(m, c, t, p);
    e.time.compute_s += ce.lookup_s + ce.backward_s;
    e.time.offload_s += (ce.to_gpu_bytes + ce.to_host_bytes) / host_link_per_gpu_Bps(c);
    e.time.dp_comm_s += ce.all_reduce_s;
    e.time.optimizer_s += ce.optimizer_s;
  }

  e.time.iteration_s = e.time.compute_s + e.time.tp_comm_s + e.time.cp_comm_s + e.time.pp_comm_s + e.time.bubble_s + e.time.dp_comm_s +
                       e.time.optimizer_s + e.time.offload_s;
  const double gpus = c.total_gpus();
  e.tokens_per_s = tokens_per_s(m, t.global_batch, e.time.iteration_s);
  e.tflops_per_gpu = e.hardware_flops / e.time.iteration_s / gpus / 1e12;
  e.mfu = e.model_flops / e.time.iteration_s / gpus / mfu_peak_flops(c.node.gpu, t.dtype, p);
  e.bubble_fraction = e.time.bubble_s / e.time.iteration_s;
}

int fewest_fitting_recompute_layers(const Model& m, const Plan& p, const std::function<bool(int)>& fits) {
  if (p.recompute != Recompute::full || p.recompute_layers != 0) return 0;
  Plan block = p;
  block.recompute_layers = 1;
  if (!recompute_layers_problem(block).empty()) return 0;
  // Layers of the largest virtual stage.
  const int largest = max_virtual_stage_layers(m.layers, p.pp, p.virtual_stages, p.stage_layers);
  if (largest < 2 || !fits(largest - 1)) return 0;
  int lo = 1, hi = largest - 1;  // hi fits; find the smallest that does
  while (lo < hi) {
    const int mid = lo + (hi - lo) / 2;
    if (fits(mid)) hi = mid;
    else lo = mid + 1;
  }
  return hi;
}

int fewest_fitting_recompute_layers(const Job& job) {
  Job trial = job;
  return fewest_fitting_recompute_layers(job.model, job.plan, [&trial](int n) {
    trial.plan.recompute_layers = n;
    return estimate(trial).fits;
  });
}

Estimate estimate(const Job& job) {
  const Plan& p = job.plan;
  std::vector<double> stage_params;
  for (int stage = 0; stage < p.pp; ++stage)
    stage_params.push_back(static_cast<double>(shard_parameters(job.model, plan_shard(p, stage))));
  Estimate e;
  const ChunkFootprint chunks = p.chunked() ? plan_chunk_footprint(job.model, job.training, p) : ChunkFootprint{};
  estimate_into(job.model, job.cluster, job.training, p, count_parameters(job.model), stage_params,
                plan_iteration_flops(job.model, job.training.global_batch, p), EstimateOptions{},
                p.chunked() ? &chunks : nullptr, e);
  return e;
}

}  // namespace starfish

#include "sim/schedule/static_iteration.h"

#include <algorithm>
#include <map>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "sim/cost/activations.h"
#include "sim/cost/context_parallel.h"
#include "sim/cost/low_precision.h"
#include "sim/cost/pipeline_order.h"
#include "sim/cost/framework.h"
#include "sim/cost/memory.h"
#include "sim/cost/moe.h"
#include "sim/cost/op_time.h"
#include "sim/cost/params.h"
#include "sim/schedule/layer_costs.h"
#include "sim/spec/pipeline_layout.h"

namespace starfish::schedule {
namespace {

using des::TaskId;
using des::kNone;

// Parameters of one GPU of stage `s`, per virtual stage (embedding with the first, head and final
// norm with the last).
std::vector<double> virtual_stage_params(const Model& m, const Plan& p, int s) {
  const Shard shard = plan_shard(p, s);
  std::vector<double> out(static_cast<size_t>(p.virtual_stages), 0.0);
  for (const ParamTensor& t : parameter_tensors(m, shard)) {
    int c = 0;
    if (t.layer < 0) c = 0;
    else if (t.layer >= m.layers) c = p.virtual_stages - 1;
    else
      while (c + 1 < p.virtual_stages &&
             t.layer >= virtual_stage_layer_range(m.layers, p.pp, p.virtual_stages, p.stage_layers, s, c + 1).first)
        ++c;
    out[static_cast<size_t>(c)] += static_cast<double>(t.elements);
  }
  return out;
}

// How many GPUs of the lead's node the lead of stage `s` stands for (its TP peers and the DP
// replicas that share the node): node-wide resources (CPU Adam, NVMe) serve all of them.
int gpus_represented_on_node(const Job& job, int lead, int s) {
  const int g = job.cluster.node.gpus, node = lead / g, per_stage = job.plan.tp * job.dp_cp();
  int n = 0;
  for (int r = node * g; r < (node + 1) * g; ++r)
    if (r / per_stage == s) ++n;
  return n;
}

class StaticIterationBuilder {
 public:
  StaticIterationBuilder(const Job& job, des::Engine& eng, const BuildOptions& opt) : job_(job), eng_(eng), opt_(opt) {}

  BuiltIteration build() {
    intern_categories(eng_, out_);
    setup_costs();
    const int P = job_.plan.pp, V = job_.plan.virtual_stages, M = static_cast<int>(job_.micro_batches());
    first_f_.assign(static_cast<size_t>(P * V * M), kNone);
    last_f_ = first_f_;
    first_b_ = first_f_;
    last_b_ = first_f_;
    next_f_ = first_f_;
    next_b_ = first_f_;
    before_f_ = first_f_;
    before_b_ = first_f_;
    out_.stages.resize(static_cast<size_t>(P));
    for (int s = 0; s < P; ++s) build_stage(s);
    connect_pipeline();
    for (int s = 0; s < P; ++s) build_data_parallel_and_optimizer(s);
    return std::move(out_);
  }

 private:
  void setup_costs() {
    const LayerCosts c = layer_costs(job_);
    act_bytes_ = c.act_bytes;
    fetch_bytes_ = offloaded_param_fetch_bytes(job_.training, job_.plan);
    assembly_bytes_ = zero3_gather_assembly_bytes_per_param(job_.training, job_.plan);
    grad_reduce_bytes_ = grad_buffers(job_.training, job_.plan).reduce_bytes;
    offload_copies_ = optimizer_offload_copies(job_.training, job_.plan, job_.micro_batches());
    layer_ = c.layer;
    output_s_ = c.output_s;
    boundary_bytes_ = c.boundary_bytes;
    stored_ = c.stored_bytes;
    full_ = c.full_bytes;
    embedding_bytes_ = c.embedding_bytes;
    output_bytes_ = c.output_bytes;
    costs_ = c;
    ring_ = cp_ring(job_.cluster, job_.model, job_.plan, act_bytes_, layer_);
  }

  size_t at(int gv, int mb) const { return static_cast<size_t>(gv) * static_cast<size_t>(job_.micro_batches()) + mb; }

  // A task label; the name is formatted into a scratch buffer the engine copies (cut at its size).
  template <typename... Args>
  des::Label label(des::CategoryId c, fmt::format_string<Args...> format, Args&&... args) {
    const auto written = fmt::format_to_n(name_, sizeof name_ - 1, format, std::forward<Args>(args)...);
    return des::Label{c, std::string_view(name_, std::min(written.size, sizeof name_ - 1))};
  }

  // Appends `t` to the stage's chain: it runs after the previous task of the chain.
  void chain(TaskId t) {
    if (chain_last_ != kNone) eng_.depends(t, chain_last_);
    if (op_first_ == kNone) op_first_ = t;
    chain_last_ = t;
  }

  // A pass's TP collectives of layer `layer` (attention's and the MLP's), or `all_reduces` of
  // them, over the stage's TP group on the lead's chain: all-reduces of its hidden states as
  // the framework issues them (with SP an all-gather and a reduce-scatter, the same ring steps),
  // run as one task that pays each one's step latencies as the estimate counts them
  // (CollectiveOptions::repeats); a half is an all-gather (SP's re-gathered QKV input of an MoE
  // layer).
  void tp_collective(int s, int mb, int layer, des::CategoryId c, double all_reduces = 2) {
    if (job_.plan.tp == 1 || all_reduces <= 0) return;
    des::CollectiveOptions o;
    o.algo = opt_.tp_algo;
    const double boundary = costs_.tp_bytes / 2;
    o.repeats = static_cast<int>(all_reduces);
    if (o.repeats > 0)
      chain(eng_.collective(CollectiveKind::all_reduce, tp_group_, boundary * o.repeats,
                            label(c, "tp s{} mb{} L{}", s, mb, layer), o));
    if (all_reduces > o.repeats) {
      o.repeats = 1;
      chain(eng_.collective(CollectiveKind::all_gather, tp_group_, boundary, label(c, "tp s{} mb{} L{}", s, mb, layer), o));
    }
  }

  // One pipeline stage: its lead and TP group, the states it keeps resident, its streams, then
  // the ops of its schedule chained in order on the lead's compute stream.
  void build_stage(int s) {
    const Plan& p = job_.plan;
    StageInfo& st = out_.stages[static_cast<size_t>(s)];
    st.lead_gpu = job_.global_rank(0, 0, s);
    for (int t = 0; t < p.tp; ++t) st.tp_group.push_back(job_.global_rank(t, 0, s));
    tp_group_ = eng_.group(st.tp_group);
    place_model_states(st, s);
    stage_params_ = virtual_stage_params(job_.model, p, s);
    accumulated_params_ = stage_params_;
    if (p.zero_stage >= 2) for (double& x : accumulated_params_) x /= job_.dp_cp();
    open_streams(st, s);
    chain_last_ = kNone;
    PreviousOp prev;
    for (const PipelineOp& op : stage_order(p.schedule, p.pp, s, static_cast<int>(job_.micro_batches()), p.virtual_stages))
      add_op(st, s, op, prev);
    st.last_backward = chain_last_;
  }

  // The model states a GPU of stage `s` keeps for the whole iteration (and the pipeline's
  // boundary buffers), and its share of the host's and the NVMe's.
  void place_model_states(StageInfo& st, int s) {
    const Plan& p = job_.plan;
    const Shard shard = plan_shard(p, s);
    const double n = static_cast<double>(shard_parameters(job_.model, shard));
    // (static plans only: a chunked plan's iteration is build_chunked_iteration's)
    const ModelStates ms = stage_model_states(job_.model, job_.training, p, s, n,
                                              static_cast<double>(count_parameters(job_.model).per_layer) / p.tp, nullptr);
    st.model_state_bytes = ms.total_gpu() + pipeline_buffer_bytes(job_.model, p, act_bytes_) +
                           framework_buffer_bytes(job_.training, job_.plan) +
                           moe_dispatch_buffer_bytes(job_.model, p, act_bytes_) + quantized_weight_cache_bytes(job_.model, p, s);
    stage_cpu_bytes_.push_back(ms.params.cpu + ms.grads.cpu + ms.optimizer.cpu);
    stage_nvme_bytes_.push_back(ms.params.nvme + ms.grads.nvme + ms.optimizer.nvme);
  }

  // The stage's streams beside the lead's compute stream: every TP rank's DP group reduces on a
  // stream of its own (when reductions overlap compute), and ZeRO-3 / FSDP gather each layer's
  // parameters on one, one layer ahead.
  void open_streams(const StageInfo& st, int s) {
    const Plan& p = job_.plan;
    const int lead = st.lead_gpu, node_gpus = job_.cluster.node.gpus;
    gather_layers_ = p.zero_stage >= 3 && job_.dp_cp() > 1;
    // ZeRO-2's overlapped buckets or DeepSpeed ZeRO-3's (each 0 where the other applies).
    reduction_bucket_params_ = zero2_bucket_params(p, job_.dp_cp()) + zero3_bucket_params(p, job_.dp_cp());
    std::vector<des::ResourceId>& dp_streams = dp_streams_.emplace_back();
    for (int t = 0; t < p.tp && job_.dp_cp() > 1; ++t)
      dp_streams.push_back(eng_.add_stream("dp s" + std::to_string(s) + " t" + std::to_string(t), (lead + t) / node_gpus, lead + t));
    // Every expert rank reduces its experts over its expert-data-parallel group on a stream of
    // its GPU's own: NCCL runs each process group's collectives on its own stream, so they run
    // beside the GPU's dense reductions (sharing its links), and never wait behind, nor hold
    // up, the token exchanges and TP collectives of the stage's chain.
    std::vector<des::ResourceId>& expert_streams = expert_dp_streams_.emplace_back();
    for (int r = 0; r < p.ep * p.expert_tp() && expert_data_parallel(p) > 1; ++r)
      expert_streams.push_back(eng_.add_stream("expert dp s" + std::to_string(s) + " r" + std::to_string(r), (lead + r) / node_gpus, lead + r));
    fetch_params_ = p.offload.params != Tier::gpu && !gather_layers_;
    // Over PCIe every TP rank's gathers are simulated: their DP groups share the switches'
    // uplinks, and each GPU's one link with its TP ring. Elsewhere the lead's stand for them
    // (their own NVLink ports and NIC rails; link_for_group's rule).
    zero_streams_.clear();
    const int gathering_ranks = gather_layers_ ? (job_.cluster.node.nvlink ? 1 : p.tp) : 0;
    for (int t = 0; t < gathering_ranks; ++t)
      zero_streams_.push_back(eng_.add_stream("zero3 gather s" + std::to_string(s) + (t > 0 ? " t" + std::to_string(t) : ""),
                                              (lead + t) / node_gpus, lead + t));
    prev_gathers_.assign(zero_streams_.size(), kNone);
    prev_fetch_ = kNone;
    recent_compute_.clear();
  }

  // The stage's previous op on its chain.
  struct PreviousOp {
    TaskId first = kNone, prefetch = kNone;
    bool forward = true;
    size_t index = 0;  // at(virtual stage, micro-batch)
  };

  // One op of the stage's schedule: its params' prefetch, its layers, and (backward) the
  // gradient accumulation and per-micro-batch reduction; then its place in the pipeline.
  void add_op(StageInfo& st, int s, const PipelineOp& op, PreviousOp& prev) {
    const Plan& p = job_.plan;
    const int P = p.pp, V = p.virtual_stages, gv = op.virtual_stage * P + s, mb = op.micro_batch;
    op_first_ = kNone;
    const double params = stage_params_[static_cast<size_t>(op.virtual_stage)];
    const TaskId prefetch = prefetch_params(st.lead_gpu, s, op, params, prev);
    const LayerRange range = virtual_stage_layer_range(job_.model.layers, P, V, p.stage_layers, s, op.virtual_stage);
    const StageOp so{s, op.virtual_stage, mb, gv == P * V - 1, range.first, range.count, params / range.count};
    if (op.forward) {
      forward_op(st, so);
    } else {
      op_grads_ready_.clear();
      backward_op(st, so);
      // From the second micro-batch on, the virtual stage's weight gradients are added into its buffer.
      if (mb > 0)
        chain(eng_.compute(st.lead_gpu,
                           grad_accumulate_time_s(job_.cluster.node.gpu, accumulated_params_[static_cast<size_t>(op.virtual_stage)], act_bytes_),
                           label(out_.bwd, "grad acc s{} c{} mb{}", s, op.virtual_stage, mb)));
      // (ZeRO-3 a layer at a time reduced each layer in backward_layer; its op may wait for them.)
      if (reduces_micro_batch(mb) && (!gather_layers_ || reduction_bucket_params_ > 0))
        reduce_micro_batch(s, op.virtual_stage, mb, params);
      else if (reduces_micro_batch(mb) && zero3_backward_waits_for_reductions(p))
        wait_for_layer_reductions(s, op.virtual_stage, mb);
      if (offload_copies_.accumulate_to_host > 0) accumulate_on_host(st.lead_gpu, s, op.virtual_stage, mb, params);
    }
    if (prefetch != kNone) eng_.depends(op_first_, prefetch);
    if (st.first_task == kNone) st.first_task = op_first_;
    const size_t i = at(gv, mb);
    // The stage's previous op is followed by this one: a blocking send of the previous op
    // holds this one back (connect_pipeline).
    if (prev.first != kNone) {
      (prev.forward ? next_f_ : next_b_)[prev.index] = op_first_;
      (op.forward ? before_f_ : before_b_)[i] = (prev.forward ? last_f_ : last_b_)[prev.index];
    }
    (op.forward ? first_f_ : first_b_)[i] = op_first_;
    (op.forward ? last_f_ : last_b_)[i] = chain_last_;
    if (!op.forward) last_backward_of_[{s, op.virtual_stage}] = chain_last_;
    prev = PreviousOp{op_first_, prefetch, op.forward, i};
  }

  // Offloaded params arrive from the host one op ahead: the copy for this op starts once the
  // previous op has started and the previous copy is done. kNone when params stay on the GPU.
  TaskId prefetch_params(int lead, int s, const PipelineOp& op, double params, const PreviousOp& prev) {
    if (!fetch_params_) return kNone;
    const TaskId prefetch = eng_.copy(lead, des::CopyDir::H2D, params * fetch_bytes_ * pcie_sharers(),
                                      label(out_.offload, "fetch params s{} c{} mb{}", s, op.virtual_stage, op.micro_batch));
    if (prev.first != kNone) eng_.depends(prefetch, prev.first);
    if (prev.prefetch != kNone) eng_.depends(prefetch, prev.prefetch);
    return prefetch;
  }

  // One forward or backward op of a stage's schedule: virtual stage `virtual_stage` of micro-batch `mb`.
  struct StageOp {
    int stage, virtual_stage, mb;
    bool last_virtual;    // the model's last virtual stage: it carries the output layer
    int first_layer;      // the virtual stage's first layer in the model
    int layers;           // its transformer layers (uneven stages differ)
    double layer_params;  // parameters of one of its layers on this GPU
  };

  void forward_op(StageInfo& st, const StageOp& o) {
    for (int l = 0; l < o.layers; ++l) forward_layer(st, o, l);
    if (o.last_virtual) {
      const TaskId x = eng_.compute(st.lead_gpu, output_forward_s(output_s_), label(out_.fwd, "F s{} head mb{}", o.stage, o.mb));
      chain(x);
      st.memory.push_back({x, output_bytes_});
    }
  }

  // Model layer `layer`'s times: the dense or the MoE layer's, less what a sliding window saves.
  // Model layer `layer`'s times: the dense or the MoE layer's, less what a sliding window saves,
  // plus what its GEMMs cost more where it stays in bf16 under fp8.
  LayerTime time_of_layer(int layer) const {
    const bool moe = job_.model.moe_layer(layer);
    LayerTime t = moe ? costs_.moe_layer : layer_;
    if (job_.model.windowed_layer(layer)) t = t - costs_.window_saving;
    if (job_.plan.bf16_layer(layer, job_.model.layers)) t = t + (moe ? costs_.moe_bf16_extra : costs_.bf16_extra);
    return t;
  }

  // The activations model layer `layer` keeps with the plan's recomputation (`stored`) and
  // without (`full`): the dense or MoE layer's, more where it stays in bf16 under fp8.
  std::pair<double, double> layer_bytes(int layer) const {
    const bool moe = job_.model.moe_layer(layer);
    double stored = moe ? costs_.moe_stored_bytes : stored_, full = moe ? costs_.moe_full_bytes : full_;
    if (job_.plan.bf16_layer(layer, job_.model.layers)) {
      const Bf16LayerBytes& b = costs_.bf16_bytes;
      stored += moe ? b.moe_stored : b.stored;
      full += moe ? b.moe_full : b.full;
    }
    return {stored, full};
  }

  // Layer `l` of the op, forward: its gathered params (ZeRO-3), its compute, the activations it
  // keeps (all of them where it does not recompute), its TP collective and (MoE) its token exchange.
  void forward_layer(StageInfo& st, const StageOp& o, int l) {
    const TaskId g = gather_layer(st.lead_gpu, o, l);
    const bool moe = job_.model.moe_layer(o.first_layer + l);
    const LayerTime time = time_of_layer(o.first_layer + l);
    const TaskId x = eng_.compute(st.lead_gpu, time.forward_s - ring_core_s(time.core_forward_s),
                                  label(out_.fwd, "F s{} c{} mb{} L{}", o.stage, o.virtual_stage, o.mb, l));
    if (g != kNone) eng_.depends(x, g);
    if (o.mb == 0) gather_params_under_forward(o, l, x);
    chain(x);
    computed(x);
    cp_ring_pass(st, o, l, ring_.forward, out_.fwd);
    const bool embedding = o.first_layer + l == 0;  // the model's first layer also keeps the embedding's
    const auto [stored, full] = layer_bytes(o.first_layer + l);
    const double kept = job_.plan.recomputes_layer(l) ? stored : full;
    st.memory.push_back({x, kept + (embedding ? embedding_bytes_ : 0)});
    tp_collective(o.stage, o.mb, l, out_.tp);
    if (moe) expert_exchange(o, l);
  }

  void backward_op(StageInfo& st, const StageOp& o) {
    if (o.last_virtual) {
      const TaskId x = eng_.compute(st.lead_gpu, output_backward_s(output_s_), label(out_.bwd, "B s{} head mb{}", o.stage, o.mb));
      chain(x);
      st.memory.push_back({x, -output_bytes_});
    }
    for (int l = o.layers - 1; l >= 0; --l) backward_layer(st, o, l);
    if (o.last_virtual && costs_.metric_s > 0) {
      // The trainer's training metrics over the micro-batch's logits, once its backward is done
      // (Plan::train_metric_passes; data-parallel plans only, so the whole backward is this op's).
      const TaskId x = eng_.compute(st.lead_gpu, costs_.metric_s, label(out_.bwd, "metrics s{} mb{}", o.stage, o.mb));
      chain(x);
      st.memory.push_back({x, 0, costs_.metric_bytes});
    }
  }

  // Layer `l` of the op, backward: its gathered params (ZeRO-3), its recompute if it recomputes
  // (Plan::recomputes_layer; with full recompute the forward's collectives again), its backward,
  // the activations it frees (all of the layer's: the kept or rebuilt ones), its TP
  // collective and token exchange, and (ZeRO-3) its gradients' reduce-scatter.
  void backward_layer(StageInfo& st, const StageOp& o, int l) {
    const Plan& p = job_.plan;
    const int lead = st.lead_gpu;
    const TaskId g = gather_layer(lead, o, l);
    const bool moe = job_.model.moe_layer(o.first_layer + l);
    const LayerTime time = time_of_layer(o.first_layer + l);
    const auto [stored, full] = layer_bytes(o.first_layer + l);
    TaskId first = kNone;
    const bool recomputes = p.recomputes_layer(l);
    if (recomputes) {
      const bool full_ring = p.recompute == Recompute::full;  // the whole forward again, its ring included
      first = eng_.compute(lead, time.recompute_s - (full_ring ? ring_core_s(time.core_forward_s) : 0),
                           label(out_.recompute, "R s{} c{} mb{} L{}", o.stage, o.virtual_stage, o.mb, l));
      chain(first);
      st.memory.push_back({first, full - stored});  // the layer's activations, rebuilt
      if (full_ring) cp_ring_pass(st, o, l, ring_.forward, out_.recompute);
      tp_collective(o.stage, o.mb, l, out_.tp, p.recomputed_tp_halves(moe));
      if (recompute_reruns_token_exchange(p) && moe) expert_exchange(o, l);
    }
    const TaskId b = eng_.compute(lead, time.backward_s - ring_core_s(time.core_backward_s),
                                  label(out_.bwd, "B s{} c{} mb{} L{}", o.stage, o.virtual_stage, o.mb, l));
    if (first == kNone) first = b;
    if (g != kNone) eng_.depends(first, g);
    chain(b);
    // The last micro-batch's layer gradients, in backward order, where the reduction buckets them;
    // every micro-batch's where its reduction is bucketed (ZeRO-2, DeepSpeed ZeRO-3).
    if (o.mb + 1 == job_.micro_batches() && dp_bucket_params(p, o.stage, o.virtual_stage, job_.dp_cp()) > 0)
      grads_ready_[{o.stage, o.virtual_stage}].push_back(b);
    if (reduction_bucket_params_ > 0) op_grads_ready_.push_back(b);
    computed(b);
    cp_ring_pass(st, o, l, ring_.backward, out_.bwd);
    const bool embedding = o.first_layer + l == 0;
    // While it runs, its gradients beside them; after it, a layer that recomputed frees its
    // rebuilt activations, one that did not the ones it kept: either way its full bytes
    // (without recomputation stored and full are the same).
    st.memory.push_back({b, 0, moe ? costs_.moe_backward_transient_bytes : costs_.backward_transient_bytes});
    st.memory.push_back({b, -full - (embedding ? embedding_bytes_ : 0)});
    // (with SP, also the column-parallel inputs gathered again: framework.h)
    tp_collective(o.stage, o.mb, l, out_.tp, 2 + sequence_parallel_regather_all_reduces(job_.plan, moe));
    if (moe) expert_exchange(o, l);
    // ZeRO-3 / FSDP reduce-scatter each layer's gradients as soon as its backward is done,
    // overlapped (FSDP always; DeepSpeed's stage 3 defaults overlap_comm to true, and reduces
    // in buckets: zero3_bucket_params, after the op).
    if (gather_layers_ && reduction_bucket_params_ <= 0 && reduces_micro_batch(o.mb)) reduce_layer(o, l);
  }

  // The part of a layer's attention core that runs as the ring's blocks (all of it with context
  // parallelism, none without).
  double ring_core_s(double core_s) const { return job_.plan.cp > 1 ? core_s : 0; }

  // One pass of a layer's ring attention (context parallelism, sim/cost/context_parallel.h) on
  // the lead's chain: step k's block of attention and its send start once step k-1's are both
  // done, and the layer goes on after the last of both. Only the lead is simulated: it receives
  // over the ring's edge from the group's last CP rank, the edge that crosses nodes when the group
  // spans several, its flow carrying the sends of the TP peers that share its NIC.
  void cp_ring_pass(const StageInfo& st, const StageOp& o, int l, const CpRingPass& pass, des::CategoryId compute) {
    if (job_.plan.cp <= 1) return;
    const des::Topology& topo = eng_.topology();
    const int lead = st.lead_gpu, from = job_.global_rank(0, 0, o.stage, job_.plan.cp - 1);
    const bool across_nodes = job_.cluster.over_nics(from, lead);
    const double sharers = across_nodes ? nic_sharers() : lead_send_pcie_scale(job_.cluster, from, lead, job_.plan.tp);
    TaskId sent = kNone;
    for (size_t k = 0; k < pass.send_bytes.size(); ++k) {
      const TaskId before = chain_last_, before_sent = sent;
      const TaskId block = eng_.compute(lead, pass.block_s,
                                        label(compute, "attn s{} c{} mb{} L{} cp{}", o.stage, o.virtual_stage, o.mb, l, k));
      chain(block);
      if (before_sent != kNone) eng_.depends(block, before_sent);
      sent = kNone;
      if (pass.send_bytes[k] <= 0) continue;
      sent = eng_.transfer(topo.gpu(from), topo.gpu(lead), pass.send_bytes[k] * sharers,
                           label(out_.cp, "kv s{} c{} mb{} L{} cp{}", o.stage, o.virtual_stage, o.mb, l, k));
      if (before != kNone) eng_.depends(sent, before);
      if (before_sent != kNone) eng_.depends(sent, before_sent);
    }
    if (sent == kNone) return;
    // The last send (dK, dV home) ends the pass too.
    const TaskId done = eng_.delay(0, label(out_.cp, "kv done s{} c{} mb{} L{}", o.stage, o.virtual_stage, o.mb, l));
    eng_.depends(done, sent);
    chain(done);
  }

  // GPUs whose host copies share one PCIe root (a switch or root port): every rank offloads
  // alike, and only each stage's lead is simulated, so its copies carry the bytes of the
  // stage's other GPUs behind its root (TP, CP and DP ranks: global_rank puts a stage's GPUs
  // side by side) -- the analytic tier's PCIe rate divided by gpus_per_root. Where a root holds
  // GPUs of several stages (fewer GPUs a stage than a root has), their leads are all simulated
  // and share its link in the simulation itself: each stands for its own stage's GPUs only.
  double pcie_sharers() const {
    const Cluster& c = job_.cluster;
    const int stage_gpus = job_.plan.tp * job_.plan.cp * job_.dp();
    return std::clamp(std::min(c.node.pcie.gpus_per_root, stage_gpus), 1, c.node.gpus);
  }

  // GPUs whose inter-node sends share one NIC when a stage's TP ranks all send at once.
  int nic_sharers() const {
    const Cluster& c = job_.cluster;
    return c.node.nic ? std::clamp(c.node.gpus / std::max(1, c.node.nic->count), 1, job_.plan.tp) : 1;
  }

  // An MoE layer's token exchange of one pass, on the lead's chain (Megatron-core's dispatcher
  // waits for it): dispatch and combine, all-to-alls over the lead's EP group, each with the
  // expert-TP all-gather of the dispatched tokens when ETP > 1.
  void expert_exchange(const StageOp& o, int l) {
    const Plan& p = job_.plan;
    const int base = job_.global_rank(0, 0, o.stage), etp = p.expert_tp();
    if (p.ep > 1) {
      std::vector<int> ep_members;
      for (int j = 0; j < p.ep; ++j) ep_members.push_back(base + j * etp);
      const double bytes = costs_.dispatch_bytes * lead_group_pcie_scale(job_.cluster, ep_members);
      const des::GroupId ep = eng_.group(std::move(ep_members));
      for (const char* what : {"dispatch", "combine"})
        chain(eng_.collective(CollectiveKind::all_to_all, ep, bytes,
                              label(out_.ep, "{} s{} mb{} L{}", what, o.stage, o.mb, o.first_layer + l)));
    }
    if (etp > 1) {
      std::vector<int> etp_members;
      for (int j = 0; j < etp; ++j) etp_members.push_back(base + j);
      const des::GroupId g = eng_.group(std::move(etp_members));
      for (int k = 0; k < 2; ++k)
        chain(eng_.collective(CollectiveKind::all_gather, g, costs_.etp_gather_bytes,
                              label(out_.ep, "etp gather s{} mb{} L{}", o.stage, o.mb, o.first_layer + l)));
    }
  }

  // The expert-data-parallel group `r` (0 .. EP x ETP - 1) of stage `s`: the stage's ranks r,
  // r + EP x ETP, ... (expert layout: ETP innermost, then EP, then expert DP).
  des::GroupId edp_group(int r, int s) {
    const Plan& p = job_.plan;
    std::vector<int> members;
    const int stride = p.ep * p.expert_tp(), base = job_.global_rank(0, 0, s);
    for (int j = 0; j < expert_data_parallel(p); ++j) members.push_back(base + r + j * stride);
    return eng_.group(std::move(members));
  }

  // Reduces the routed experts' gradients (`params` per GPU) of every expert-DP group of stage
  // `s` after `after`; returns the lead's reduction (kNone when there is none).
  TaskId reduce_experts(int s, CollectiveKind kind, double params, TaskId after, const char* what, int ch, int mb) {
    const Plan& p = job_.plan;
    if (params <= 0 || expert_data_parallel(p) <= 1) return kNone;
    TaskId lead_reduction = kNone;
    for (int r = 0; r < p.ep * p.expert_tp(); ++r) {
      des::CollectiveOptions o;
      o.algo = gradient_group_algo(expert_data_parallel(p), p.ep * p.expert_tp());
      o.stream = expert_dp_streams_[static_cast<size_t>(s)][static_cast<size_t>(r)];
      const TaskId x = eng_.collective(kind, edp_group(r, s), params * grad_reduce_bytes_,
                                       label(out_.dp, "{} s{} c{} mb{} e{}", what, s, ch, mb, r), o);
      if (after != kNone) eng_.depends(x, after);
      if (r == 0) lead_reduction = x;
    }
    return lead_reduction;
  }

  // Routed-expert parameters of virtual stage `ch` of stage `s` on one GPU.
  double virtual_stage_expert_params(int s, int ch) const {
    const Plan& p = job_.plan;
    if (!job_.model.is_moe()) return 0;
    const LayerRange r = virtual_stage_layer_range(job_.model.layers, p.pp, p.virtual_stages, p.stage_layers, s, ch);
    int moe = 0;
    for (int l = r.first; l < r.first + r.count; ++l) moe += job_.model.moe_layer(l) ? 1 : 0;
    return moe * static_cast<double>(moe_layer_expert_params(job_.model, p.ep, p.expert_tp()));
  }

  // ZeRO-3 / FSDP: all-gathers layer `l`'s parameters over DP on the stage's gather stream, after
  // the previous gather and once the compute two layers back is done: at most two layers are
  // gathered at a time, the next one while the current one computes (FSDP's forward and
  // backward prefetch with limit_all_gathers; DeepSpeed stage 3's prefetch bucket).
  // With the params offloaded (ZeRO-Infinity's offload_param), each rank first copies its shard
  // of the layer in from the host, for every forward and backward of every micro-batch: the
  // coordinator frees the gathered params after use (DeepSpeed stage 3).
  TaskId gather_layer(int lead, const StageOp& o, int l) {
    if (!gather_layers_) return kNone;
    TaskId fetch = kNone;
    if (job_.plan.offload.params != Tier::gpu) {
      fetch = eng_.copy(lead, des::CopyDir::H2D, o.layer_params / job_.dp_cp() * fetch_bytes_ * pcie_sharers(),
                        label(out_.offload, "zero3 fetch s{} c{} mb{} L{}", o.stage, o.virtual_stage, o.mb, l));
      if (prev_fetch_ != kNone) eng_.depends(fetch, prev_fetch_);
      if (recent_compute_.size() >= 2) eng_.depends(fetch, recent_compute_[recent_compute_.size() - 2]);
      prev_fetch_ = fetch;
    }
    des::CollectiveOptions co;
    // Over the NIC rails of every member on a node, as the reduce-scatters and the ZeRO-1/2
    // gathers run (a flat ring would cross each node on one GPU's NIC; the analytic tier's
    // link_for_group gives the group all its members' NICs).
    co.algo = dp_algo();
    TaskId lead_gather = kNone;
    for (size_t t = 0; t < zero_streams_.size(); ++t) {
      co.stream = zero_streams_[t];
      const TaskId g =
          eng_.collective(CollectiveKind::all_gather, dp_group(static_cast<int>(t), o.stage), o.layer_params * act_bytes_,
                          t == 0 ? label(out_.dp, "zero3 gather s{} c{} mb{} L{}", o.stage, o.virtual_stage, o.mb, l)
                                 : label(out_.dp, "zero3 gather s{} c{} mb{} L{} t{}", o.stage, o.virtual_stage, o.mb, l, t),
                          co);
      if (prev_gathers_[t] != kNone) eng_.depends(g, prev_gathers_[t]);
      if (fetch != kNone) eng_.depends(g, fetch);
      if (recent_compute_.size() >= 2) eng_.depends(g, recent_compute_[recent_compute_.size() - 2]);
      prev_gathers_[t] = g;
      if (t == 0) lead_gather = g;
    }
    // The framework's assembly of the gathered params, behind the gather on its stream.
    if (assembly_bytes_ <= 0) return lead_gather;
    const TaskId a = eng_.delay(memory_bound_time_s(job_.cluster.node.gpu, o.layer_params * assembly_bytes_),
                                label(out_.dp, "zero3 assemble s{} c{} mb{} L{}", o.stage, o.virtual_stage, o.mb, l), zero_streams_[0]);
    eng_.depends(a, lead_gather);
    prev_gathers_[0] = a;
    return a;
  }

  void computed(TaskId x) {
    recent_compute_.push_back(x);
    if (recent_compute_.size() > 2) recent_compute_.erase(recent_compute_.begin());
  }

  // `kind` of `bytes` over every TP rank's DP group of stage `s` (one group a TP rank), by
  // dp_algo, each after `after` (kNone: nothing) and, `on_dp_streams`, on its rank's DP stream
  // (else on its GPU's collective stream); `name(t)` labels rank t's. Returns the lead's (TP
  // rank 0): the simulator follows its GPU, the other ranks' share the links beside it.
  template <class Name>
  TaskId dp_collective_on_every_tp_rank(CollectiveKind kind, int s, double bytes, TaskId after, bool on_dp_streams,
                                        Name&& name) {
    const std::vector<des::ResourceId>& streams = dp_streams_[static_cast<size_t>(s)];
    TaskId lead = kNone;
    for (int t = 0; t < job_.plan.tp; ++t) {
      des::CollectiveOptions o;
      o.algo = dp_algo();
      if (on_dp_streams) o.stream = streams[static_cast<size_t>(t)];
      const TaskId x = eng_.collective(kind, dp_group(t, s), bytes, name(t), o);
      if (after != kNone) eng_.depends(x, after);
      if (t == 0) lead = x;
    }
    return lead;
  }

  // Reduce-scatters one layer's gradients over every TP rank's DP group, on the DP streams.
  void reduce_layer(const StageOp& o, int l) {
    last_reduction_[{o.stage, o.virtual_stage}] = dp_collective_on_every_tp_rank(
        CollectiveKind::reduce_scatter, o.stage, o.layer_params * grad_reduce_bytes_, chain_last_, true,
        [&](int t) { return label(out_.dp, "grads s{} c{} mb{} L{} t{}", o.stage, o.virtual_stage, o.mb, l, t); });
  }

  // ZeRO-3's backward ends waiting for its layers' reduce-scatters where the framework's does
  // (zero3_backward_waits_for_reductions: DeepSpeed, FSDP): the last layer's, which no backward
  // follows, shows in every op. The lead's stream is FIFO: its last reduction is all of them.
  void wait_for_layer_reductions(int s, int ch, int mb) {
    const TaskId reduced = eng_.delay(0, label(out_.dp, "grads reduced s{} c{} mb{}", s, ch, mb));
    eng_.depends(reduced, last_reduction_.at({s, ch}));
    chain(reduced);
  }

  // ZeRO-2 and -3 reduce-scatter gradients during or after a backward: every micro-batch's, or,
  // where a pipelined FSDP stage accumulates them unsharded, its last micro-batch's
  // (reduces_every_micro_batch); ZeRO-0/1 reduce once, after the stage's last backward or the flush.
  bool reduces_in_backward() const { return job_.plan.zero_stage >= 2 && job_.dp_cp() > 1; }
  bool reduces_micro_batch(int mb) const {
    return reduces_in_backward() &&
           (reduces_every_micro_batch(job_.plan, job_.dp_cp(), job_.micro_batches()) || mb + 1 == job_.micro_batches());
  }

  // Reduce-scatters virtual stage `ch`'s gradients of one micro-batch over every TP rank's DP
  // group. Overlapped, in buckets under the backward (reduce_micro_batch_in_buckets); otherwise
  // after it, the lead's reduction in its chain (the next compute waits) and the other ranks' run
  // beside it; the next compute waits for the micro-batch's expert reductions as for its dense one
  // (DeepSpeed reduces both in its backward's buckets, overlap_comm off): the two run side by
  // side, sharing the links they share.
  void reduce_micro_batch(int s, int ch, int mb, double virtual_stage_params) {
    if (reduction_bucket_params_ > 0) return reduce_micro_batch_in_buckets(s, ch, mb, virtual_stage_params);
    const TaskId before = chain_last_;
    const TaskId lead_reduction = dp_collective_on_every_tp_rank(
        CollectiveKind::reduce_scatter, s, (virtual_stage_params - virtual_stage_expert_params(s, ch)) * grad_reduce_bytes_,
        before, false, [&](int t) { return label(out_.dp, "grads s{} c{} mb{} t{}", s, ch, mb, t); });
    const TaskId experts = reduce_experts(s, CollectiveKind::reduce_scatter, virtual_stage_expert_params(s, ch), before, "expert grads", ch, mb);
    if (experts != kNone) expert_reductions_[s].push_back(experts);
    TaskId reduced = lead_reduction;
    if (experts != kNone) {
      reduced = eng_.delay(0, label(out_.dp, "grads reduced s{} c{} mb{}", s, ch, mb));
      eng_.depends(reduced, lead_reduction);
      eng_.depends(reduced, experts);
    }
    if (op_first_ == kNone) op_first_ = lead_reduction;
    chain_last_ = reduced;
    last_reduction_[{s, ch}] = lead_reduction;
  }

  // ZeRO-2 with overlapped reduction (zero2_bucket_params) and DeepSpeed's ZeRO-3
  // (zero3_bucket_params): the op's dense gradients are reduce-scattered in buckets of
  // reduction_bucket_params_ on every TP rank's DP stream as its layers' backwards produce them
  // (bucket_layout, the remainder last), its experts' after the op on their own streams, and the
  // op ends waiting for all of them.
  void reduce_micro_batch_in_buckets(int s, int ch, int mb, double virtual_stage_params) {
    const double dense = virtual_stage_params - virtual_stage_expert_params(s, ch);
    TaskId lead_reduction = kNone;
    int k = 0;
    for (const auto& [params_in_bucket, ready] : cut_buckets(op_grads_ready_, dense, reduction_bucket_params_, chain_last_)) {
      lead_reduction = dp_collective_on_every_tp_rank(CollectiveKind::reduce_scatter, s, params_in_bucket * grad_reduce_bytes_,
                                                      ready, true, [&](int t) {
                                                        return label(out_.dp, "grads s{} c{} mb{} b{} t{}", s, ch, mb, k, t);
                                                      });
      ++k;
    }
    const TaskId experts = reduce_experts(s, CollectiveKind::reduce_scatter, virtual_stage_expert_params(s, ch), chain_last_,
                                          "expert grads", ch, mb);
    if (experts != kNone) expert_reductions_[s].push_back(experts);
    const TaskId reduced = eng_.delay(0, label(out_.dp, "grads reduced s{} c{} mb{}", s, ch, mb));
    eng_.depends(reduced, lead_reduction);
    if (experts != kNone) eng_.depends(reduced, experts);
    chain(reduced);
    last_reduction_[{s, ch}] = lead_reduction;
  }

  // DeepSpeed's ZeRO-Offload under ZeRO-2 keeps the accumulating gradients of its partition on
  // the host (framework.h optimizer_offload_copies): after each backward and its reduction the
  // running sum comes back to be added to (from the second micro-batch on) and goes out again.
  // Non-blocking copies behind the reduction: in the lead's chain unless the reduction overlaps.
  void accumulate_on_host(int lead, int s, int ch, int mb, double virtual_stage_params) {
    const double partition =
        optimizer_params_per_gpu(job_.plan, virtual_stage_params, virtual_stage_expert_params(s, ch)) * pcie_sharers();
    const std::pair<int, int> key{s, ch};
    TaskId after = reduces_micro_batch(mb) ? last_reduction_.at(key) : chain_last_;
    TaskId first = kNone;
    if (mb > 0 && offload_copies_.accumulate_to_gpu > 0) {
      first = eng_.copy(lead, des::CopyDir::H2D, partition * offload_copies_.accumulate_to_gpu,
                        label(out_.offload, "grads from host s{} c{} mb{}", s, ch, mb));
      if (after != kNone) eng_.depends(first, after);
      after = first;
    }
    const TaskId out = eng_.copy(lead, des::CopyDir::D2H, partition * offload_copies_.accumulate_to_host,
                                 label(out_.offload, "grads to host s{} c{} mb{}", s, ch, mb));
    if (after != kNone) eng_.depends(out, after);
    if (!job_.plan.overlap_grad_reduce) {
      if (op_first_ == kNone) op_first_ = first != kNone ? first : out;
      chain_last_ = out;
    }
    host_accumulation_[key] = out;
  }

  // The DP group of TP rank `t` of stage `s`, made once: ZeRO-2/3 ask for it every micro-batch.
  des::GroupId dp_group(int t, int s) {
    const size_t i = static_cast<size_t>(s) * static_cast<size_t>(job_.plan.tp) + static_cast<size_t>(t);
    if (dp_groups_.size() <= i) dp_groups_.resize(static_cast<size_t>(job_.plan.pp) * static_cast<size_t>(job_.plan.tp), kNone);
    if (dp_groups_[i] == kNone) {
      dp_groups_[i] = eng_.group(job_.dp_group_ranks(t, s));
    }
    return dp_groups_[i];
  }

  des::CollectiveAlgo dp_algo() const { return gradient_group_algo(job_.dp_cp(), job_.plan.tp); }

  // A gradient-reduction group of `members` ranks `stride` apart (DP: TP apart; expert DP: EP x
  // ETP apart): with several members per node and several nodes, hierarchical, over every
  // member's NIC (link_for_group's rule in the analytic tier). Within an NVLink domain of several
  // nodes (NVL72) a ring: every hop is on NVLink.
  des::CollectiveAlgo gradient_group_algo(int members, int stride) const {
    if (!opt_.hierarchical_dp) return des::CollectiveAlgo::Ring;
    const int per_node = std::max(1, job_.cluster.local_gpus() / std::max(1, stride));
    const bool several_per_node = per_node > 1 && members % per_node == 0;
    const bool several_nodes = members > per_node;
    return several_per_node && several_nodes ? des::CollectiveAlgo::Hierarchical : des::CollectiveAlgo::Ring;
  }

  void connect_pipeline() {
    const Plan& p = job_.plan;
    const int P = p.pp, V = p.virtual_stages, M = static_cast<int>(job_.micro_batches());
    for (const StageInfo& st : out_.stages) tp_group_ids_.push_back(eng_.group(st.tp_group));
    send_ = pipeline_send(p, boundary_bytes_);
    blocking_p2p_ = pipeline_sends_block(p);
    for (int gv = 1; gv < P * V; ++gv)
      for (int mb = 0; mb < M; ++mb) link_stages(true, gv - 1, gv, mb);
    for (int gv = P * V - 2; gv >= 0; --gv)
      for (int mb = 0; mb < M; ++mb) link_stages(false, gv + 1, gv, mb);
  }

  // Virtual stage `from`'s output of micro-batch `mb` (its activation when `forward`, else its
  // input gradient) travels to virtual stage `to`: each TP rank sends its share of the boundary
  // tensor to its peer, and the receiving TP group all-gathers the pieces where the framework
  // scatters them (sim/cost/framework.h, pipeline_send). Only the leads are simulated: across
  // nodes, the lead's flow carries the sends of the TP peers that share its NIC, as they all send
  // at once. Blocking p2p: the sender's next op waits for the transfer; without interleaving the
  // transfer also meets the receive that the receiving stage posts once the op before the
  // consuming one is done (Megatron-LM's 1F1B: recv_forward / send_backward_recv_forward after
  // that op; DeepSpeed's steps). Megatron's interleaved schedule posts its receives one op
  // earlier, batched with the previous exchange (send_forward_backward_recv_forward_backward):
  // it is left to the send's blocking alone.
  void link_stages(bool forward, int from, int to, int mb) {
    const Plan& p = job_.plan;
    const int P = p.pp;
    const size_t src = at(from, mb), dst = at(to, mb);
    const TaskId from_last = (forward ? last_f_ : last_b_)[src];
    const TaskId sender_next = (forward ? next_f_ : next_b_)[src];
    const TaskId to_first = (forward ? first_f_ : first_b_)[dst];
    const int from_stage = from % P, to_stage = to % P;
    if (from_stage == to_stage) {
      eng_.depends(to_first, from_last);
      return;
    }
    const int a = out_.stages[static_cast<size_t>(from_stage)].lead_gpu;
    const int b = out_.stages[static_cast<size_t>(to_stage)].lead_gpu;
    const int stage_gpus = p.tp * job_.dp_cp();
    const double bytes = send_.bytes_per_rank * (job_.cluster.over_nics(a, b) ? nic_sharers()
                                                                            : lead_send_pcie_scale(job_.cluster, a, b, stage_gpus));
    const des::Topology& topo = eng_.topology();
    const char* what = forward ? "act" : "grad";
    const TaskId transfer = eng_.transfer(topo.gpu(a), topo.gpu(b), bytes, label(out_.pp, "{} v{} mb{}", what, to, mb));
    eng_.depends(transfer, from_last);
    TaskId arrived = transfer;
    if (blocking_p2p_) {
      if (sender_next != kNone) eng_.depends(sender_next, transfer);
      const TaskId receiver_ready = (forward ? before_f_ : before_b_)[dst];
      if (p.virtual_stages == 1 && receiver_ready != kNone) eng_.depends(transfer, receiver_ready);
    }
    if (send_.receiver_all_gathers) {
      const TaskId gather = eng_.collective(CollectiveKind::all_gather, tp_group_ids_[static_cast<size_t>(to_stage)],
                                            boundary_bytes_, label(out_.pp, "{} v{} mb{}", what, to, mb));
      eng_.depends(gather, transfer);
      arrived = gather;
    }
    eng_.depends(to_first, arrived);
  }

  // After the stage's backward: its gradients reduced over DP, the optimizer step, and ZeRO-1/2's
  // all-gather of the updated params.
  // Stage `s`'s parameters on one GPU and the routed experts' among them, from its virtual
  // stages' `params`.
  std::pair<double, double> stage_totals(int s, const std::vector<double>& params) const {
    double stage_params = 0, stage_experts = 0;
    for (size_t ch = 0; ch < params.size(); ++ch) {
      stage_params += params[ch];
      stage_experts += virtual_stage_expert_params(s, static_cast<int>(ch));
    }
    return {stage_params, stage_experts};
  }

  void build_data_parallel_and_optimizer(int s) {
    const Plan& p = job_.plan;
    const std::vector<double> params = virtual_stage_params(job_.model, p, s);
    const auto [stage_params, stage_experts] = stage_totals(s, params);
    std::vector<TaskId> reduced = reduce_gradients(s, params);
    reduce_tied_embedding(s, reduced);
    const TaskId last = optimizer_step(s, stage_params, stage_experts, reduced);
    gather_updated_params(s, stage_params, stage_experts, last);
    const Cluster& c = job_.cluster;
    out_.cpu_bytes_per_node = std::max(out_.cpu_bytes_per_node, stage_cpu_bytes_[static_cast<size_t>(s)] * c.node.gpus);
    out_.nvme_bytes_per_node = std::max(out_.nvme_bytes_per_node, stage_nvme_bytes_[static_cast<size_t>(s)] * c.node.gpus);
  }

  // Stage `s`'s gradient reductions per virtual stage after its last backward, over every TP
  // rank's DP group (ZeRO-2/3: the per-micro-batch ones already made); returns what the
  // optimizer step waits for.
  std::vector<TaskId> reduce_gradients(int s, const std::vector<double>& params) {
    const Plan& p = job_.plan;
    const StageInfo& st = out_.stages[static_cast<size_t>(s)];
    std::vector<TaskId> reduced = expert_reductions_[s];
    for (int ch = 0; ch < p.virtual_stages; ++ch)
      if (const auto it = host_accumulation_.find({s, ch}); it != host_accumulation_.end()) reduced.push_back(it->second);
    for (int ch = p.virtual_stages - 1; ch >= 0 && reduces_in_backward(); --ch) {
      reduced.push_back(last_reduction_.at({s, ch}));
      reduced.push_back(last_backward_of_.at({s, ch}));
    }
    const auto kind = p.zero_stage >= 1 ? CollectiveKind::reduce_scatter : CollectiveKind::all_reduce;
    for (int ch = p.virtual_stages - 1; ch >= 0 && !reduces_in_backward(); --ch) {
      // Overlapped: a virtual stage's gradients are reduced once its last backward is done.
      // Otherwise every reduction waits for the stage's whole backward (the pipeline flush).
      const TaskId after = p.overlap_grad_reduce ? last_backward_of_.at({s, ch}) : st.last_backward;
      const TaskId experts = reduce_experts(s, kind, virtual_stage_expert_params(s, ch), after, "expert grads", ch, 0);
      if (experts != kNone) reduced.push_back(experts);
      if (job_.dp_cp() == 1) {
        reduced.push_back(after);
        continue;
      }
      const double dense = params[static_cast<size_t>(ch)] - virtual_stage_expert_params(s, ch);
      for (const auto& [bucket_params, ready] : reduction_buckets(s, ch, dense, after))
        reduced.push_back(dp_collective_on_every_tp_rank(kind, s, bucket_params * grad_reduce_bytes_, ready, true,
                                                         [&](int t) { return label(out_.dp, "grads s{} c{} t{}", s, ch, t); }));
    }
    return reduced;
  }

  // Virtual stage `ch` of stage `s`'s dense gradients as its reduction launches them, each bucket
  // with the task it waits for: one, after `after` (the virtual stage's last backward, or the
  // flush), or Megatron-core's buckets (dp_bucket_params) as the last micro-batch's backward
  // produces them, layer by layer (`dense` spread evenly over the layers), the last bucket
  // after `after`.
  std::vector<std::pair<double, TaskId>> reduction_buckets(int s, int ch, double dense, TaskId after) const {
    const auto it = grads_ready_.find({s, ch});
    if (it == grads_ready_.end()) return {{dense, after}};
    return cut_buckets(it->second, dense, dp_bucket_params(job_.plan, s, ch, job_.dp_cp()), after);
  }

  // `dense` params spread evenly over the layers whose backwards are `ready` (in backward order),
  // cut into buckets of `bucket_params` (bucket_layout), each with the task it waits for: a full
  // bucket its last layer's backward, the remainder `after`. One bucket after `after` when there
  // is nothing to cut.
  static std::vector<std::pair<double, TaskId>> cut_buckets(const std::vector<TaskId>& ready, double dense,
                                                             double bucket_params, TaskId after) {
    if (bucket_params <= 0 || ready.empty()) return {{dense, after}};
    const int layers = static_cast<int>(ready.size());
    const double layer_params = dense / layers;
    const DpBucketLayout b = bucket_layout(bucket_params, layers, layer_params);
    std::vector<std::pair<double, TaskId>> buckets;
    for (int k = 1; k < b.buckets; ++k)
      buckets.emplace_back(b.per_bucket * layer_params, ready[static_cast<size_t>(k * b.per_bucket - 1)]);
    buckets.emplace_back(b.remainder * layer_params, after);
    return buckets;
  }

  // A tied word embedding's gradient all-reduce between the first and the last stage, after
  // both stages' DP reductions and before either's step (tied_embedding_grad_bytes, framework.h):
  // made with stage 0's (every TP rank's 2-rank group), which the last stage then joins.
  void reduce_tied_embedding(int s, std::vector<TaskId>& reduced) {
    const Plan& p = job_.plan;
    const double bytes = tied_embedding_grad_bytes(job_.model, job_.training, p);
    if (bytes <= 0 || (s != 0 && s != p.pp - 1)) return;
    if (s == 0) {
      for (int t = 0; t < p.tp; ++t) {
        const des::GroupId pair = eng_.group({job_.global_rank(t, 0, 0), job_.global_rank(t, 0, p.pp - 1)});
        tied_reductions_.push_back(
            eng_.collective(CollectiveKind::all_reduce, pair, bytes, label(out_.dp, "tied embedding grads t{}", t)));
      }
    }
    for (TaskId x : tied_reductions_)
      for (TaskId r : reduced) eng_.depends(x, r);
    reduced = tied_reductions_;
  }

  // The optimizer step of stage `s` where the optimizer states live, after `reduced`: on the
  // GPU, or on the host's CPU Adam with the PCIe copies (and NVMe reads/writes) around it.
  // Returns its last task.
  TaskId optimizer_step(int s, double stage_params, double stage_experts, const std::vector<TaskId>& reduced) {
    const Plan& p = job_.plan;
    const Training& tr = job_.training;
    const Cluster& c = job_.cluster;
    const int lead = out_.stages[static_cast<size_t>(s)].lead_gpu, node = lead / c.node.gpus;
    const StateBytes sb = state_bytes_per_param(tr, p.chunked());
    const double opt_params = optimizer_params_per_gpu(p, stage_params, stage_experts);
    TaskId last = kNone;
    auto then = [&](TaskId x) {
      if (last == kNone) for (TaskId r : reduced) eng_.depends(x, r);
      else eng_.depends(x, last);
      last = x;
    };
    if (p.offload.optimizer == Tier::gpu) {
      then(eng_.compute(lead, gpu_optimizer_step_time_s(c.node.gpu, tr, p, opt_params), label(out_.optimizer, "adam s{}", s)));
      if (p.quantized_gemms()) then(quantized_weight_cast(s, lead));
      return last;
    }
    if (cpu_adam_.size() <= static_cast<size_t>(node)) cpu_adam_.resize(static_cast<size_t>(node) + 1, kNone);
    if (cpu_adam_[static_cast<size_t>(node)] == kNone)
      cpu_adam_[static_cast<size_t>(node)] = eng_.add_stream("cpu adam n" + std::to_string(node), node);
    if (offload_copies_.step_to_host > 0)
      then(eng_.copy(lead, des::CopyDir::D2H, opt_params * offload_copies_.step_to_host * pcie_sharers(),
                     label(out_.offload, "grads to host s{}", s)));
    const double node_params = opt_params * gpus_represented_on_node(job_, lead, s);
    if (p.offload.optimizer == Tier::nvme)
      then(eng_.nvme_read(node, node_params * sb.optimizer, label(out_.offload, "nvme read s{}", s)));
    then(eng_.delay(cpu_adam_time_s(c.node.host, node_params), label(out_.optimizer, "cpu adam s{}", s),
                    cpu_adam_[static_cast<size_t>(node)]));
    if (p.offload.optimizer == Tier::nvme)
      then(eng_.nvme_write(node, node_params * sb.optimizer, label(out_.offload, "nvme write s{}", s)));
    if (offload_copies_.step_to_gpu > 0)  // offloaded params come in where used (framework.h)
      then(eng_.copy(lead, des::CopyDir::H2D, opt_params * offload_copies_.step_to_gpu * pcie_sharers(),
                     label(out_.offload, "params to gpu s{}", s)));
    if (p.quantized_gemms()) then(quantized_weight_cast(s, lead));
    return last;
  }

  // Megatron-core's --overlap-param-gather (param_gather_overlaps_forward): the updated params
  // of the step before come in under the first micro-batch's forward, a bucket at a time on the
  // DP streams (the reduction's buckets, dp_bucket_params, in forward order: the remainder
  // first), each dispatched once the bucket before it starts its forward (its first layer
  // `before_x`, done); forward layer `l` waits for its bucket's.
  void gather_params_under_forward(const StageOp& o, int l, TaskId x) {
    const Plan& p = job_.plan;
    const int dp = job_.dp_cp();
    if (!param_gather_overlaps_forward(p, dp)) return;
    // The reduction's buckets (reduction_buckets): dense params spread evenly over the layers.
    const double dense_per_layer = (stage_params_[static_cast<size_t>(o.virtual_stage)] -
                                    virtual_stage_expert_params(o.stage, o.virtual_stage)) / o.layers;
    const DpBucketLayout b = dp_bucket_layout(p, o.stage, o.virtual_stage, dp, o.layers, dense_per_layer);
    const int per_bucket = b.per_bucket, first = b.remainder;
    const bool starts = l == 0 || (l >= first && (l - first) % per_bucket == 0);
    ParamGatherState& g = param_gathers_[{o.stage, o.virtual_stage}];
    if (starts) {
      if (g.bytes_per_dense_param <= 0) {  // the stage's dense gather bytes a parameter (fp8 params: one)
        const auto [stage_params, stage_experts] = stage_totals(o.stage, stage_params_);
        g.bytes_per_dense_param = zero_param_gather_bytes(job_.model, job_.training, p, o.stage, stage_params).dense_bytes /
                                  std::max(1.0, stage_params - stage_experts);
      }
      const double bytes = (l == 0 ? first : per_bucket) * dense_per_layer * g.bytes_per_dense_param;
      g.gather = dp_collective_on_every_tp_rank(CollectiveKind::all_gather, o.stage, bytes, g.bucket_start, true, [&](int t) {
        return label(out_.dp, "params s{} c{} L{} t{}", o.stage, o.virtual_stage, l, t);
      });
      g.bucket_start = x;
    }
    eng_.depends(x, g.gather);
  }

  // ZeRO-1/2 (and 3 with resident shards) all-gather the updated params after the step.
  // The bytes are the params' dtype, 1 per fp8 param (zero_param_gather_bytes).
  void gather_updated_params(int s, double stage_params, double stage_experts, TaskId last) {
    const Plan& p = job_.plan;
    if (p.zero_stage < 1 || p.zero_stage >= 3) return;
    const ParamGatherBytes gathered = zero_param_gather_bytes(job_.model, job_.training, p, s, stage_params);
    if (param_gather_overlaps_forward(p, job_.dp_cp())) {  // the dense params come in under the forward
      if (stage_experts > 0)
        reduce_experts(s, CollectiveKind::all_gather, gathered.expert_bytes / grad_reduce_bytes_, last, "expert params", 0, 0);
      return;
    }
    if (job_.dp_cp() > 1)
      dp_collective_on_every_tp_rank(CollectiveKind::all_gather, s, gathered.dense_bytes, last, true,
                                     [&](int t) { return label(out_.dp, "params s{} t{}", s, t); });
    if (stage_experts > 0)
      reduce_experts(s, CollectiveKind::all_gather, gathered.expert_bytes / grad_reduce_bytes_, last, "expert params", 0, 0);
  }

  // Quantized GEMMs (sim/cost/low_precision.h): the stage's weights cast once per iteration, costed with the
  // optimizer step as the analytic tier does.
  TaskId quantized_weight_cast(int s, int lead) {
    const double t = quantized_weight_cast_time_s(job_.cluster.node.gpu, job_.model, job_.plan, s);
    return eng_.compute(lead, t, label(out_.optimizer, "weight quantization s{}", s));
  }

  const Job& job_;
  des::Engine& eng_;
  BuildOptions opt_;
  BuiltIteration out_;
  int64_t act_bytes_ = 2;
  double fetch_bytes_ = 2;  // PCIe bytes an offloaded param takes to come in (framework.h)
  double assembly_bytes_ = 0;  // HBM bytes per param assembling a ZeRO-3 gather (framework.h)
  double grad_reduce_bytes_ = 2;  // bytes per parameter the DP gradient reduction moves
  std::vector<TaskId> tied_reductions_;  // the tied embedding's all-reduces, one per TP rank
  LayerTime layer_;
  CpRing ring_;  // context parallelism's ring per layer pass (empty without)
  double output_s_ = 0, boundary_bytes_ = 0, stored_ = 0, full_ = 0, embedding_bytes_ = 0, output_bytes_ = 0;
  LayerCosts costs_;
  std::map<int, std::vector<TaskId>> expert_reductions_;  // per stage: per-micro-batch expert reductions
  std::vector<TaskId> first_f_, last_f_, first_b_, last_b_;
  std::vector<TaskId> next_f_, next_b_;  // first task of the op that follows, on the same stage
  std::vector<TaskId> before_f_, before_b_;    // last task of the op before, on the same stage
  std::vector<des::GroupId> tp_group_ids_;     // per stage
  PipelineSend send_;                          // how a stage boundary crosses (the plan's framework)
  bool blocking_p2p_ = true;                   // the stage waits for its sends (pipeline_sends_block)
  std::map<std::pair<int, int>, TaskId> last_backward_of_, last_reduction_;
  std::map<std::pair<int, int>, TaskId> host_accumulation_;  // the last copy of accumulate_on_host
  std::map<std::pair<int, int>, std::vector<TaskId>> grads_ready_;  // bucketed reductions' layer backwards
  std::vector<TaskId> op_grads_ready_;  // the backward op's layer backwards, under ZeRO-2's buckets
  struct ParamGatherState {
    TaskId gather = kNone;        // the lead's all-gather of the current bucket
    TaskId bucket_start = kNone;  // the current bucket's first forward layer
    double bytes_per_dense_param = 0;  // the stage's gather bytes a dense parameter, once known
  };
  std::map<std::pair<int, int>, ParamGatherState> param_gathers_;  // per stage and virtual stage
  OptimizerOffloadCopies offload_copies_;
  std::vector<std::vector<des::ResourceId>> dp_streams_;  // per stage, per TP rank
  std::vector<std::vector<des::ResourceId>> expert_dp_streams_;  // per stage, per expert rank
  std::vector<des::GroupId> dp_groups_;                   // per stage and TP rank, kNone until made
  std::vector<double> stage_cpu_bytes_, stage_nvme_bytes_;
  std::vector<des::ResourceId> cpu_adam_;
  TaskId chain_last_ = kNone, op_first_ = kNone;
  bool gather_layers_ = false;             // ZeRO-3 over DP: per-layer parameter gathers
  double reduction_bucket_params_ = 0;     // a micro-batch's reductions in buckets (0: not so)
  std::vector<des::ResourceId> zero_streams_;  // the stage's gather streams: the lead's, then its TP peers'
  bool fetch_params_ = false;              // offloaded params are copied in before each op
  des::GroupId tp_group_ = 0;              // the stage's TP group
  std::vector<double> stage_params_, accumulated_params_;  // the stage's per virtual stage (on one GPU)
  std::vector<TaskId> prev_gathers_;  // each gather stream's last task
  TaskId prev_fetch_ = kNone;  // the stage's previous ZeRO-3 host fetch (offloaded params)
  std::vector<TaskId> recent_compute_;     // the stage's last two layer computations
  char name_[96] = {};
};

}  // namespace

BuiltIteration build_static_iteration(const Job& job, des::Engine& engine, const BuildOptions& options) {
  return StaticIterationBuilder(job, engine, options).build();
}

}  // namespace starfish::schedule

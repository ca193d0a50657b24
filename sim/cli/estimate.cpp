// starfish estimate --model M --hw H [--plan P] [--nodes N] [--ops] [--json]: the analytic model of
// one iteration (parameters, FLOPs, memory per tier, fits or why not, time per component), and
// with --ops each op of a layer, forward and backward: what a profiler's kernel times compare to.
#include <cstdio>
#include <string>

#include <fmt/core.h>

#include "sim/cli/cli.h"
#include "sim/cli/job_loader.h"
#include "sim/cli/plan_text.h"
#include "sim/cost/estimate.h"
#include "sim/cost/flops.h"
#include "sim/cost/op_time.h"
#include "sim/spec/json_writer.h"
#include "sim/spec/units.h"

namespace starfish::cli {
namespace {

void write_tier(JsonWriter& w, const char* name, const TierUse& u) {
  w.key(name).begin_object();
  w.field("params_bytes", u.params_bytes).field("grads_bytes", u.grads_bytes);
  w.field("optimizer_bytes", u.optimizer_bytes).field("activations_bytes", u.activations_bytes);
  w.field("buffers_bytes", u.buffers_bytes).field("allocator_bytes", u.allocator_bytes);
  w.field("communicator_bytes", u.communicator_bytes).field("total_bytes", u.total());
  w.field("capacity_bytes", u.capacity_bytes).field("fits", u.fits());
  w.end_object();
}

// Under full recomputation of every layer, the fewest layers per virtual stage that may recompute
// with the plan still fitting (Megatron's block method: fewer recomputed forwards), and its time;
// `without` when no recomputation fits at all.
struct BlockHint {
  int layers = 0;  // 0: no hint
  bool without = false;
  double iteration_s = 0;
};
BlockHint block_recompute_hint(const Job& job, const Estimate& e) {
  BlockHint hint;
  if (!e.fits) return hint;
  hint.layers = fewest_fitting_recompute_layers(job);
  if (hint.layers == 0) return hint;
  Job faster = job;
  if (hint.layers == 1) {  // perhaps none need recompute
    faster.plan.recompute = Recompute::none;
    const Estimate none = estimate(faster);
    hint.without = none.fits;
    hint.iteration_s = none.time.iteration_s;
    if (hint.without) return hint;
    faster.plan.recompute = Recompute::full;
  }
  faster.plan.recompute_layers = hint.layers;
  hint.iteration_s = estimate(faster).time.iteration_s;
  return hint;
}

// One kind of layer of the plan (dense or MoE) as estimate() costs it: its ops on one GPU for
// one micro-batch, the recomputation its backward adds, and its communication (the token
// exchanges only in an MoE layer).
struct LayerOps {
  const char* kind = "dense";
  std::vector<LayerOp> ops;
  LayerTime time;
  LayerCommunication comm;
};
std::vector<LayerOps> plan_layer_ops(const Job& job) {
  std::vector<LayerOps> out;
  const Model& m = job.model;
  const bool has_dense = m.moe_layer_count() < m.layers;
  const PlanLayerCommunication comm = layer_communication(job);
  for (bool moe : {false, true}) {
    if (moe ? !m.is_moe() : !has_dense) continue;
    const LayerShape shape = plan_layer_shape(job.plan, moe);
    out.push_back({moe ? "moe" : "dense", layer_ops(job.cluster.node.gpu, job.training.dtype, m, shape),
                   layer_time(job.cluster.node.gpu, job.training.dtype, m, shape, job.plan.recompute),
                   moe ? comm.moe : comm.dense});
  }
  return out;
}

void write_layer_ops(JsonWriter& w, const Job& job) {
  w.key("layer_ops").begin_array();
  for (const LayerOps& l : plan_layer_ops(job)) {
    w.begin_object().field("layer", l.kind);
    w.field("forward_s", l.time.forward_s).field("backward_s", l.time.backward_s).field("recompute_s", l.time.recompute_s);
    w.key("ops").begin_array();
    for (const LayerOp& op : l.ops)
      w.begin_object().field("name", op.name).field("forward_s", op.forward_s).field("backward_s", op.backward_s).end_object();
    w.end_array();
    w.key("communication").begin_object();
    w.field("tp_forward_s", l.comm.tp_forward_s).field("tp_backward_s", l.comm.tp_backward_s);
    w.field("exchange_forward_s", l.comm.exchange_forward_s).field("exchange_backward_s", l.comm.exchange_backward_s);
    w.field("cp_forward_s", l.comm.cp_forward_s).field("cp_backward_s", l.comm.cp_backward_s);
    w.end_object().end_object();
  }
  w.end_array();
}

void print_layer_ops(const Job& job) {
  using units::human_seconds;
  const Plan& p = job.plan;
  fmt::print("\nlayer ops    one GPU, one micro-batch of {} x {} tokens{}{}; its communication after the total\n", p.micro_batch,
             job.model.seq_len / p.cp, p.tp > 1 ? fmt::format(", TP {}", p.tp) : "",
             p.ep > 1 ? fmt::format(", EP {}", p.ep) : "");
  for (const LayerOps& l : plan_layer_ops(job)) {
    fmt::print("  {:<40} {:>12} {:>12}\n", std::string(l.kind) + " layer", "forward", "backward");
    for (const LayerOp& op : l.ops)
      fmt::print("    {:<38} {:>12} {:>12}\n", op.name, human_seconds(op.forward_s), human_seconds(op.backward_s));
    fmt::print("    {:<38} {:>12} {:>12}\n", "total", human_seconds(l.time.forward_s), human_seconds(l.time.backward_s));
    if (l.time.recompute_s > 0) fmt::print("    {:<38} {:>12}\n", "recomputed in backward", human_seconds(l.time.recompute_s));
    auto comm = [&](const char* name, double forward_s, double backward_s) {
      if (forward_s + backward_s > 0) fmt::print("    {:<38} {:>12} {:>12}\n", name, human_seconds(forward_s), human_seconds(backward_s));
    };
    comm("TP collectives", l.comm.tp_forward_s, l.comm.tp_backward_s);
    comm("MoE token exchanges", l.comm.exchange_forward_s, l.comm.exchange_backward_s);
    comm("context-parallel ring (exposed)", l.comm.cp_forward_s, l.comm.cp_backward_s);
  }
}

std::string json(const Job& job, const Estimate& e, const BlockHint& hint, bool ops) {
  JsonWriter w(true);
  w.begin_object();
  w.field("kind", "starfish.estimate");
  w.field("model", job.model.name).field("hardware", job.cluster.name);
  w.field("nodes", job.cluster.nodes).field("gpus", job.cluster.total_gpus());
  w.key("plan");
  write_plan_json(w, job);
  w.key("parameters").begin_object();
  w.field("total", e.params.total).field("per_layer", e.params.per_layer);
  if (job.model.is_moe())
    w.field("active", e.params.active).field("per_moe_layer", e.params.per_moe_layer).field("moe_layers", e.params.moe_layers);
  w.field("word_embedding", e.params.word_embedding).field("per_gpu", e.params_per_gpu);
  w.end_object();
  w.key("flops_per_iteration").begin_object();
  w.field("model", e.model_flops).field("hardware", e.hardware_flops);
  w.end_object();
  w.key("memory").begin_object();
  w.field("peak_stage", e.peak_stage);
  write_tier(w, "gpu_per_gpu", e.gpu);
  write_tier(w, "cpu_per_node", e.cpu);
  write_tier(w, "nvme_per_node", e.nvme);
  w.end_object();
  if (job.plan.chunked())
    w.key("chunk_placement")
        .begin_object()
        .field("optimizer_on_gpu", 1 - e.chunk_shares.optimizer_off_gpu)
        .field("optimizer_on_nvme", e.chunk_shares.optimizer_nvme)
        .field("params_fetched_at_each_use", e.chunk_shares.params_spilled)
        .end_object();
  w.field("fits", e.fits).field("within_allocator_reserve", e.memory.within_allocator_reserve);
  if (!e.fits) w.field("why_not", e.why_not);
  if (hint.layers > 0) {  // what recomputes less and still fits: no layer, or the first recompute_layers
    w.key("fits_recomputing_less").begin_object().field("recompute", hint.without ? "none" : "full");
    if (!hint.without) w.field("recompute_layers", hint.layers);
    w.field("iteration_s", hint.iteration_s).end_object();
  }
  w.key("time_s").begin_object();
  w.field("compute", e.time.compute_s).field("bubble", e.time.bubble_s).field("tp_comm", e.time.tp_comm_s);
  w.field("cp_comm", e.time.cp_comm_s);
  w.field("pp_comm", e.time.pp_comm_s).field("dp_comm", e.time.dp_comm_s).field("optimizer", e.time.optimizer_s);
  w.field("offload", e.time.offload_s).field("iteration", e.time.iteration_s);
  w.end_object();
  w.field("tokens_per_s", e.tokens_per_s).field("tflops_per_gpu", e.tflops_per_gpu).field("mfu", e.mfu);
  w.field("bubble_fraction", e.bubble_fraction);
  if (ops) write_layer_ops(w, job);
  w.end_object();
  return w.str() + "\n";
}

void table(const Job& job, const Estimate& e, const BlockHint& hint) {
  using units::human_bytes;
  using units::human_count;
  using units::human_seconds;
  fmt::print("{} on {} x {} ({} GPUs)\n", job.model.name, job.cluster.nodes, job.cluster.name, job.cluster.total_gpus());
  fmt::print("plan: {}\n\n", plan_summary(job));
  if (job.model.is_moe())
    fmt::print("parameters   {}, {} active ({} layers, {} of them MoE x {}, embedding {})\n", human_count(e.params.total),
               human_count(e.params.active), job.model.layers, e.params.moe_layers, human_count(e.params.per_moe_layer),
               human_count(e.params.word_embedding));
  else
    fmt::print("parameters   {} ({} layers x {}, embedding {})\n", human_count(e.params.total), job.model.layers,
               human_count(e.params.per_layer), human_count(e.params.word_embedding));
  fmt::print("FLOPs/iter   {:.3g} model, {:.3g} with recompute\n\n", e.model_flops, e.hardware_flops);
  fmt::print("memory       {:>14} {:>14} {:>14}\n", "GPU (each)", "CPU (node)", "NVMe (node)");
  auto row = [&](const char* name, double g, double c, double n) {
    fmt::print("  {:<10} {:>14} {:>14} {:>14}\n", name, human_bytes(g), human_bytes(c), human_bytes(n));
  };
  row("params", e.gpu.params_bytes, e.cpu.params_bytes, e.nvme.params_bytes);
  row("grads", e.gpu.grads_bytes, e.cpu.grads_bytes, e.nvme.grads_bytes);
  row("optimizer", e.gpu.optimizer_bytes, e.cpu.optimizer_bytes, e.nvme.optimizer_bytes);
  row("activations", e.gpu.activations_bytes, e.cpu.activations_bytes, e.nvme.activations_bytes);
  row("buffers", e.gpu.buffers_bytes, e.cpu.buffers_bytes, e.nvme.buffers_bytes);
  row("allocator", e.gpu.allocator_bytes, e.cpu.allocator_bytes, e.nvme.allocator_bytes);
  if (e.gpu.communicator_bytes > 0) row("NCCL", e.gpu.communicator_bytes, 0, 0);
  row("total", e.gpu.total(), e.cpu.total(), e.nvme.total());
  row("capacity", e.gpu.capacity_bytes, e.cpu.capacity_bytes, e.nvme.capacity_bytes);
  fmt::print("  (GPU column: pipeline stage {}, the most loaded)\n", e.peak_stage);
  if (job.plan.chunked()) {
    // The chunk runtime's placement, which the time model charges (sim/cost/chunk_placement.h):
    // the GPU row above counts its margin as filled, the host and NVMe rows the units placed.
    const auto& s = e.chunk_shares;
    fmt::print("chunks       optimizer states stepped on the GPU {:.0f}%, on the host {:.0f}% ({:.0f}% kept on NVMe); "
               "param chunks fetched at each use {:.0f}%\n",
               100 * (1 - s.optimizer_off_gpu), 100 * (s.optimizer_off_gpu - s.optimizer_nvme), 100 * s.optimizer_nvme,
               100 * s.params_spilled);
  }
  if (e.fits) fmt::print("fits         yes\n");
  else fmt::print("fits         NO: {}\n", e.why_not);
  if (hint.without)
    fmt::print("hint         recompute: none also fits: {} an iteration instead of {}\n", human_seconds(hint.iteration_s),
               human_seconds(e.time.iteration_s));
  else if (hint.layers > 0)
    fmt::print("hint         recompute_layers: {} also fits (that many layers of each virtual stage recompute, Megatron's "
               "block method): {} an iteration instead of {}\n",
               hint.layers, human_seconds(hint.iteration_s), human_seconds(e.time.iteration_s));
  fmt::print("\n");
  // The lines add up to the iteration: the analytic tier overlaps with compute only ZeRO-3's
  // per-layer gathers and reduce-scatters, overlapped DP reductions (Megatron-core's buckets,
  // ZeRO-2's buckets under each backward) and param gathers, offloaded params' fetches and gradients'
  // copies, context parallelism's ring, the host's optimizer steps as the stages drain and the
  // interleaved schedule's posted pipeline sends, and counts what the compute does not hide (the
  // event-driven tier overlaps what each framework does).
  fmt::print("time/iter    (analytic: what compute does not hide of ZeRO-3's gathers, overlapped DP reductions, "
             "offload copies, CP's ring and posted pipeline sends; simulate overlaps as the framework does)\n");
  auto trow = [&](const char* name, double s) {
    fmt::print("  {:<10} {:>12} {:>5.1f}%\n", name, human_seconds(s), 100 * s / e.time.iteration_s);
  };
  trow("compute", e.time.compute_s);
  trow("bubble", e.time.bubble_s);
  trow("tp comm", e.time.tp_comm_s);
  if (e.time.cp_comm_s > 0 || job.plan.cp > 1) trow("cp comm", e.time.cp_comm_s);
  trow("pp comm", e.time.pp_comm_s);
  trow("dp comm", e.time.dp_comm_s);
  trow("optimizer", e.time.optimizer_s);
  trow("offload", e.time.offload_s);
  fmt::print("  {:<10} {:>12}\n", "iteration", human_seconds(e.time.iteration_s));
  fmt::print("\nthroughput   {} tokens/s, {:.1f} TFLOP/s per GPU, MFU {:.1f}%\n", human_count(e.tokens_per_s), e.tflops_per_gpu,
             100 * e.mfu);
}

}  // namespace

int run_estimate(const std::vector<std::string>& argv) {
  Args args(argv, {"model", "hw", "plan", "nodes"}, {"json", "ops", "help"});
  if (args.flag("help")) {
    fmt::print(
        "usage: starfish estimate --model M --hw H [--plan P] [--nodes N] [--ops] [--json]\n"
        "  M, H: a YAML file or a bundled name (configs/models/M.yaml, hwprofiles/H.yaml)\n"
        "  P: a plan file (training + plan); without one, pure data parallelism over all GPUs\n"
        "  N: number of nodes (overrides the hwprofile's)\n"
        "  --ops: each op of a layer (dense, MoE) with its forward and backward time on one GPU\n");
    return 0;
  }
  if (!args.positional().empty()) throw UsageError("unexpected argument '" + args.positional().front() + "'");
  const Job job = load_job(args.get("model"), args.get("hw"), args.get("plan"), args.get("nodes"));
  const Estimate e = estimate(job);
  const BlockHint hint = block_recompute_hint(job, e);
  if (args.flag("json")) {
    std::fputs(json(job, e, hint, args.flag("ops")).c_str(), stdout);
  } else {
    table(job, e, hint);
    if (args.flag("ops")) print_layer_ops(job);
  }
  return 0;
}

}  // namespace starfish::cli

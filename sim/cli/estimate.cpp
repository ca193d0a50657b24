// starfish estimate --model M --hw H [--plan P] [--nodes N] [--json]: the analytic model of one
// iteration (parameters, FLOPs, memory per tier, fits or why not, time per component).
#include <cstdio>
#include <string>

#include "sim/cli/cli.h"
#include "sim/cli/job_loader.h"
#include "sim/cli/plan_text.h"
#include "sim/cost/estimate.h"
#include "sim/cost/flops.h"
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

std::string json(const Job& job, const Estimate& e) {
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
  w.field("fits", e.fits).field("within_allocator_reserve", e.memory.within_allocator_reserve);
  if (!e.fits) w.field("why_not", e.why_not);
  w.key("time_s").begin_object();
  w.field("compute", e.time.compute_s).field("bubble", e.time.bubble_s).field("tp_comm", e.time.tp_comm_s);
  w.field("cp_comm", e.time.cp_comm_s);
  w.field("pp_comm", e.time.pp_comm_s).field("dp_comm", e.time.dp_comm_s).field("optimizer", e.time.optimizer_s);
  w.field("offload", e.time.offload_s).field("iteration", e.time.iteration_s);
  w.end_object();
  w.field("tokens_per_s", e.tokens_per_s).field("tflops_per_gpu", e.tflops_per_gpu).field("mfu", e.mfu);
  w.field("bubble_fraction", e.bubble_fraction);
  w.end_object();
  return w.str() + "\n";
}

void table(const Job& job, const Estimate& e) {
  using units::human_bytes;
  using units::human_count;
  using units::human_seconds;
  std::printf("%s on %d x %s (%d GPUs)\n", job.model.name.c_str(), job.cluster.nodes, job.cluster.name.c_str(),
              job.cluster.total_gpus());
  std::printf("plan: %s\n\n", plan_summary(job).c_str());
  if (job.model.is_moe())
    std::printf("parameters   %s, %s active (%d layers, %d of them MoE x %s, embedding %s)\n",
                human_count(e.params.total).c_str(), human_count(e.params.active).c_str(), job.model.layers,
                e.params.moe_layers, human_count(e.params.per_moe_layer).c_str(), human_count(e.params.word_embedding).c_str());
  else
    std::printf("parameters   %s (%d layers x %s, embedding %s)\n", human_count(e.params.total).c_str(), job.model.layers,
                human_count(e.params.per_layer).c_str(), human_count(e.params.word_embedding).c_str());
  std::printf("FLOPs/iter   %.3g model, %.3g with recompute\n\n", e.model_flops, e.hardware_flops);
  std::printf("memory       %14s %14s %14s\n", "GPU (each)", "CPU (node)", "NVMe (node)");
  auto row = [&](const char* name, double g, double c, double n) {
    std::printf("  %-10s %14s %14s %14s\n", name, human_bytes(g).c_str(), human_bytes(c).c_str(), human_bytes(n).c_str());
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
  std::printf("  (GPU column: pipeline stage %d, the most loaded)\n", e.peak_stage);
  if (e.fits) std::printf("fits         yes\n\n");
  else std::printf("fits         NO: %s\n\n", e.why_not.c_str());
  std::printf("time/iter    (analytic: no overlap of communication with compute)\n");
  auto trow = [&](const char* name, double s) {
    std::printf("  %-10s %12s %5.1f%%\n", name, human_seconds(s).c_str(), 100 * s / e.time.iteration_s);
  };
  trow("compute", e.time.compute_s);
  trow("bubble", e.time.bubble_s);
  trow("tp comm", e.time.tp_comm_s);
  if (e.time.cp_comm_s > 0 || job.plan.cp > 1) trow("cp comm", e.time.cp_comm_s);
  trow("pp comm", e.time.pp_comm_s);
  trow("dp comm", e.time.dp_comm_s);
  trow("optimizer", e.time.optimizer_s);
  trow("offload", e.time.offload_s);
  std::printf("  %-10s %12s\n", "iteration", human_seconds(e.time.iteration_s).c_str());
  std::printf("\nthroughput   %s tokens/s, %.1f TFLOP/s per GPU, MFU %.1f%%\n", human_count(e.tokens_per_s).c_str(),
              e.tflops_per_gpu, 100 * e.mfu);
}

}  // namespace

int run_estimate(const std::vector<std::string>& argv) {
  Args args(argv, {"model", "hw", "plan", "nodes"}, {"json", "help"});
  if (args.flag("help")) {
    std::printf(
        "usage: starfish estimate --model M --hw H [--plan P] [--nodes N] [--json]\n"
        "  M, H: a YAML file or a bundled name (configs/models/M.yaml, hwprofiles/H.yaml)\n"
        "  P: a plan file (training + plan); without one, pure data parallelism over all GPUs\n"
        "  N: number of nodes (overrides the hwprofile's)\n");
    return 0;
  }
  if (!args.positional().empty()) throw UsageError("unexpected argument '" + args.positional().front() + "'");
  const Job job = load_job(args.get("model"), args.get("hw"), args.get("plan"), args.get("nodes"));
  const Estimate e = estimate(job);
  if (args.flag("json")) std::fputs(json(job, e).c_str(), stdout);
  else table(job, e);
  return 0;
}

}  // namespace starfish::cli

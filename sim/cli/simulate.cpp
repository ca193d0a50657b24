// starfish simulate --model M --hw H [--plan P] [--nodes N] [--trace out.json [--trace-detail
// stage|rank]] [--json] [--allow-oom]: one iteration in the discrete-event simulator.
#include <cmath>
#include <cstdio>

#include <fmt/core.h>

#include "sim/cli/cli.h"
#include "sim/cli/job_loader.h"
#include "sim/cli/plan_export.h"  // ProgressBar
#include "sim/cli/plan_text.h"
#include "sim/schedule/simulate.h"
#include "sim/spec/error.h"
#include "sim/spec/units.h"

namespace starfish::cli {
namespace {

void table(const Job& job, const schedule::SimReport& r, const std::string& trace) {
  using units::human_bytes;
  using units::human_count;
  using units::human_seconds;
  fmt::print("{} on {} x {} ({} GPUs)\n", job.model.name, job.cluster.nodes, job.cluster.name, r.gpus);
  fmt::print("plan: {}\n\n", plan_summary(job));
  fmt::print("iteration    {} (simulated)\n", human_seconds(r.iteration_s));
  fmt::print("throughput   {} tokens/s, {:.1f} TFLOP/s per GPU, MFU {:.1f}%\n", human_count(r.tokens_per_s), r.tflops_per_gpu,
             100 * r.mfu);
  fmt::print("bubble       {:.1f}% of the iteration\n\n", 100 * r.bubble_fraction);
  fmt::print("communication (per stage, mean)   busy       exposed    compute/comm\n");
  for (const auto& g : r.comm) {
    if (g.comm_s == 0) continue;
    fmt::print("  {:<8} {:>24} {:>10} {:>10.1f}\n", g.group, human_seconds(g.comm_s), human_seconds(g.exposed_s), g.ratio);
  }
  fmt::print("\nmemory       peak per GPU {} of {}", human_bytes(r.peak_gpu_bytes), human_bytes(r.gpu_capacity_bytes));
  if (r.cpu_bytes_per_node > 0)
    fmt::print(", CPU per node {} of {}", human_bytes(r.cpu_bytes_per_node), human_bytes(r.cpu_capacity_bytes));
  if (r.nvme_bytes_per_node > 0)
    fmt::print(", NVMe per node {} of {}", human_bytes(r.nvme_bytes_per_node), human_bytes(r.nvme_capacity_bytes));
  fmt::print("\n");
  if (!r.memory_verdict.fits) fmt::print("  DOES NOT FIT: {} (shown for --allow-oom)\n", r.memory_verdict.text());
  for (const auto& s : r.memory)
    fmt::print("  stage {:<3}  gpu {:<5} peak {:>10} (states {}) at {}\n", s.stage, s.gpu, human_bytes(s.peak_bytes),
               human_bytes(s.model_state_bytes), human_seconds(s.peak_time_s));
  fmt::print("\nbusiest links (bytes in the iteration, utilisation)\n");
  for (size_t i = 0; i < r.links.size() && i < 8; ++i)
    fmt::print("  {:<32} {:<8} {:>10} {:>5.1f}%\n", r.links[i].name, r.links[i].kind, human_bytes(r.links[i].bytes),
               100 * r.links[i].utilisation);
  fmt::print("\nsimulator    {} tasks, {} events, {} links run as {} classes, built in {}, ran in {}\n", r.tasks, r.events,
             r.used_links, r.link_classes, human_seconds(r.build_wall_s), human_seconds(r.run_wall_s));
  if (!trace.empty()) fmt::print("trace        {} (open in ui.perfetto.dev or chrome://tracing)\n", trace);
}

// A plan whose simulated peak overflows a tier is refused (exit 1), as `estimate` and the search
// refuse it, unless the user asked to see the overflow.
void refuse_if_out_of_memory(const Job& job, const schedule::SimReport& r) {
  if (r.memory_verdict.fits) return;
  const std::string why = "the plan does not fit: simulated " + r.memory_verdict.text() +
                          " (--allow-oom shows the simulation anyway)";
  const Provenance& p = job.plan.provenance;
  if (!p.file.empty()) fail_at(p.where("plan"), "plan", why);
  throw SpecError("simulate: " + why);
}

// The chunk runtime refuses a chunked plan whose chunks it cannot place at all (no peak to show,
// --allow-oom or not): the refusal names the plan, as an overflow does.
schedule::SimReport simulate_or_refuse(const Job& job, const schedule::SimOptions& options) {
  try {
    return schedule::simulate(job, options);
  } catch (const SpecError& e) {
    const Provenance& p = job.plan.provenance;
    if (!job.plan.chunked() || p.file.empty()) throw;
    fail_at(p.where("plan"), "plan", std::string("the plan does not fit: ") + e.what());
  }
}

}  // namespace

int run_simulate(const std::vector<std::string>& argv) {
  Args args(argv, {"model", "hw", "plan", "nodes", "trace", "trace-detail", "moves", "non-model"},
            {"json", "allow-oom", "help"});
  if (args.flag("help")) {
    fmt::print(
        "usage: starfish simulate --model M --hw H [--plan P] [--nodes N] [--trace out.json [--trace-detail stage|rank]]\n"
        "                         [--json] [--allow-oom]\n"
        "  Simulates one training iteration with the discrete-event simulator.\n"
        "  A plan whose peak memory exceeds a tier (GPU, CPU per node, NVMe per node) is refused\n"
        "  (exit 1); --allow-oom shows it with the overflow instead (a chunk plan whose chunks the\n"
        "  runtime cannot place at all has no peak to show: refused either way).\n"
        "  --trace writes a Chrome-trace / Perfetto JSON timeline (ui.perfetto.dev): tasks as slices,\n"
        "  each stage's GPU memory and each node's CPU/NVMe bytes as counter tracks. --trace-detail:\n"
        "  stage (default) draws each pipeline stage's lead GPU and its node; rank draws every GPU\n"
        "  (a 1024-GPU iteration is then a file of a hundred megabytes).\n"
        "  Chunk plans: --moves writes the runtime's move log (JSON lines); --non-model BYTES gives\n"
        "  the runtime that much non-model memory at every moment instead of the computed\n"
        "  activations (to match a starfish-run given the same --non-model).\n");
    return 0;
  }
  if (!args.positional().empty()) throw UsageError("unexpected argument '" + args.positional().front() + "'");
  const Job job = load_job(args.get("model"), args.get("hw"), args.get("plan"), args.get("nodes"));
  schedule::SimOptions options;
  if (auto t = args.get("trace")) options.trace_path = *t;
  if (auto d = args.get("trace-detail")) {
    if (*d != "stage" && *d != "rank") throw UsageError("--trace-detail must be stage or rank, got '" + *d + "'");
    if (!args.get("trace")) throw UsageError("--trace-detail only applies to --trace");
    options.trace_every_rank = *d == "rank";
  }
  if (auto m = args.get("moves")) {
    if (!job.plan.chunked()) throw UsageError("--moves needs a chunk plan (chunk_size > 0): only the chunk runtime moves chunks");
    options.moves_path = *m;
  }
  if (auto n = args.get("non-model")) {
    try {
      options.fixed_non_model_bytes = units::parse_bytes(*n);
    } catch (const std::invalid_argument& e) {
      throw UsageError(std::string("--non-model: ") + e.what());
    }
  }
  ProgressBar bar;
  if (bar.enabled())
    options.progress = [&](const char* phase, double fraction) {
      bar.say(std::string(phase) + " one iteration on " + std::to_string(job.cluster.total_gpus()) + " GPUs" +
              (fraction > 0 ? ": " + std::to_string(static_cast<int>(100 * fraction)) + "% of its tasks ended" : ""));
    };
  const schedule::SimReport r = simulate_or_refuse(job, options);
  bar.finish();
  if (!args.flag("allow-oom")) refuse_if_out_of_memory(job, r);
  if (args.flag("json")) std::fputs(schedule::to_json(r).c_str(), stdout);
  else table(job, r, options.trace_path);
  return 0;
}

}  // namespace starfish::cli

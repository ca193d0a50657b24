// starfish search --model M --hw H [--gpus N | --nodes N] [--batch B] [--top K] [--emit plan.yaml
// [--force]] [--megatron] [--megatron-bridge] [--deepspeed [--nvme-path P]] [--torchtitan] [--json] [--threads N] [--max-tp N]:
// every plan of the model on the hardware, ranked by throughput, with why the rejected families
// fail, and the launch settings of the best plan each asked-for framework runs.
#include <algorithm>
#include <cstdio>
#include <string>

#include <fmt/core.h>

#include "sim/cli/cli.h"
#include "sim/cli/plan_export.h"
#include "sim/search/des_refiner.h"
#include "sim/search/search.h"
#include "sim/spec/spec_io.h"
#include "sim/spec/units.h"

namespace starfish::cli {

namespace {

void print_search_help() {
  fmt::print(
      "usage: starfish search --model M --hw H [--gpus N | --nodes N] [--batch B] [--top K]\n"
      "                       [--emit plan.yaml [--force]] [--megatron] [--deepspeed [--nvme-path P]]\n"
      "                       [--megatron-bridge] [--torchtitan] [--json]\n"
      "                       [--threads N] [--max-tp N] [--framework F] [--no-fp8] [--analytic-only]\n"
      "  enumerates TP, PP, DP, virtual stages, micro-batch, ZeRO 0-3, offload, recompute, SP,\n"
      "  schedule and chunk size; prunes by memory per tier; ranks by tokens/s with the analytic\n"
      "  model, then simulates the best K with the event simulator and re-ranks them\n"
      "  (--analytic-only skips the simulation).\n"
      "  B: global batch in sequences (default about 4Mi tokens, a multiple of the GPUs)\n"
      "  K: rows shown (default 10); --emit writes the winner as a plan file (no overwrite\n"
      "  without --force); --megatron / --megatron-bridge / --deepspeed / --torchtitan print the\n"
      "  launch settings (Megatron-LM arguments, Megatron-Bridge run_recipe.py overrides,\n"
      "  DeepSpeed JSON, a torchtitan recipe module: starfish_plan.py) of the best plan that\n"
      "  framework runs: the best row it runs as simulated, else the winner of a search over\n"
      "  its plans only, costed as it runs them (Megatron-Bridge: as megatron-core; torchtitan:\n"
      "  as fsdp).\n"
      "  --nvme-path P: where DeepSpeed swaps NVMe-offloaded states (default /local_nvme).\n"
      "  --framework F: the framework every plan is costed as (megatron-lm, the default,\n"
      "  megatron-core, deepspeed, fsdp); under megatron-core on a GPU with an fp8 peak the\n"
      "  plans are also tried with fp8 GEMMs (TransformerEngine), unless --no-fp8.\n"
      "  --json prints the ranking and the exports as one JSON object.\n"
      "  Ctrl-C stops the search and shows the best plans found so far.\n");
}

}  // namespace

int run_search(const std::vector<std::string>& argv) {
  Args args(argv, {"model", "hw", "gpus", "nodes", "batch", "top", "emit", "threads", "max-tp", "nvme-path", "framework"},
            {"json", "megatron", "megatron-bridge", "deepspeed", "torchtitan", "force", "analytic-only", "no-fp8", "help"});
  if (args.flag("help")) {
    print_search_help();
    return 0;
  }
  if (!args.positional().empty()) throw UsageError("unexpected argument '" + args.positional().front() + "'");
  if (args.get("nvme-path") && !args.flag("deepspeed")) throw UsageError("--nvme-path only applies to --deepspeed");
  if (args.flag("force") && !args.get("emit")) throw UsageError("--force only applies to --emit");
  const std::string model_path = resolve_model(args.required("model"));
  const std::string hw_path = resolve_hardware(args.required("hw"));
  const Model model = load_model(model_path);
  const Cluster cluster = resize_cluster(load_cluster(hw_path), args.get("gpus"), args.get("nodes"), hw_path);
  Training training = search::default_search_training(model, cluster);
  if (auto b = args.get("batch")) training.global_batch = parse_positive("batch", *b);

  search::SearchOptions opt;
  if (auto k = args.get("top")) opt.top_k = parse_positive("top", *k);
  if (auto t = args.get("threads")) opt.threads = parse_positive("threads", *t);
  if (auto t = args.get("max-tp")) opt.space.max_tp = parse_positive("max-tp", *t);
  if (auto f = args.get("framework"))
    if (!parse_framework(*f, opt.space.framework) || opt.space.framework == Framework::starfish)
      throw UsageError("--framework takes megatron-lm, megatron-core, deepspeed or fsdp, not '" + *f + "'");
  if (args.flag("no-fp8")) opt.space.fp8 = {Fp8::none};
  const int shown = opt.top_k;
  ProgressBar bar;
  SigintCancel sigint;
  opt.cancel = sigint.flag();
  if (!args.flag("analytic-only")) opt.refiner = search::des_refiner(opt.cancel);
  if (bar.enabled()) opt.progress = [&](const search::Progress& p) { bar(p); };
  const search::SearchResult r = search::search(model, cluster, training, opt);
  const Exports exports = make_exports(r, args, opt);
  bar.finish();

  if (args.flag("json")) {
    JsonWriter w(true);
    write_search_json(w, r, &exports);
    std::fputs((w.str() + "\n").c_str(), stdout);
  } else {
    fmt::print("{} on {} x {} ({} GPUs), global batch {} ({} tokens)\n", model.name, cluster.nodes, cluster.name,
               cluster.total_gpus(), training.global_batch,
               units::human_count(static_cast<double>(training.global_batch) * model.seq_len));
    fmt::print("{} plans, {} fit; {:.2f} s on {} threads{}\n\n", r.enumerated, r.fitting, r.elapsed_s, r.threads,
               r.cancelled ? " (interrupted: best found so far)" : "");
    if (r.rows.empty()) fmt::print("no plan fits.\n");
    else print_search_rows(r, shown);
    print_shortfall(r, shown);
    print_rejections(r, 12);
    for (const auto& [label, why] : r.simulator_rejected) fmt::print("  rejected by the simulator: {}: {}\n", label, why);
  }
  if (!args.flag("json")) print_exports(r, exports);
  emit_winner(r, args, model_path, hw_path);
  if (r.rows.empty()) return 1;
  for (const auto& x : {exports.megatron, exports.megatron_bridge, exports.deepspeed, exports.torchtitan})
    if (x && !x->row) return 1;  // an export was asked for and no plan of that framework fits
  return r.cancelled ? 130 : 0;
}

}  // namespace starfish::cli

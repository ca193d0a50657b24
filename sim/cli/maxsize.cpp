// starfish maxsize --hw H [--family gpt|llama] [--nodes N | --gpus N] [--seq S] [--batch B]
// [--max-iteration T] [--chunk-nvme] [--emit DIR [--force]] [--json]: the largest model of a
// family some plan can train on the hardware, its plan and simulated throughput, what binds the
// next size, per training system (sim/search/variants.h), each in its own plan space.
#include <atomic>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "sim/cli/cli.h"
#include "sim/cli/cost_options.h"
#include "sim/cli/plan_export.h"
#include "sim/cli/plan_text.h"
#include "sim/cost/energy.h"
#include "sim/cost/params.h"
#include "sim/search/maxsize.h"
#include "sim/search/size_cluster.h"
#include "sim/search/variants.h"
#include "sim/spec/error.h"
#include "sim/spec/spec_io.h"
#include "sim/spec/units.h"

namespace starfish::cli {
namespace {

struct Variant {
  search::SystemVariant system;
  search::MaxSizeResult result;    // the largest that trains within the budget
  search::MaxSizeResult capacity;  // memory alone (found == false and probes == 0 under --no-budget)
};

// What training an answer costs: the price per GPU-hour (--price, else the profile's) and the
// energy assumptions (energy.h), for the hardware searched.
struct CostInputs : CostOptions {
  const Cluster* cluster = nullptr;
  TrainingCost of(const search::MaxSizeResult& r) const {
    return training_cost(cluster->node, cluster->total_gpus(), r.days_to_train, price_per_gpu_hour, energy);
  }
};

// A found answer passed the simulator (max_model_size's rule): its numbers are the simulated ones.
const search::Evaluation& simulated(const search::MaxSizeResult& r) { return *r.best.rows.front().refined; }

void write_answer_json(JsonWriter& w, const search::MaxSizeResult& r, const CostInputs& costs) {
  w.begin_object();
  w.field("found", r.found);
  if (r.found) {
    w.field("model", r.model.name).field("parameters", r.parameters);
    w.field("layers", r.model.layers).field("hidden", r.model.hidden).field("heads", r.model.heads);
    const search::Row& best = r.best.rows.front();
    w.field("plan_label", best.label());
    w.key("plan");
    write_plan_json(w, r.best.job(best));
    w.field("global_batch", r.best.training.global_batch);
    w.field("tier", simulated(r).source).field("tokens_per_s", simulated(r).tokens_per_s).field("mfu", simulated(r).mfu);
    w.field("iteration_s", simulated(r).iteration_s);
    w.field("tokens", r.tokens).field("days_to_train", r.days_to_train);
    const TrainingCost c = costs.of(r);
    w.key("cost").begin_object();
    w.field("gpu_hours", c.gpu_hours).field("dollars", c.dollars).field("kwh", c.kwh).field("tonnes_co2e", c.tonnes_co2e);
    w.end_object();
    w.key("analytic").begin_object();
    w.field("tokens_per_s", best.analytic.tokens_per_s).field("iteration_s", best.analytic.time.iteration_s);
    w.end_object();
  }
  w.field("next_model", r.next_model.name).field("binding", constraint_name(r.binding)).field("binding_detail", r.binding_detail);
  w.field("probes", r.probes);
  w.end_object();
}

void write_variant_json(JsonWriter& w, const Variant& v, const CostInputs& costs) {
  w.begin_object();
  w.field("variant", v.system.name).field("key", v.system.key);
  w.key("within_budget");
  write_answer_json(w, v.result, costs);
  if (v.capacity.probes > 0) {
    w.key("memory_bound");
    write_answer_json(w, v.capacity, costs);
  }
  w.end_object();
}

// --emit DIR: the found variants' plans, each with its (generated) model file beside it.
void emit_variants(const std::string& dir, const std::vector<Variant>& variants, const Cluster& cluster, const std::string& family,
                   const std::string& hw_path, bool force) {
  std::vector<EmittedAnswer> answers;
  for (const Variant& v : variants) {
    for (bool bound : {false, true}) {
      const search::MaxSizeResult& r = bound ? v.capacity : v.result;
      if (!r.found) continue;
      const std::string title = "starfish maxsize (" + std::string(v.system.name) + "): the largest " + family +
                                " model on " + std::to_string(cluster.nodes) + " x " + cluster.name +
                                (bound ? " (memory alone)" : " within the budget") + ", " + r.model.name + " (" +
                                units::human_count(r.parameters) + " parameters), simulated at " +
                                units::human_count(simulated(r).tokens_per_s) + " tokens/s";
      answers.push_back({std::string(v.system.key) + (bound ? "-memory-bound" : "") + "-plan.yaml", title,
                         r.best.job(r.best.rows.front())});
    }
  }
  if (answers.empty()) throw std::runtime_error("no model fits, so there is nothing to emit");
  emit_answers(dir, answers, hw_path, force);
}

// "12.5 d", "3.4 y": days, in years past a thousand days.
std::string human_days(double days) {
  if (days >= 1000) return fmt::format("{:.1f} y", days / 365.25);
  return fmt::format("{:.1f} d", days);
}

const Variant& variant_of(const std::vector<Variant>& variants, search::VariantKind kind) {
  for (const Variant& v : variants)
    if (v.system.kind == kind) return v;
  throw std::logic_error("maxsize: variant missing");
}

// Like with like: the two systems that train beyond the GPU on one node, each in its own plan
// space, on the same hardware, batch and budget.
void print_ratio_line(const std::vector<Variant>& variants, bool memory_bound, bool budgeted) {
  const Variant& ps = variant_of(variants, search::VariantKind::patrickstar);
  const Variant& zo = variant_of(variants, search::VariantKind::zero_offload);
  const search::MaxSizeResult& a = memory_bound ? ps.capacity : ps.result;
  const search::MaxSizeResult& b = memory_bound ? zo.capacity : zo.result;
  if (a.found && b.found)
    fmt::print("{} vs {}: {:.2f}x the model size (same hardware, batch and {}; each in its own plan space)\n",
               ps.system.name, zo.system.name, static_cast<double>(a.parameters) / static_cast<double>(b.parameters),
               memory_bound || !budgeted ? "memory" : "budget");
}

void print_answer_row(const char* name, const search::MaxSizeResult& r) {
  if (!r.found) {
    fmt::print("{:<24} {:>10} {:>7} {:>7} {:>12} {:>7} {:>10}  {:<16} {}\n", name, "none", "-", "-", "-", "-", "-",
               constraint_name(r.binding), "even " + r.next_model.name + " does not fit");
    return;
  }
  fmt::print("{:<24} {:>10} {:7} {:7} {:>12} {:>6.1f}% {:>10}  {:<16} {}\n", name, units::human_count(r.parameters),
             r.model.layers, r.model.hidden, units::human_count(simulated(r).tokens_per_s), 100 * simulated(r).mfu,
             human_days(r.days_to_train), constraint_name(r.binding), r.best.rows.front().label());
}

void print_table(const std::vector<Variant>& variants, bool memory_bound, bool budgeted) {
  fmt::print("{:<24} {:>10} {:>7} {:>7} {:>12} {:>7} {:>10}  {:<16} {}\n", "variant", "params", "layers", "hidden", "tokens/s",
             "MFU", "train", "binding", "plan");
  for (const Variant& v : variants) print_answer_row(v.system.name, memory_bound ? v.capacity : v.result);
  print_ratio_line(variants, memory_bound, budgeted);
}

void print_costs(const std::vector<Variant>& variants, const CostInputs& costs) {
  fmt::print("\ncost to train each answer within the budget (energy: GPU TDP x {:g} + node share, PUE {:g}, {:g} kgCO2e/kWh)\n",
             costs.energy.gpu_utilisation, costs.energy.pue, costs.energy.grid_kg_co2e_per_kwh);
  for (const Variant& v : variants)
    if (v.result.found) fmt::print("  {:<24} {}\n", v.system.name, describe(costs.of(v.result)));
  if (costs.price_per_gpu_hour <= 0) fmt::print("  (no price: the profile has no price_per_gpu_hour; --price sets one)\n");
}

void print_text(const std::vector<Variant>& variants, const Cluster& cluster, const search::MaxSizeOptions& base,
                bool budget_given, const CostInputs& costs) {
  fmt::print("largest {} model on {} x {} ({} GPUs)\n", base.family, cluster.nodes, cluster.name, cluster.total_gpus());
  fmt::print("rule: hidden = 128 x heads, layers = heads (heads in steps of {}), then extra layers\n", cluster.node.gpus);
  fmt::print("global batch: {} sequences{}; every answer simulated\n",
             base.global_batch > 0 ? base.global_batch : int64_t{cluster.total_gpus()},
             base.global_batch > 0 ? "" : " (one per GPU)");
  fmt::print("budget: {}{}\n", search::describe(base.budget),
             budget_given ? "" : " (default; --tokens/--days/--min-tokens-per-s/--max-iteration set it, --no-budget drops it)");
  fmt::print("train: days to train each answer on {} at its simulated throughput\n\n",
             base.budget.tokens > 0 ? units::human_count(static_cast<double>(base.budget.tokens)) + " tokens"
                                    : std::string("20 tokens per parameter"));
  if (base.budget.time_limited) {
    fmt::print("within the budget\n");
    print_table(variants, false, true);
    fmt::print("\nmemory alone (what fits, however long it takes)\n");
    print_table(variants, true, true);
  } else {
    print_table(variants, false, false);
  }
  print_costs(variants, costs);
  const search::MaxSizeResult& any = variants[0].result;
  if (any.found) {
    fmt::print("\nbest plan at {}: {}\n", any.model.name, plan_summary(any.best.job(any.best.rows.front())));
    fmt::print("next size {} fails: {}\n", any.next_model.name,
               any.binding_detail.empty() ? constraint_name(any.binding) : any.binding_detail.c_str());
  }
  if (!variant_of(variants, search::VariantKind::patrickstar).result.found)
    fmt::print("(chunked plans run each rank's whole batch as one micro-batch: the chunk runtime has no gradient\n"
               " accumulation; {} suits them)\n",
               base.global_batch > 0 ? "a smaller --batch" : "a --batch smaller than the default ~4Mi tokens");
}

search::TrainingBudget parse_budget(const Args& args) {
  search::TrainingBudget b;
  const bool tokens_or_days = args.get("tokens") || args.get("days");
  const bool floors = args.get("min-tokens-per-s") || args.get("max-iteration");
  if (args.flag("no-budget")) {
    if (tokens_or_days || floors)
      throw UsageError("--no-budget excludes --tokens, --days, --min-tokens-per-s and --max-iteration");
    b.time_limited = false;
    return b;
  }
  if (!tokens_or_days && floors) b.days = 0;  // only the floors given
  if (auto t = args.get("tokens")) {
    try {
      b.tokens = search::parse_token_count(*t);
    } catch (const SpecError& e) {
      throw UsageError(std::string("--tokens: ") + e.what());
    }
  }
  if (auto d = args.get("days")) b.days = parse_positive_number("days", *d, "a number of days");
  if (auto r = args.get("min-tokens-per-s"))
    b.min_tokens_per_s = parse_positive_number("min-tokens-per-s", *r, "a number of tokens per second");
  if (auto t = args.get("max-iteration")) {
    try {
      b.max_iteration_s = units::parse_seconds(*t);
    } catch (const std::exception& e) {
      throw UsageError("--max-iteration expects a duration like 30s or 2min, got '" + *t + "'");
    }
    if (!(b.max_iteration_s > 0)) throw UsageError("--max-iteration must be positive");
  }
  return b;
}

void print_help() {
  fmt::print(
      "usage: starfish maxsize --hw H [--family gpt|llama] [--nodes N | --gpus N] [--seq S]\n"
      "                        [--batch B] [--tokens N] [--days D] [--min-tokens-per-s R]\n"
      "                        [--max-iteration T] [--no-budget] [--chunk-nvme]\n"
      "                        [--price USD] [--gpu-utilisation U] [--pue P] [--grid KG]\n"
      "                        [--emit DIR [--force]] [--json]\n"
      "  the largest model of the family (hidden = 128 x heads, layers = heads, then more layers\n"
      "  at that hidden size) that some plan trains on H; binary search over size. Each size's\n"
      "  best plan is simulated, and a plan the simulator refuses gives way to the next.\n"
      "  B: global batch in sequences (default one per GPU: the chunk runtime does not\n"
      "  accumulate gradients, and the smallest batch lets each runtime train its largest).\n"
      "  Budget: the largest model that trains within it. Default: 20 tokens per parameter\n"
      "  (Chinchilla) within 90 days. --tokens N (300B, 1T) and --days D set it; --min-tokens-per-s\n"
      "  R and --max-iteration T (30s, 2min) add a throughput floor and an iteration ceiling (given\n"
      "  alone, they replace the default). --no-budget: memory alone (a capacity bound); the\n"
      "  output still says how long the answer takes to train on 20 tokens per parameter.\n"
      "  One answer per training system, each searched in the plans that system can run:\n"
      "    any plan; PatrickStar-style (DP + chunks over GPU and CPU, no TP/PP, NVMe only with\n"
      "    --chunk-nvme); DeepSpeed ZeRO-Offload (ZeRO-2, grads and optimizer on the CPU, CPU\n"
      "    Adam, TP allowed); DeepSpeed ZeRO-Infinity (ZeRO-3, GPU/CPU/NVMe); Megatron 3D\n"
      "    (TP/PP/DP, distributed optimizer, everything on the GPU).\n"
      "  Cost per answer: GPU-hours, dollars (--price per GPU-hour, else the profile's), energy\n"
      "  (GPU TDP x U (default 1) + the node's non-GPU share, x PUE P (default 1.1)) and tCO2e\n"
      "  (KG per kWh, default 0.429: US average, Patterson et al. 2021).\n"
      "  --emit DIR writes each answer as DIR/<variant>-plan.yaml with its model file beside it,\n"
      "  for simulate --plan / estimate --plan (no overwrite without --force).\n");
}

// The options every training system's sizing shares: family, sequence, batch, budget.
search::MaxSizeOptions parse_base_options(const Args& args) {
  search::MaxSizeOptions base;
  base.family = args.get("family").value_or("gpt");
  if (base.family != "gpt" && base.family != "llama")
    throw UsageError("--family must be gpt or llama, got '" + base.family + "'");
  if (auto s = args.get("seq")) base.seq_len = parse_positive("seq", *s);
  if (auto b = args.get("batch")) base.global_batch = parse_positive("batch", *b);
  if (auto t = args.get("threads")) base.search.threads = parse_positive("threads", *t);
  base.budget = parse_budget(args);
  base.search.top_k = 1;
  return base;
}

// Each training system's largest model, within the budget and (when the budget limits time)
// by memory alone, with a progress bar on a terminal.
std::vector<Variant> size_each_system(const Cluster& cluster, search::MaxSizeOptions base, bool chunk_nvme,
                                      const std::atomic<bool>* cancel) {
  base.search.cancel = cancel;
  ProgressBar bar;
  if (bar.enabled()) base.search.progress = [&](const search::Progress& p) { bar(p); };
  std::vector<Variant> variants;
  for (search::SystemVariant& sv : search::all_system_variants(chunk_nvme)) {
    Variant v{std::move(sv), {}, {}};
    search::MaxSizeOptions o = base;
    o.search.space = v.system.space;
    o.heads_step = cluster.node.gpus;
    const std::string system = v.system.name;
    o.on_probe = [&bar, system](const Model& m, int probe) {
      bar.set_context(system + ", size " + std::to_string(probe) + ": " +
                      units::human_count(static_cast<double>(count_parameters(m).total)) + " parameters");
    };
    v.result = search::max_model_size(cluster, o);
    if (base.budget.time_limited) {
      o.budget.time_limited = false;
      v.capacity = search::max_model_size(cluster, o);
    }
    variants.push_back(std::move(v));
  }
  bar.finish();
  return variants;
}

void write_json(const std::vector<Variant>& variants, const Cluster& cluster, const search::MaxSizeOptions& base,
                const CostInputs& costs) {
  JsonWriter w(true);
  w.begin_object();
  w.field("kind", "starfish.maxsize").field("hardware", cluster.name).field("nodes", cluster.nodes);
  w.field("gpus", cluster.total_gpus()).field("family", base.family);
  w.field("budget", search::describe(base.budget));
  w.key("variants").begin_array();
  for (const Variant& v : variants) write_variant_json(w, v, costs);
  w.end_array();
  w.end_object();
  std::fputs((w.str() + "\n").c_str(), stdout);
}

}  // namespace

int run_maxsize(const std::vector<std::string>& argv) {
  Args args(argv, {"hw", "family", "nodes", "gpus", "seq", "batch", "tokens", "days", "min-tokens-per-s",
                   "max-iteration", "threads", "emit", "price", "gpu-utilisation", "pue", "grid"},
            {"json", "force", "chunk-nvme", "no-budget", "help"});
  if (args.flag("help")) {
    print_help();
    return 0;
  }
  if (!args.positional().empty()) throw UsageError("unexpected argument '" + args.positional().front() + "'");
  if (args.flag("force") && !args.get("emit")) throw UsageError("--force only applies to --emit");
  const std::string hw_path = resolve_hardware(args.required("hw"));
  const Cluster cluster = resize_cluster(load_cluster(hw_path), args.get("gpus"), args.get("nodes"), hw_path);
  const search::MaxSizeOptions base = parse_base_options(args);
  // Every option is read before the search starts: a bad --price fails at once, not after it.
  CostInputs costs;
  static_cast<CostOptions&>(costs) = parse_cost_options(args, cluster.price_per_gpu_hour);
  SigintCancel sigint;
  const std::vector<Variant> variants = size_each_system(cluster, base, args.flag("chunk-nvme"), sigint.flag());
  costs.cluster = &cluster;
  if (auto dir = args.get("emit")) emit_variants(*dir, variants, cluster, base.family, hw_path, args.flag("force"));
  if (args.flag("json")) write_json(variants, cluster, base, costs);
  else
    print_text(variants, cluster, base,
               args.get("tokens") || args.get("days") || args.get("min-tokens-per-s") || args.get("max-iteration"), costs);
  return variants[0].result.found ? 0 : 1;
}

}  // namespace starfish::cli

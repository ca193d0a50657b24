// starfish size-cluster --model M --tokens T --days D --hw H [--batch B] [--max-nodes N]
// [--emit DIR [--force]] [--json]: the fewest nodes of H that train M on T tokens within D days,
// with the (simulated) plan.
// T: "300B" or "1T" (B = billion, T = trillion tokens), "300G", or "300e9".
#include <atomic>
#include <cstdio>
#include <stdexcept>
#include <string>

#include <fmt/core.h>

#include "sim/cli/cli.h"
#include "sim/cli/cost_options.h"
#include "sim/cli/plan_export.h"
#include "sim/cli/plan_text.h"
#include "sim/cost/energy.h"
#include "sim/search/size_cluster.h"
#include "sim/spec/error.h"
#include "sim/spec/spec_io.h"
#include "sim/spec/units.h"

namespace starfish::cli {
namespace {

// The node counts that meet the deadline, fastest first and cheapest first, and the cheapest.
void print_options(const search::SizeClusterResult& r, const Cluster& hw, double price, const EnergyAssumptions& energy) {
  if (r.options.size() < 2) return;
  auto row = [&](size_t i) {
    const search::SizeClusterOption& o = r.options[i];
    const TrainingCost c = training_cost(hw.node, o.gpus, o.days_needed, price, energy);
    fmt::print("  {:6} {:7} {:>7.1f} {:>10}  {}  {}\n", o.nodes, o.gpus, o.days_needed, units::human_count(o.tokens_per_s),
               describe(c), o.plan_label);
  };
  for (const auto& [title, order] : {std::pair{"by time", r.by_time()}, std::pair{"by cost", r.by_cost()}}) {
    fmt::print("\nnode counts that meet the deadline, {} (each simulated):\n  {:>6} {:>7} {:>7} {:>10}  {}\n", title, "nodes",
               "GPUs", "days", "tokens/s", "cost, plan");
    for (size_t i : order) row(i);
  }
  const search::SizeClusterOption& cheapest = r.options[r.by_cost().front()];
  fmt::print("cheapest that meets the deadline: {} nodes, {:.1f} days, {}\n", cheapest.nodes, cheapest.days_needed,
             describe(training_cost(hw.node, cheapest.gpus, cheapest.days_needed, price, energy)));
}

void write_options_json(JsonWriter& w, const search::SizeClusterResult& r, const Cluster& hw, double price,
                        const EnergyAssumptions& energy) {
  w.key("options").begin_array();
  for (const search::SizeClusterOption& o : r.options) {
    const TrainingCost c = training_cost(hw.node, o.gpus, o.days_needed, price, energy);
    w.begin_object().field("nodes", o.nodes).field("gpus", o.gpus).field("days_needed", o.days_needed);
    w.field("tokens_per_s", o.tokens_per_s).field("gpu_hours", c.gpu_hours).field("dollars", c.dollars);
    w.field("kwh", c.kwh).field("tonnes_co2e", c.tonnes_co2e).field("plan_label", o.plan_label).end_object();
  }
  w.end_array();
  for (const auto& [key, order] : {std::pair{"by_time", r.by_time()}, std::pair{"by_cost", r.by_cost()}}) {
    w.key(key).begin_array();
    for (size_t i : order) w.value(static_cast<int64_t>(r.options[i].nodes));
    w.end_array();
  }
  w.field("cheapest_nodes", r.options[r.by_cost().front()].nodes);
}

void print_help() {
  fmt::print(
      "usage: starfish size-cluster --model M --tokens T --days D --hw H [--batch B] [--max-nodes N]\n"
      "                             [--price USD] [--gpu-utilisation U] [--pue P] [--grid KG]\n"
      "                             [--emit DIR [--force]] [--json]\n"
      "  T: tokens to train on: 300B or 1T (B = billion, T = trillion), 300G, or 300e9\n"
      "  D: days (a number, e.g. 30 or 7.5); B: global batch in sequences (default about 4Mi tokens)\n"
      "  Each node count's best plan is simulated; a plan the simulator refuses gives way to the next.\n"
      "  Beside the fewest nodes, the counts nearest 1.5, 2, 3 and 4 times it are searched too; those\n"
      "  that meet the deadline are ranked by time and by cost, and the cheapest is named.\n"
      "  Cost: GPU-hours, dollars (--price per GPU-hour, else the profile's), energy (GPU TDP x U,\n"
      "  default 1, + the node's non-GPU share, x PUE P, default 1.1) and tCO2e (KG per kWh,\n"
      "  default 0.429: US average, Patterson et al. 2021).\n"
      "  --emit DIR writes the answer as DIR/plan.yaml with its model file beside it, for\n"
      "  simulate --plan / estimate --plan (no overwrite without --force).\n");
}

// The question size-cluster answers, as its command line asks it.
struct Request {
  search::SizeClusterOptions options;
  std::string days;  // as given, for the emitted plan's title
  std::string hw_path;
  Model model;
  Cluster hw;
};

Request parse_request(const Args& args) {
  if (!args.positional().empty()) throw UsageError("unexpected argument '" + args.positional().front() + "'");
  if (args.flag("force") && !args.get("emit")) throw UsageError("--force only applies to --emit");
  Request q;
  search::SizeClusterOptions& o = q.options;
  try {
    o.tokens = search::parse_token_count(args.required("tokens"));
  } catch (const SpecError& e) {
    throw UsageError(std::string("--tokens: ") + e.what());
  }
  q.days = args.required("days");
  o.days = parse_positive_number("days", q.days, "a number of days");
  if (auto b = args.get("batch")) o.global_batch = parse_positive("batch", *b);
  if (auto n = args.get("max-nodes")) o.max_nodes = parse_positive("max-nodes", *n);
  if (auto t = args.get("threads")) o.search.threads = parse_positive("threads", *t);
  const std::string model_path = resolve_model(args.required("model"));
  q.hw_path = resolve_hardware(args.required("hw"));
  q.model = load_model(model_path);
  q.hw = load_cluster(q.hw_path);
  o.search.top_k = 1;
  return q;
}

// The sizing, with a progress bar on a terminal; `cancel` (Ctrl-C) stops it with the best so far.
search::SizeClusterResult size_with_progress(const Request& q, const std::atomic<bool>* cancel) {
  search::SizeClusterOptions o = q.options;
  o.search.cancel = cancel;
  ProgressBar bar;
  if (bar.enabled()) o.search.progress = [&](const search::Progress& p) { bar(p); };
  o.on_probe = [&bar](int nodes, int probe) {
    bar.set_context("probe " + std::to_string(probe) + ": " + std::to_string(nodes) + " nodes");
  };
  search::SizeClusterResult r = search::size_cluster(q.model, q.hw, o);
  bar.finish();
  return r;
}

void emit_answer(const std::string& dir, bool force, const Request& q, const search::SizeClusterResult& r) {
  if (!r.found) throw std::runtime_error("no node count meets the deadline, so there is nothing to emit: " + r.why_not);
  const search::Row& best = r.best.rows.front();
  const std::string title = "starfish size-cluster: " + q.model.name + " on " +
                            units::human_count(static_cast<double>(q.options.tokens)) + " tokens within " + q.days +
                            " days: " + std::to_string(r.nodes) + " x " + q.hw.name + ", simulated at " +
                            units::human_count(best.tokens_per_s) + " tokens/s";
  emit_answers(dir, {{"plan.yaml", title, r.best.job(best)}}, q.hw_path, force);
}

void write_json(const Request& q, const search::SizeClusterResult& r, const CostOptions& costs, const TrainingCost& cost) {
  JsonWriter w(true);
  w.begin_object();
  w.field("kind", "starfish.size_cluster").field("model", q.model.name).field("hardware", q.hw.name);
  w.field("tokens", q.options.tokens).field("days", q.options.days).field("found", r.found);
  if (r.found) {
    w.field("nodes", r.nodes).field("gpus", r.cluster.total_gpus()).field("days_needed", r.days_needed);
    if (cost.dollars > 0) w.field("cost", cost.dollars);
    w.field("gpu_hours", cost.gpu_hours).field("kwh", cost.kwh).field("tonnes_co2e", cost.tonnes_co2e);
    write_options_json(w, r, q.hw, costs.price_per_gpu_hour, costs.energy);
    w.key("search");
    write_search_json(w, r.best);
  } else {
    w.field("why_not", r.why_not);
  }
  w.field("probes", r.probes);
  w.end_object();
  std::fputs((w.str() + "\n").c_str(), stdout);
}

void print_text(const Request& q, const search::SizeClusterResult& r, const CostOptions& costs, const TrainingCost& cost) {
  const search::SizeClusterOptions& o = q.options;
  if (!r.found) {
    fmt::print("{} cannot train on {} tokens within {:g} days on up to {} nodes of {}: {}\n", q.model.name,
               units::human_count(static_cast<double>(o.tokens)), o.days, o.max_nodes, q.hw.name, r.why_not);
    return;
  }
  const search::Row& best = r.best.rows.front();
  fmt::print("{} on {} tokens within {:g} days: {} nodes of {} ({} GPUs), {:.1f} days\n", q.model.name,
             units::human_count(static_cast<double>(o.tokens)), o.days, r.nodes, q.hw.name, r.cluster.total_gpus(),
             r.days_needed);
  fmt::print("plan: {}\n", plan_summary(r.best.job(best)));
  fmt::print("throughput {} tokens/s, MFU {:.1f}% (simulated)", units::human_count(best.tokens_per_s), 100 * best.refined->mfu);
  fmt::print("  ({} searches)\n", r.probes);
  fmt::print("cost: {} (energy: GPU TDP x {:g} + node share, PUE {:g}, {:g} kgCO2e/kWh)\n", describe(cost),
             costs.energy.gpu_utilisation, costs.energy.pue, costs.energy.grid_kg_co2e_per_kwh);
  print_options(r, q.hw, costs.price_per_gpu_hour, costs.energy);
}

}  // namespace

int run_size_cluster(const std::vector<std::string>& argv) {
  Args args(argv, {"model", "hw", "tokens", "days", "batch", "max-nodes", "threads", "emit", "price", "gpu-utilisation", "pue", "grid"},
            {"json", "force", "help"});
  if (args.flag("help")) {
    print_help();
    return 0;
  }
  const Request q = parse_request(args);
  // Every option is read before the search starts: a bad --price fails at once, not after it.
  const CostOptions costs = parse_cost_options(args, q.hw.price_per_gpu_hour);
  SigintCancel sigint;
  const search::SizeClusterResult r = size_with_progress(q, sigint.flag());
  const TrainingCost cost =
      r.found ? training_cost(q.hw.node, r.cluster.total_gpus(), r.days_needed, costs.price_per_gpu_hour, costs.energy)
              : TrainingCost{};
  if (auto dir = args.get("emit")) emit_answer(*dir, args.flag("force"), q, r);
  if (args.flag("json")) write_json(q, r, costs, cost);
  else print_text(q, r, costs, cost);
  return r.found ? 0 : 1;
}

}  // namespace starfish::cli

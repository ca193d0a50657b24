// starfish check FILE... [--json]: validates hwprofiles, models and plans (a plan naming its model and
// hardware is also checked against them). Prints one line per file; exits 1 on the first error.
#include <fmt/core.h>

#include "sim/cli/cli.h"
#include "sim/cli/job_loader.h"
#include "sim/spec/input_file.h"
#include "sim/spec/json_writer.h"
#include "sim/spec/spec_io.h"
#include "sim/spec/yaml_reader.h"

namespace starfish::cli {

namespace {

// One file's verdict: its kind ("hardware", "model", "plan") and a one-line summary.
std::pair<const char*, std::string> check_file(const std::string& path) {
  const YAML::Node root = load_yaml_file(path);
  if (root["node"] || root["base"]) {  // a hardware profile (one naming a base may add no node field)
    const Cluster c = load_cluster(path);
    return {"hardware", fmt::format("hardware '{}', {} node(s) x {} {}", c.name, c.nodes, c.node.gpus, c.node.gpu.name)};
  }
  if (root["layers"]) {
    const Model m = parse_model(root, input_name(path));
    return {"model", fmt::format("model '{}', {} layers, hidden {}", m.name, m.layers, m.hidden)};
  }
  if (root["training"]) {
    const PlanFile p = parse_plan_file(root, input_name(path));
    if (p.model_path && p.hardware_path) {
      const Job job = load_job({}, {}, path, {});
      return {"plan", fmt::format("plan TP{} PP{} DP{} for {} on {}", job.plan.tp, job.plan.pp, job.plan.dp, job.model.name,
                                  job.cluster.name)};
    }
    return {"plan", fmt::format("plan TP{} PP{} (model and hardware not named; cross-checks skipped)", p.plan.tp, p.plan.pp)};
  }
  throw SpecError(input_name(path) + ":1:1: not a hwprofile (no 'node'), model (no 'layers') or plan (no 'training')");
}

}  // namespace

int run_check(const std::vector<std::string>& argv) {
  Args args(argv, {}, {"json", "help"});
  if (args.flag("help") || args.positional().empty()) {
    fmt::print("usage: starfish check FILE... [--json]\n  Validates hwprofile, model and plan YAML files ('-': stdin);\n"
               "  --json: one object per file (file, kind, summary).\n");
    return args.flag("help") ? 0 : 2;
  }
  JsonWriter w(true);
  w.begin_array();
  for (const std::string& path : args.positional()) {
    const auto [kind, summary] = check_file(path);
    if (args.flag("json")) w.begin_object().field("file", input_name(path)).field("kind", kind).field("summary", summary).end_object();
    else fmt::print("{}: {}\n", input_name(path), summary);
  }
  w.end_array();
  if (args.flag("json")) fmt::print("{}\n", w.str());
  return 0;
}

}  // namespace starfish::cli

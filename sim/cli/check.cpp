// starfish check FILE...: validates hwprofiles, models and plans (a plan naming its model and
// hardware is also checked against them). Prints one line per file; exits 1 on the first error.
#include <cstdio>

#include "sim/cli/cli.h"
#include "sim/cli/job_loader.h"
#include "sim/spec/spec_io.h"
#include "sim/spec/yaml_reader.h"

namespace starfish::cli {

int run_check(const std::vector<std::string>& argv) {
  Args args(argv, {}, {"help"});
  if (args.flag("help") || args.positional().empty()) {
    std::printf("usage: starfish check FILE...\n  Validates hwprofile, model and plan YAML files.\n");
    return args.flag("help") ? 0 : 2;
  }
  for (const std::string& path : args.positional()) {
    const YAML::Node root = load_yaml_file(path);
    if (root["node"]) {
      const Cluster c = parse_cluster(root, path);
      std::printf("%s: hardware '%s', %d node(s) x %d %s\n", path.c_str(), c.name.c_str(), c.nodes, c.node.gpus,
                  c.node.gpu.name.c_str());
    } else if (root["layers"]) {
      const Model m = parse_model(root, path);
      std::printf("%s: model '%s', %d layers, hidden %d\n", path.c_str(), m.name.c_str(), m.layers, m.hidden);
    } else if (root["training"]) {
      const PlanFile p = parse_plan_file(root, path);
      if (p.model_path && p.hardware_path) {
        const Job job = load_job({}, {}, path, {});
        std::printf("%s: plan TP%d PP%d DP%d for %s on %s\n", path.c_str(), job.plan.tp, job.plan.pp, job.plan.dp,
                    job.model.name.c_str(), job.cluster.name.c_str());
      } else {
        std::printf("%s: plan TP%d PP%d (model and hardware not named; cross-checks skipped)\n", path.c_str(),
                    p.plan.tp, p.plan.pp);
      }
    } else {
      throw SpecError(path + ":1:1: not a hwprofile (no 'node'), model (no 'layers') or plan (no 'training')");
    }
  }
  return 0;
}

}  // namespace starfish::cli

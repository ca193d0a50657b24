// starfish: plan and simulate the training of large transformers.
#include <cstdio>
#include <exception>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "git_revision.h"  // generated: STARFISH_GIT_REVISION
#include "sim/cli/cli.h"
#include "sim/spec/error.h"

namespace {

struct Verb {
  std::function<int(const std::vector<std::string>&)> run;
  const char* summary;
};

const std::map<std::string, Verb>& verbs() {
  static const std::map<std::string, Verb> table{
      {"estimate", {starfish::cli::run_estimate, "analytic parameters, FLOPs, memory per tier and iteration time"}},
      {"calibrate", {starfish::cli::run_calibrate, "fit a GPU's GEMM and HBM efficiency from measurements into a new hwprofile"}},
      {"compare", {starfish::cli::run_compare, "predicted (simulate --json) against measured (starfish-run --report)"}},
      {"check", {starfish::cli::run_check, "validate hwprofile, model and plan YAML files"}},
      {"import-hf", {starfish::cli::run_import_hf, "a Hugging Face config.json as a Starfish model file"}},
      {"search", {starfish::cli::run_search, "rank every plan of a model on a cluster by throughput"}},
      {"maxsize", {starfish::cli::run_maxsize, "the largest model of a family some plan can train on the hardware"}},
      {"size-cluster", {starfish::cli::run_size_cluster, "the fewest nodes that train T tokens within D days"}},
      {"simulate", {starfish::cli::run_simulate, "one iteration in the discrete-event simulator (--trace for a timeline)"}},
  };
  return table;
}

void usage(std::FILE* out) {
  fmt::print(out, "usage: starfish <verb> [options]\n\nverbs:\n");
  for (const auto& [name, verb] : verbs()) fmt::print(out, "  {:<10} {}\n", name, verb.summary);
  fmt::print(out, "\nRun 'starfish <verb> --help' (or -h) for a verb's options; 'starfish --version' for the build.\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  const std::string verb = argv[1];
  if (verb == "--help" || verb == "-h" || verb == "help") {
    usage(stdout);
    return 0;
  }
  if (verb == "--version") {
    fmt::print("starfish {} (git {})\n", STARFISH_VERSION, STARFISH_GIT_REVISION);
    return 0;
  }
  auto it = verbs().find(verb);
  if (it == verbs().end()) {
    fmt::print(stderr, "starfish: unknown verb '{}'\n", verb);
    usage(stderr);
    return 2;
  }
  try {
    std::vector<std::string> args(argv + 2, argv + argc);
    for (std::string& a : args)
      if (a == "-h") a = "--help";  // every verb's --help, by its short name
    return it->second.run(args);
  } catch (const starfish::cli::UsageError& e) {
    fmt::print(stderr, "starfish {}: {}\n", verb, e.what());
    return 2;
  } catch (const starfish::SpecError& e) {
    fmt::print(stderr, "{}\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "starfish {}: {}\n", verb, e.what());
    return 1;
  }
}

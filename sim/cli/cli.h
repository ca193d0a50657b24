#pragma once
// The `starfish` command line: one verb per file, each with its table of options (args.h).
#include <string>
#include <vector>

#include "sim/cli/args.h"

namespace starfish::cli {

// Finds a bundled file by name: "dgx-a100-80gb" -> hwprofiles/dgx-a100-80gb.yaml; a path that
// exists is used as given.
std::string resolve_hardware(const std::string& name_or_path);
std::string resolve_model(const std::string& name_or_path);

int run_estimate(const std::vector<std::string>& args);
int run_check(const std::vector<std::string>& args);
int run_import_hf(const std::vector<std::string>& args);
int run_search(const std::vector<std::string>& args);
int run_maxsize(const std::vector<std::string>& args);
int run_size_cluster(const std::vector<std::string>& args);
int run_simulate(const std::vector<std::string>& args);
int run_calibrate(const std::vector<std::string>& args);
int run_compare(const std::vector<std::string>& args);

}  // namespace starfish::cli

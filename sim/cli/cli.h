#pragma once
// The `starfish` command line: one verb per file, sharing this argument parser.
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace starfish::cli {

// "--name value" options, "--flag" switches and positional arguments. Unknown options are an
// error (a typo must not silently fall back to a default).
class Args {
 public:
  Args(std::vector<std::string> argv, std::set<std::string> options, std::set<std::string> flags);
  std::optional<std::string> get(const std::string& name) const;
  std::string required(const std::string& name) const;
  bool flag(const std::string& name) const { return flags_.count(name) > 0; }
  const std::vector<std::string>& positional() const { return positional_; }

 private:
  std::map<std::string, std::string> values_;
  std::set<std::string> flags_;
  std::vector<std::string> positional_;
};

// Thrown for command-line mistakes; main prints "starfish: <message>" and exits 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

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

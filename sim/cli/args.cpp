#include <filesystem>
#include <stdexcept>

#include "sim/cli/cli.h"

namespace starfish::cli {

Args::Args(std::vector<std::string> argv, std::set<std::string> options, std::set<std::string> flags) {
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a.rfind("--", 0) != 0 || a == "--") {
      positional_.push_back(a);
      continue;
    }
    std::string name = a.substr(2), value;
    const size_t eq = name.find('=');
    const bool inline_value = eq != std::string::npos;
    if (inline_value) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    if (flags.count(name)) {
      if (inline_value) throw UsageError("--" + name + " takes no value");
      flags_.insert(name);
    } else if (options.count(name)) {
      if (!inline_value) {
        if (i + 1 >= argv.size()) throw UsageError("--" + name + " needs a value");
        value = argv[++i];
      }
      values_[name] = value;
    } else {
      std::string known;
      for (const auto& o : options) known += " --" + o;
      for (const auto& f : flags) known += " --" + f;
      throw UsageError("unknown option --" + name + " (known:" + known + ")");
    }
  }
}

std::optional<std::string> Args::get(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) return std::nullopt;
  return it->second;
}

std::string Args::required(const std::string& name) const {
  auto v = get(name);
  if (!v) throw UsageError("missing --" + name);
  return *v;
}

namespace {
std::string resolve_in(const std::string& name, const std::vector<std::string>& folders) {
  namespace fs = std::filesystem;
  if (name == "-" || fs::exists(name)) return name;  // "-": standard input
  for (const auto& folder : folders) {
    for (const std::string& candidate : {folder + "/" + name + ".yaml", folder + "/" + name}) {
      if (fs::exists(candidate)) return candidate;
    }
  }
  std::string where;
  for (const auto& f : folders) where += " " + f;
  throw UsageError("'" + name + "' is neither a file nor a bundled name (looked in" + where + ")");
}
}  // namespace

std::string resolve_hardware(const std::string& name) {
  return resolve_in(name, {"hwprofiles", std::string(STARFISH_SOURCE_DIR) + "/hwprofiles"});
}
std::string resolve_model(const std::string& name) {
  return resolve_in(name, {"configs/models", std::string(STARFISH_SOURCE_DIR) + "/configs/models"});
}

}  // namespace starfish::cli

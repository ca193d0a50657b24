#include <filesystem>

#include "sim/cli/cli.h"

namespace starfish::cli {
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

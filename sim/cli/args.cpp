#include "sim/cli/args.h"

#include <CLI/CLI.hpp>

#include <algorithm>

namespace starfish::cli {
namespace {

// CLI11's messages in Starfish's words where they name an option unclearly: "--top: 1 required
// TEXT missing" is "--top needs a value", "json was given a disallowed flag override" is "--json
// takes no value".
std::string usage_text(const std::string& what) {
  if (what.find("required") != std::string::npos && what.find("missing") != std::string::npos)
    return what.substr(0, what.find(':')) + " needs a value";
  if (const size_t at = what.find(" was given a disallowed flag override"); at != std::string::npos)
    return "--" + what.substr(0, at) + " takes no value";
  return what;
}

}  // namespace

Args::Args(std::vector<std::string> argv, std::set<std::string> options, std::set<std::string> flags) {
  CLI::App app;
  app.set_help_flag();  // each verb prints its own --help (a flag in its table)
  app.allow_extras();   // unknown options are collected and refused below, naming the known ones
  std::map<std::string, CLI::Option*> given;
  std::map<std::string, std::string> values;
  for (const std::string& name : options)
    given[name] = app.add_option("--" + name, values[name])->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  std::map<std::string, CLI::Option*> switches;
  for (const std::string& name : flags) switches[name] = app.add_flag("--" + name)->disable_flag_override();
  app.add_option("positional", positional_);
  try {
    std::reverse(argv.begin(), argv.end());  // CLI11 takes the arguments last first
    app.parse(argv);
  } catch (const CLI::ParseError& e) {
    throw UsageError(usage_text(e.what()));
  }
  for (const std::string& extra : app.remaining()) {
    std::string known;
    for (const auto& o : options) known += " --" + o;
    for (const auto& f : flags) known += " --" + f;
    throw UsageError("unknown option " + extra + " (known:" + known + ")");
  }
  for (const auto& [name, option] : given)
    if (option->count() > 0) values_[name] = values[name];
  for (const auto& [name, option] : switches)
    if (option->count() > 0) flags_.insert(name);
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

}  // namespace starfish::cli

#pragma once
// The one command-line parser of `starfish` (every verb) and `starfish-run`: each program or verb
// states its table of "--name value" options and "--flag" switches; CLI11 parses. Unknown
// options are an error (a typo must not silently fall back to a default).
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace starfish::cli {

class Args {
 public:
  // `options` take a value ("--top 5" or "--top=5"), `flags` take none; the rest is positional
  // ("-" among them: standard input). An option given twice keeps its last value.
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

// Thrown for command-line mistakes; `starfish` prints "starfish <verb>: <message>" and exits 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace starfish::cli

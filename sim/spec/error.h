#pragma once
// Errors in user input carry where they came from, so the CLI can print one line that names
// the file, the line and the field: "hw.yaml:7:3: field 'gpu.memory': expected a size like 80GiB".
#include <stdexcept>
#include <string>

namespace starfish {

struct SourceLoc {
  std::string file;  // empty when the value was built in code
  int line = 0;      // 1-based; 0 = unknown
  int column = 0;    // 1-based; 0 = unknown
  std::string to_string() const;  // "file:line:col" (or just "file", or "<code>")
};

// Any invalid input: a malformed file, a bad value, an inconsistent plan.
class SpecError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Throws SpecError("<loc>: field '<field>': <message>").
[[noreturn]] void fail_at(const SourceLoc& loc, const std::string& field, const std::string& message);

}  // namespace starfish

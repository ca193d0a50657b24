#pragma once
// Errors in user input carry where they came from, so the CLI can print one line that names
// the file, the line and the field: "hw.yaml:7:3: field 'gpu.memory': expected a size like 80GiB".
#include <stdexcept>
#include <string>
#include <string_view>

namespace starfish {

struct SourceLoc {
  std::string file;  // empty when the value was built in code
  int line = 0;      // 1-based; 0 = unknown
  int column = 0;    // 1-based; 0 = unknown
  std::string to_string() const;  // "file:line:col" (or just "file", or "<code>")
};

// Any invalid input: a malformed file, a bad value, an inconsistent plan. The message is always
// one line (a user's value may hold line breaks or control characters: they are escaped), so a
// script can take the first line of stderr as the whole error.
class SpecError : public std::runtime_error {
 public:
  explicit SpecError(const std::string& message);
};

// `text` made fit for one line of an error message: line breaks and other control characters
// escaped (\n, \x01), and at most `max_chars` characters of it kept ("..." marks a cut).
std::string one_line(std::string_view text, size_t max_chars = 2000);
// A user's value quoted for a message: 'value', cut after 60 characters.
std::string quote_value(std::string_view value);

// Throws SpecError("<loc>: field '<field>': <message>").
[[noreturn]] void fail_at(const SourceLoc& loc, const std::string& field, const std::string& message);

}  // namespace starfish

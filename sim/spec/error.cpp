#include "sim/spec/error.h"

#include <fmt/format.h>

namespace starfish {

std::string SourceLoc::to_string() const {
  if (file.empty()) return "<code>";
  if (line <= 0) return file;
  return file + ":" + std::to_string(line) + ":" + std::to_string(column);
}

std::string one_line(std::string_view text, size_t max_chars) {
  std::string out;
  out.reserve(std::min(text.size(), max_chars) + 8);
  for (size_t i = 0; i < text.size(); ++i) {
    if (out.size() >= max_chars) {
      out += "...";
      break;
    }
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\x{:02x}", static_cast<unsigned>(c));
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

std::string quote_value(std::string_view value) { return "'" + one_line(value, 60) + "'"; }

SpecError::SpecError(const std::string& message) : std::runtime_error(one_line(message)) {}

void fail_at(const SourceLoc& loc, const std::string& field, const std::string& message) {
  throw SpecError(loc.to_string() + ": field '" + field + "': " + message);
}

}  // namespace starfish

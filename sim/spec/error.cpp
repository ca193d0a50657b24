#include "sim/spec/error.h"

namespace starfish {

std::string SourceLoc::to_string() const {
  if (file.empty()) return "<code>";
  if (line <= 0) return file;
  return file + ":" + std::to_string(line) + ":" + std::to_string(column);
}

void fail_at(const SourceLoc& loc, const std::string& field, const std::string& message) {
  throw SpecError(loc.to_string() + ": field '" + field + "': " + message);
}

}  // namespace starfish

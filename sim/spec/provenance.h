#pragma once
// Where each field of a loaded spec came from, so that checks made later (a plan against a
// model, say) can still name the file and line. Provenance is not part of a spec's value: two
// specs with equal fields are equal wherever they were read from.
#include <map>
#include <string>

#include "sim/spec/error.h"

namespace starfish {

struct Provenance {
  std::string file;                        // the file the spec was read from ("" = built in code)
  std::map<std::string, SourceLoc> fields; // dotted field path -> location of its key

  // The field's key; for a field the file leaves out (a default), the nearest enclosing key
  // that it has ("plan" for "plan.tensor_parallel"), else the top of the file: an error about
  // a file always names a line.
  SourceLoc where(std::string field) const {
    while (true) {
      auto it = fields.find(field);
      if (it != fields.end()) return it->second;
      const size_t dot = field.rfind('.');
      if (dot == std::string::npos) break;
      field.resize(dot);
    }
    return file.empty() ? SourceLoc{} : SourceLoc{file, 1, 1};
  }
  [[noreturn]] void fail(const std::string& field, const std::string& message) const {
    fail_at(where(field), field, message);
  }
  bool operator==(const Provenance&) const { return true; }
};

}  // namespace starfish

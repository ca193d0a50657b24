#pragma once
// JSON (RFC 8259) into a tree, for reports and logs Starfish itself writes and the config.json
// files import-hf reads. nlohmann::json parses (its SAX interface); the tree is Starfish's own
// because it keeps where each value starts (line:column), which nlohmann::json 3.11 (Debian 12)
// does not: errors name the source, line and column, and an importer can point at a field.
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace starfish {

class JsonValue {
 public:
  // Out of line: `object` holds pairs of this very type, complete only after the class (clang
  // with libstdc++ refuses the implicit members here).
  JsonValue();
  JsonValue(const JsonValue&);
  JsonValue(JsonValue&&) noexcept;
  JsonValue& operator=(const JsonValue&);
  JsonValue& operator=(JsonValue&&) noexcept;
  ~JsonValue();

  enum class Type { null, boolean, number, string, array, object };
  Type type = Type::null;
  bool boolean = false;
  double number = 0;
  bool integer = false;  // a number written without fraction or exponent ("4096", not "4096.0")
  std::string string;
  std::vector<JsonValue> array;
  std::vector<std::pair<std::string, JsonValue>> object;  // in file order
  int line = 0, column = 0;  // where the value starts, 1-based (0: built in code)

  // Member lookup; nullptr when absent or not an object.
  const JsonValue* find(const std::string& key) const;
  // A dotted path ("memory.peak_gpu_bytes") to a number, if present.
  std::optional<double> number_at(const std::string& path) const;
  std::optional<std::string> string_at(const std::string& path) const;
};

// Throws SpecError("<source>:<line>:<column>: invalid JSON: <why>") for malformed text, a key
// twice in one object, a number out of double's range, or nesting deeper than 256 levels.
JsonValue parse_json(const std::string& text, const std::string& source = "<json>");
JsonValue read_json_file(const std::string& path);

}  // namespace starfish

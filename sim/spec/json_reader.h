#pragma once
// A small JSON reader (RFC 8259) into a tree, for reports and logs Starfish itself writes.
// Errors name the source, line and column.
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
  std::string string;
  std::vector<JsonValue> array;
  std::vector<std::pair<std::string, JsonValue>> object;  // in file order

  // Member lookup; nullptr when absent or not an object.
  const JsonValue* find(const std::string& key) const;
  // A dotted path ("memory.peak_gpu_bytes") to a number, if present.
  std::optional<double> number_at(const std::string& path) const;
  std::optional<std::string> string_at(const std::string& path) const;
};

JsonValue parse_json(const std::string& text, const std::string& source = "<json>");
JsonValue read_json_file(const std::string& path);

}  // namespace starfish

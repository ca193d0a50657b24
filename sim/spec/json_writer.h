#pragma once
// A streaming JSON writer for reports, exports and logs (no DOM: a report is written as it is
// walked). Strings are escaped by nlohmann::json; numbers are written exactly (the shortest text
// that reads back to the same double, units::format_number); non-finite ones as null.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace starfish {

class JsonWriter {
 public:
  explicit JsonWriter(bool pretty = false) : pretty_(pretty) {}
  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  JsonWriter& key(std::string_view k);
  JsonWriter& value(std::string_view v);
  JsonWriter& value(const char* v) { return value(std::string_view(v)); }
  JsonWriter& value(double v);
  JsonWriter& value(int64_t v);
  JsonWriter& value(int v) { return value(static_cast<int64_t>(v)); }
  JsonWriter& value(bool v);
  JsonWriter& null();
  template <typename T>
  JsonWriter& field(std::string_view k, const T& v) {
    key(k);
    return value(v);
  }
  const std::string& str() const { return out_; }

  static void escape_into(std::string& out, std::string_view s);

 private:
  void before_value();
  void newline();
  void close(char bracket);
  std::string out_;
  std::vector<bool> first_;  // per open container: no element written yet
  bool after_key_ = false;
  bool pretty_;
};

}  // namespace starfish

#pragma once
// Strict reading of one YAML mapping: every accessor records the key's location, converts with
// a clear message on failure, and finish() rejects keys nobody asked for (typos must not be
// silently ignored). Errors read "file:line:col: field 'gpu.memory': <why>".
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "sim/spec/provenance.h"

namespace starfish {

class MapReader {
 public:
  // `path` is the dotted prefix of this map's fields ("" for the document root).
  MapReader(const YAML::Node& node, Provenance& provenance, std::string path);

  bool has(const std::string& key) const;

  std::string text(const std::string& key);
  std::optional<std::string> text_or_none(const std::string& key);
  // Numbers within [min_value, max_value] (limits.h); outside it, an error naming the limit.
  int64_t integer(const std::string& key, int64_t min_value, int64_t max_value);
  int whole(const std::string& key, int64_t min_value, int64_t max_value);  // integer() for an int field
  double real(const std::string& key, double min_value, double max_value);
  bool boolean(const std::string& key);
  // Quantities with units, each within its limit of limits.h (bytes up to 2^60, ...).
  int64_t bytes(const std::string& key);
  double rate(const std::string& key);
  double flops(const std::string& key);
  double seconds(const std::string& key);
  int64_t count(const std::string& key);
  // One of the named values; the error lists them.
  template <typename E>
  E choice(const std::string& key, std::initializer_list<std::pair<const char*, E>> options);

  MapReader map(const std::string& key);           // a nested mapping
  YAML::Node sequence(const std::string& key);     // a nested sequence (caller iterates)
  YAML::Node node(const std::string& key);         // raw access, key recorded

  // Location of the value's key (or of the map when the key is absent).
  SourceLoc where(const std::string& key) const;
  SourceLoc where() const;
  SourceLoc where(const YAML::Node& item) const;  // an item inside this map (a list element)
  std::string field(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }
  [[noreturn]] void fail(const std::string& key, const std::string& message) const;

  // Rejects unknown keys: "unknown field 'gpu.memroy' (expected one of: ...)".
  void finish() const;

 private:
  YAML::Node value(const std::string& key);  // required scalar-or-any; records the key
  std::string scalar(const std::string& key);
  template <typename T>
  T parse_scalar(const std::string& key, const char* expected, T (*parse)(std::string_view));
  double at_most(const std::string& key, double value, double max_value, const char* unit);

  YAML::Node node_;
  Provenance& provenance_;
  std::string path_;
  mutable std::set<std::string> asked_;  // keys the reader knows (asked for, even if absent)
};

// Location of a node in the file the provenance belongs to.
SourceLoc location(const Provenance& provenance, const YAML::Node& node);

// Loads a YAML file; a syntax error becomes "file:line:col: invalid YAML: <why>"; a missing,
// unreadable or oversized file, or one that is not a regular file (a folder, a device), is
// refused naming it. The root must be a mapping, and the file one YAML document: a second
// document ('---' before more fields) is an error, never silently dropped.
YAML::Node load_yaml_file(const std::string& path);
// The same for text already in memory (`file` names it in errors).
YAML::Node parse_yaml_text(const std::string& text, const std::string& file);
// Refuses text that is not UTF-8 or holds control characters other than tab and line breaks
// ("file:line:column: not UTF-8 text ..."): YAML is Unicode text, and yaml-cpp 0.7 loops
// without end, allocating, on some invalid bytes (found by fuzz/fuzz_model).
void require_utf8_text(const std::string& text, const std::string& file);


template <typename E>
E MapReader::choice(const std::string& key, std::initializer_list<std::pair<const char*, E>> options) {
  std::string v = scalar(key);
  std::string names;
  for (const auto& [name, e] : options) {
    if (v == name) return e;
    names += names.empty() ? "" : ", ";
    names += name;
  }
  fail(key, "'" + v + "' is not one of: " + names);
}

}  // namespace starfish

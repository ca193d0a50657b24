#include "sim/spec/yaml_reader.h"

#include <cmath>
#include <fstream>
#include <stdexcept>

#include "sim/spec/units.h"

namespace starfish {

SourceLoc location(const Provenance& provenance, const YAML::Node& node) {
  const YAML::Mark m = node.Mark();
  if (m.line < 0) return SourceLoc{provenance.file, 0, 0};
  return SourceLoc{provenance.file, m.line + 1, m.column + 1};
}

YAML::Node load_yaml_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw SpecError(path + ": cannot open file");
  YAML::Node root;
  try {
    root = YAML::Load(in);
  } catch (const YAML::Exception& e) {
    throw SpecError(path + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1) +
                    ": invalid YAML: " + e.msg);
  }
  if (!root.IsMap()) throw SpecError(path + ":1:1: expected a mapping of fields at the top level");
  return root;
}

MapReader::MapReader(const YAML::Node& node, Provenance& provenance, std::string path)
    : node_(node), provenance_(provenance), path_(std::move(path)) {
  if (!node_.IsMap()) fail_at(location(provenance_, node_), path_.empty() ? "<root>" : path_, "expected a mapping");
  for (const auto& kv : node_) {
    const std::string key = kv.first.as<std::string>();
    provenance_.fields[field(key)] = location(provenance_, kv.first);
  }
}

bool MapReader::has(const std::string& key) const {
  asked_.insert(key);
  const YAML::Node v = node_[key];
  return v.IsDefined() && !v.IsNull();
}

SourceLoc MapReader::where(const std::string& key) const {
  for (const auto& kv : node_)
    if (kv.first.as<std::string>() == key) return location(provenance_, kv.first);
  return where();
}

SourceLoc MapReader::where() const { return location(provenance_, node_); }
SourceLoc MapReader::where(const YAML::Node& item) const { return location(provenance_, item); }

void MapReader::fail(const std::string& key, const std::string& message) const {
  fail_at(where(key), field(key), message);
}

YAML::Node MapReader::value(const std::string& key) {
  asked_.insert(key);
  const YAML::Node v = node_[key];
  if (!v.IsDefined() || v.IsNull()) fail_at(where(), field(key), "missing required field");
  return v;
}

std::string MapReader::scalar(const std::string& key) {
  const YAML::Node v = value(key);
  if (!v.IsScalar()) fail(key, "expected a single value, got a " + std::string(v.IsMap() ? "mapping" : "sequence"));
  return v.Scalar();
}

template <typename T>
T MapReader::parse_scalar(const std::string& key, const char* expected, T (*parse)(std::string_view)) {
  const std::string s = scalar(key);
  try {
    return parse(s);
  } catch (const std::invalid_argument& e) {
    fail(key, std::string("expected ") + expected + ", got '" + s + "' (" + e.what() + ")");
  }
}

std::string MapReader::text(const std::string& key) { return scalar(key); }

std::optional<std::string> MapReader::text_or_none(const std::string& key) {
  asked_.insert(key);
  if (!has(key)) return std::nullopt;
  return scalar(key);
}

namespace {
// Plain numbers may be written negative; the unit parsers reject that, so parse sign here.
double parse_signed(std::string_view s) {
  if (!s.empty() && s.front() == '-') return -units::parse_number(s.substr(1));
  return units::parse_number(s);
}
}  // namespace

int64_t MapReader::integer(const std::string& key, int64_t min_value) {
  const double v = parse_scalar<double>(key, "a whole number", parse_signed);
  if (v != std::floor(v) || std::fabs(v) > 9e15) fail(key, "expected a whole number, got '" + scalar(key) + "'");
  const auto i = static_cast<int64_t>(v);
  if (i < min_value) fail(key, "must be at least " + std::to_string(min_value) + ", got " + std::to_string(i));
  return i;
}

double MapReader::real(const std::string& key, double min_value, double max_value) {
  const double v = parse_scalar<double>(key, "a number", parse_signed);
  if (v < min_value || v > max_value) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "must be within [%g, %g], got %g", min_value, max_value, v);
    fail(key, buf);
  }
  return v;
}

bool MapReader::boolean(const std::string& key) {
  const std::string s = scalar(key);
  if (s == "true" || s == "yes" || s == "on") return true;
  if (s == "false" || s == "no" || s == "off") return false;
  fail(key, "expected true or false, got '" + s + "'");
}

int64_t MapReader::bytes(const std::string& key) { return parse_scalar<int64_t>(key, "a size like 80GiB", units::parse_bytes); }
double MapReader::rate(const std::string& key) { return parse_scalar<double>(key, "a bandwidth like 900GB/s", units::parse_rate); }
double MapReader::flops(const std::string& key) { return parse_scalar<double>(key, "a rate like 312TFLOPS", units::parse_flops); }
double MapReader::flop_count(const std::string& key) { return parse_scalar<double>(key, "a FLOP count like 4GFLOP", units::parse_flop_count); }
double MapReader::seconds(const std::string& key) { return parse_scalar<double>(key, "a duration like 5us", units::parse_seconds); }
int64_t MapReader::count(const std::string& key) { return parse_scalar<int64_t>(key, "a count like 64Mi", units::parse_count); }

MapReader MapReader::map(const std::string& key) { return MapReader(value(key), provenance_, field(key)); }

YAML::Node MapReader::sequence(const std::string& key) {
  const YAML::Node v = value(key);
  if (!v.IsSequence()) fail(key, "expected a list");
  return v;
}

YAML::Node MapReader::node(const std::string& key) { return value(key); }

void MapReader::finish() const {
  for (const auto& kv : node_) {
    const std::string key = kv.first.as<std::string>();
    if (asked_.count(key)) continue;
    std::string expected;
    for (const auto& k : asked_) expected += (expected.empty() ? "" : ", ") + k;
    fail_at(location(provenance_, kv.first), field(key), "unknown field (expected one of: " + expected + ")");
  }
}

}  // namespace starfish

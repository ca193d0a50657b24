#include "sim/spec/yaml_reader.h"

#include <climits>
#include <cmath>
#include <map>
#include <stdexcept>
#include <vector>
#include <fmt/format.h>

#include "sim/spec/input_file.h"
#include "sim/spec/limits.h"
#include "sim/spec/units.h"

namespace starfish {

SourceLoc location(const Provenance& provenance, const YAML::Node& node) {
  const YAML::Mark m = node.Mark();
  if (m.line < 0) return SourceLoc{provenance.file, 0, 0};
  return SourceLoc{provenance.file, m.line + 1, m.column + 1};
}

namespace {

[[noreturn]] void fail_yaml(const std::string& file, const YAML::Mark& mark, const std::string& why) {
  const int line = mark.line >= 0 ? mark.line + 1 : 1, column = mark.column >= 0 ? mark.column + 1 : 1;
  throw SpecError(file + ":" + std::to_string(line) + ":" + std::to_string(column) + ": " + why);
}

// The line of a '---' that starts a second document with content (a marker before any content
// only opens the first document; one followed only by comments or blank lines is harmless); 0
// when there is none. Text-based because yaml-cpp 0.7's LoadAll can loop without end on
// malformed input (fuzz/regressions/hardware).
int second_document_line(const std::string& text) {
  bool content = false;
  int line = 0, marker_line = 0;
  for (size_t start = 0; start < text.size();) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string_view l(text.data() + start, end - start);
    ++line;
    const bool marker = l.starts_with("---") && (l.size() == 3 || l[3] == ' ' || l[3] == '\t' || l[3] == '\r');
    const size_t first = l.find_first_not_of(" \t\r");
    const bool has_content = !marker && first != std::string_view::npos && l[first] != '#' && l[first] != '%';
    if (marker && content && marker_line == 0) marker_line = line;
    else if (has_content && marker_line > 0) return marker_line;
    if (has_content) content = true;
    start = end + 1;
  }
  return 0;
}

// Every key a plain scalar, none twice: yaml-cpp keeps both copies of a repeated key and reads
// the first, so `layers: 24` then `layers: 96` would silently be 24.
void check_keys(const YAML::Node& node, const std::string& file) {
  if (node.IsSequence()) {
    for (const auto& item : node) check_keys(item, file);
    return;
  }
  if (!node.IsMap()) return;
  std::map<std::string, YAML::Mark> seen;
  for (const auto& kv : node) {
    if (!kv.first.IsScalar()) fail_yaml(file, kv.first.Mark(), "a key must be a plain name, not a list or mapping");
    const auto [it, fresh] = seen.emplace(kv.first.Scalar(), kv.first.Mark());
    if (!fresh)
      fail_yaml(file, kv.first.Mark(), "field " + quote_value(kv.first.Scalar()) + " appears twice (first on line " +
                                           std::to_string(it->second.line + 1) + "): keep one");
    check_keys(kv.second, file);
  }
}

}  // namespace

void require_utf8_text(const std::string& text, const std::string& file) {
  int line = 1, column = 1;
  for (size_t i = 0; i < text.size(); ++column) {
    const auto c = static_cast<unsigned char>(text[i]);
    // The length of the sequence this byte starts, and the smallest code point it may encode.
    const size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    bool ok = n > 0 && i + n <= text.size();
    uint32_t code = n == 1 ? c : n == 2 ? c & 0x1F : n == 3 ? c & 0x0F : c & 0x07;
    for (size_t k = 1; ok && k < n; ++k) {
      const auto b = static_cast<unsigned char>(text[i + k]);
      ok = (b & 0xC0) == 0x80;
      code = (code << 6) | (b & 0x3F);
    }
    static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    ok = ok && code >= kMin[n] && code <= 0x10FFFF && !(code >= 0xD800 && code <= 0xDFFF);
    ok = ok && (code >= 0x20 || code == '\t' || code == '\n' || code == '\r') && code != 0x7F;
    if (!ok) {
      throw SpecError(file + ":" + std::to_string(line) + ":" + std::to_string(column) + ": not UTF-8 text (byte " +
                      fmt::format("0x{:02x}", static_cast<unsigned>(c)) +
                      "): Starfish's files are YAML, which is Unicode text");
    }
    if (c == '\n') ++line, column = 0;
    i += n;
  }
}

YAML::Node parse_yaml_text(const std::string& text, const std::string& file) {
  require_utf8_text(text, file);
  if (const int second = second_document_line(text))
    throw SpecError(file + ":" + std::to_string(second) +
                    ":1: a second YAML document starts here ('---'); a Starfish file is one document: remove the "
                    "'---' line so the fields after it are read");
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    fail_yaml(file, e.mark, "invalid YAML: " + e.msg);
  }
  if (!root.IsMap()) throw SpecError(file + ":1:1: expected a mapping of fields at the top level");
  check_keys(root, file);
  return root;
}

YAML::Node load_yaml_file(const std::string& path) {
  return parse_yaml_text(read_input_file(path), input_name(path));
}

MapReader::MapReader(const YAML::Node& node, Provenance& provenance, std::string path)
    : node_(node), provenance_(provenance), path_(std::move(path)) {
  if (!node_.IsMap()) fail_at(location(provenance_, node_), path_.empty() ? "<root>" : path_, "expected a mapping");
  for (const auto& kv : node_) {
    if (!kv.first.IsScalar()) fail_at(location(provenance_, kv.first), path_, "a key must be a plain name");
    provenance_.fields[field(kv.first.Scalar())] = location(provenance_, kv.first);
  }
}

bool MapReader::has(const std::string& key) const {
  asked_.insert(key);
  const YAML::Node v = node_[key];
  return v.IsDefined() && !v.IsNull();
}

SourceLoc MapReader::where(const std::string& key) const {
  for (const auto& kv : node_)
    if (kv.first.Scalar() == key) return location(provenance_, kv.first);
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
  if (!v.IsScalar()) fail(key, "expected a single value, got a " + std::string(v.IsMap() ? "mapping" : "list"));
  return v.Scalar();
}

template <typename T>
T MapReader::parse_scalar(const std::string& key, const char* expected, T (*parse)(std::string_view)) {
  const std::string s = scalar(key);
  try {
    return parse(s);
  } catch (const std::invalid_argument& e) {
    fail(key, std::string("expected ") + expected + ", got " + quote_value(s) + " (" + e.what() + ")");
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

int64_t MapReader::integer(const std::string& key, int64_t min_value, int64_t max_value) {
  const double v = parse_scalar<double>(key, "a whole number", parse_signed);
  if (v != std::floor(v)) fail(key, "expected a whole number, got " + quote_value(scalar(key)));
  if (v < static_cast<double>(min_value))
    fail(key, "must be at least " + std::to_string(min_value) + ", got " + quote_value(scalar(key)));
  if (v > static_cast<double>(max_value))
    fail(key, "must be at most " + std::to_string(max_value) + " (Starfish's limit), got " + quote_value(scalar(key)));
  return static_cast<int64_t>(v);
}

int MapReader::whole(const std::string& key, int64_t min_value, int64_t max_value) {
  static_assert(sizeof(int) >= 4);
  return static_cast<int>(integer(key, min_value, std::min<int64_t>(max_value, INT32_MAX)));
}

double MapReader::real(const std::string& key, double min_value, double max_value) {
  const double v = parse_scalar<double>(key, "a number", parse_signed);
  if (v < min_value || v > max_value) {
    fail(key, fmt::format("must be within [{:g}, {:g}], got {:g}", min_value, max_value, v));
  }
  return v;
}

bool MapReader::boolean(const std::string& key) {
  const std::string s = scalar(key);
  if (s == "true" || s == "yes" || s == "on") return true;
  if (s == "false" || s == "no" || s == "off") return false;
  fail(key, "expected true or false, got '" + s + "'");
}

double MapReader::at_most(const std::string& key, double value, double max_value, const char* unit) {
  if (value > max_value) {
    fail(key, fmt::format("must be at most {:g} {} (Starfish's limit), got ", max_value, unit) + quote_value(scalar(key)));
  }
  return value;
}

int64_t MapReader::bytes(const std::string& key) {
  const int64_t v = parse_scalar<int64_t>(key, "a size like 80GiB", units::parse_bytes);
  if (v > limits::kMaxBytes) fail(key, "must be at most 1024PiB (2^60 bytes, Starfish's limit), got " + quote_value(scalar(key)));
  return v;
}
double MapReader::rate(const std::string& key) {
  return at_most(key, parse_scalar<double>(key, "a bandwidth like 900GB/s", units::parse_rate), limits::kMaxRate_Bps, "bytes/s");
}
double MapReader::flops(const std::string& key) {
  return at_most(key, parse_scalar<double>(key, "a rate like 312TFLOPS", units::parse_flops), limits::kMaxFlops, "FLOP/s");
}
double MapReader::seconds(const std::string& key) {
  return at_most(key, parse_scalar<double>(key, "a duration like 5us", units::parse_seconds), limits::kMaxLatency_s, "s");
}
int64_t MapReader::count(const std::string& key) {
  const int64_t v = parse_scalar<int64_t>(key, "a count like 64Mi", units::parse_count);
  at_most(key, static_cast<double>(v), static_cast<double>(limits::kMaxChunkElements), "elements");
  return v;
}

MapReader MapReader::map(const std::string& key) { return MapReader(value(key), provenance_, field(key)); }

YAML::Node MapReader::sequence(const std::string& key) {
  const YAML::Node v = value(key);
  if (!v.IsSequence()) fail(key, "expected a list");
  return v;
}

YAML::Node MapReader::node(const std::string& key) { return value(key); }

void MapReader::finish() const {
  for (const auto& kv : node_) {
    const std::string key = kv.first.Scalar();
    if (asked_.count(key)) continue;
    std::string expected;
    for (const auto& k : asked_) expected += (expected.empty() ? "" : ", ") + k;
    fail_at(location(provenance_, kv.first), field(key), "unknown field (expected one of: " + expected + ")");
  }
}

}  // namespace starfish

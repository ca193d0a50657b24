#include "sim/spec/units.h"

#include <fmt/format.h>

#include <array>
#include <charconv>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <utility>

namespace starfish::units {
namespace {

// value_in_base_units = number * scale / divisor. Sub-unit suffixes divide by an exact
// integer (5us = 5 / 1e6 s) so that decimal text maps to the nearest double, as it should.
struct Suffix {
  std::string_view text;
  double scale;
  double divisor = 1;
  double apply(double v) const { return v * scale / divisor; }
  double unapply(double v) const { return v * divisor / scale; }
};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Splits "12.5 GiB" into 12.5 and "GiB". The number must be finite and non-negative.
std::pair<double, std::string_view> split(std::string_view text) {
  text = trim(text);
  size_t i = 0;
  while (i < text.size()) {
    char c = text[i];
    bool numeric = (c >= '0' && c <= '9') || c == '.' || c == '+' || c == '-';
    // An exponent 'e'/'E' belongs to the number only when a digit or sign follows it.
    if ((c == 'e' || c == 'E') && i > 0 && i + 1 < text.size()) {
      char n = text[i + 1];
      numeric = (n >= '0' && n <= '9') || n == '+' || n == '-';
    }
    if (!numeric) break;
    ++i;
  }
  std::string_view number = text.substr(0, i);
  std::string_view suffix = trim(text.substr(i));
  if (number.empty()) throw std::invalid_argument("no number in '" + std::string(text) + "'");
  double value = 0;
  auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
  if (ec == std::errc::result_out_of_range) throw std::invalid_argument("'" + std::string(number) + "' is out of range");
  if (ec != std::errc() || end != number.data() + number.size())
    throw std::invalid_argument("'" + std::string(number) + "' is not a number");
  if (!std::isfinite(value)) throw std::invalid_argument("'" + std::string(text) + "' is not finite");
  if (value < 0) throw std::invalid_argument("negative value '" + std::string(text) + "'");
  return {value, suffix};
}

template <size_t N>
double parse_with(std::string_view text, const std::array<Suffix, N>& suffixes, std::string_view what) {
  auto [value, suffix] = split(text);
  for (const Suffix& s : suffixes) {
    if (suffix != s.text) continue;
    const double v = s.apply(value);
    // 1e308TB/s is a finite number times a finite unit, and infinity.
    if (!std::isfinite(v)) throw std::invalid_argument("'" + std::string(text) + "' overflows");
    return v;
  }
  std::string allowed;
  for (const Suffix& s : suffixes) {
    if (s.text.empty()) continue;
    if (!allowed.empty()) allowed += ", ";
    allowed += s.text;
  }
  throw std::invalid_argument("unknown unit '" + std::string(suffix) + "' for " + std::string(what) +
                              " (use " + allowed + ")");
}

constexpr double kKi = 1024.0;
constexpr std::array<Suffix, 13> kByteSuffixes{{{"", 1},
                                                {"B", 1},
                                                {"KB", 1e3},
                                                {"MB", 1e6},
                                                {"GB", 1e9},
                                                {"TB", 1e12},
                                                {"PB", 1e15},
                                                {"KiB", kKi},
                                                {"MiB", kKi * kKi},
                                                {"GiB", kKi * kKi * kKi},
                                                {"TiB", kKi * kKi * kKi * kKi},
                                                {"PiB", kKi * kKi * kKi * kKi * kKi},
                                                {"bytes", 1}}};
constexpr std::array<Suffix, 20> kRateSuffixes{{{"", 1},
                                                {"B/s", 1},
                                                {"KB/s", 1e3},
                                                {"MB/s", 1e6},
                                                {"GB/s", 1e9},
                                                {"TB/s", 1e12},
                                                {"KiB/s", kKi},
                                                {"MiB/s", kKi * kKi},
                                                {"GiB/s", kKi * kKi * kKi},
                                                {"TiB/s", kKi * kKi * kKi * kKi},
                                                {"b/s", 1, 8},
                                                {"Kb/s", 1e3, 8},
                                                {"Mb/s", 1e6, 8},
                                                {"Gb/s", 1e9, 8},
                                                {"Tb/s", 1e12, 8},
                                                {"bps", 1, 8},
                                                {"Kbps", 1e3, 8},
                                                {"Mbps", 1e6, 8},
                                                {"Gbps", 1e9, 8},
                                                {"Tbps", 1e12, 8}}};
constexpr std::array<Suffix, 13> kFlopsSuffixes{{{"", 1},
                                                 {"FLOPS", 1},
                                                 {"GFLOPS", 1e9},
                                                 {"TFLOPS", 1e12},
                                                 {"PFLOPS", 1e15},
                                                 {"EFLOPS", 1e18},
                                                 {"FLOP/s", 1},
                                                 {"GFLOP/s", 1e9},
                                                 {"TFLOP/s", 1e12},
                                                 {"PFLOP/s", 1e15},
                                                 {"EFLOP/s", 1e18},
                                                 {"MFLOPS", 1e6},
                                                 {"MFLOP/s", 1e6}}};
constexpr std::array<Suffix, 8> kFlopCountSuffixes{{{"", 1},
                                                    {"FLOP", 1},
                                                    {"KFLOP", 1e3},
                                                    {"MFLOP", 1e6},
                                                    {"GFLOP", 1e9},
                                                    {"TFLOP", 1e12},
                                                    {"PFLOP", 1e15},
                                                    {"EFLOP", 1e18}}};
constexpr std::array<Suffix, 9> kTimeSuffixes{{{"", 1},
                                               {"s", 1},
                                               {"ms", 1, 1e3},
                                               {"us", 1, 1e6},
                                               {"ns", 1, 1e9},
                                               {"min", 60},
                                               {"h", 3600},
                                               {"d", 86400},
                                               {"days", 86400}}};
constexpr std::array<Suffix, 8> kCountSuffixes{{{"", 1},
                                                {"K", 1e3},
                                                {"M", 1e6},
                                                {"G", 1e9},
                                                {"T", 1e12},
                                                {"Ki", kKi},
                                                {"Mi", kKi * kKi},
                                                {"Gi", kKi * kKi * kKi}}};

int64_t to_integer(double value, std::string_view text) {
  if (value > 9.2e18) throw std::invalid_argument("'" + std::string(text) + "' is too large");
  double rounded = std::round(value);
  if (std::fabs(rounded - value) > 1e-6 * std::max(1.0, value))
    throw std::invalid_argument("'" + std::string(text) + "' is not a whole number");
  return static_cast<int64_t>(rounded);
}

// The shortest "<number><suffix>" that parses back to exactly `value`, or "" if none does.
std::string exact_text(double value, const Suffix& suffix, double (*parse)(std::string_view)) {
  const double v = suffix.unapply(value);
  for (int precision = 1; precision <= 17; ++precision) {
    const std::string text = fmt::format("{:.{}g}{}", v, precision, suffix.text);
    if (text.find('e') != std::string::npos) continue;  // no "8e+01GiB"
    try {
      if (parse(text) == value) return text;
    } catch (const std::invalid_argument&) {
      // "298.4KiB" is no whole number of bytes: a longer text may be
    }
  }
  return "";
}

// Among the suffixes (by index), those whose unit is not above the value, the shortest exact text.
template <size_t N>
std::string format_with(double value, const std::array<Suffix, N>& suffixes, std::initializer_list<int> order,
                        double (*parse)(std::string_view)) {
  if (value == 0) return "0";
  std::string best;
  for (int i : order) {
    const Suffix& s = suffixes[static_cast<size_t>(i)];
    if (s.apply(1) > value && i != *order.begin()) continue;
    const std::string text = exact_text(value, s, parse);
    if (!text.empty() && (best.empty() || text.size() < best.size())) best = text;
  }
  if (best.empty()) best = fmt::format("{:.17g}", value);  // exact, in exponent form if it must be
  return best;
}

double parse_bytes_d(std::string_view t) { return static_cast<double>(parse_bytes(t)); }

std::string human(double value, const std::array<std::pair<double, const char*>, 5>& steps) {
  if (value == 0) return "0";
  for (auto [scale, name] : steps) {
    if (std::fabs(value) >= scale || scale == steps.back().first) {
      const double v = value / scale;
      const int decimals = std::fabs(v) >= 100 ? 0 : std::fabs(v) >= 10 ? 1 : 2;  // three significant digits
      return fmt::format("{:.{}f} {}", v, decimals, name);
    }
  }
  return "?";
}

}  // namespace

int64_t parse_bytes(std::string_view text) { return to_integer(parse_with(text, kByteSuffixes, "bytes"), text); }
double parse_rate(std::string_view text) { return parse_with(text, kRateSuffixes, "a bandwidth"); }
double parse_flops(std::string_view text) { return parse_with(text, kFlopsSuffixes, "FLOP/s"); }
double parse_flop_count(std::string_view text) { return parse_with(text, kFlopCountSuffixes, "FLOP"); }
double parse_seconds(std::string_view text) { return parse_with(text, kTimeSuffixes, "a duration"); }
int64_t parse_count(std::string_view text) { return to_integer(parse_with(text, kCountSuffixes, "a count"), text); }
double parse_number(std::string_view text) {
  auto [value, suffix] = split(text);
  if (!suffix.empty()) throw std::invalid_argument("unexpected unit '" + std::string(suffix) + "'");
  return value;
}

std::string format_bytes(int64_t bytes) {
  // Memory sizes read best in binary units, disk sizes in decimal ones: take the shortest exact.
  return format_with(static_cast<double>(bytes), kByteSuffixes, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, parse_bytes_d);
}
std::string format_rate(double v) { return format_with(v, kRateSuffixes, {2, 3, 4, 5}, parse_rate); }
std::string format_flops(double v) { return format_with(v, kFlopsSuffixes, {2, 3, 4, 5, 11}, parse_flops); }
std::string format_flop_count(double v) {
  return format_with(v, kFlopCountSuffixes, {2, 3, 4, 5, 6, 7}, parse_flop_count);
}
std::string format_seconds(double v) { return format_with(v, kTimeSuffixes, {4, 3, 2, 1}, parse_seconds); }
std::string format_count(int64_t count) {
  static constexpr std::array<std::pair<int64_t, const char*>, 6> units{{{int64_t{1} << 30, "Gi"},
                                                                          {int64_t{1} << 20, "Mi"},
                                                                          {1'000'000'000, "G"},
                                                                          {1'000'000, "M"},
                                                                          {int64_t{1} << 10, "Ki"},
                                                                          {1'000, "K"}}};
  for (auto [scale, name] : units)
    if (count >= scale && count % scale == 0) return std::to_string(count / scale) + name;
  return std::to_string(count);
}

std::string human_bytes(double bytes) {
  return human(bytes, {{{kKi * kKi * kKi * kKi, "TiB"}, {kKi * kKi * kKi, "GiB"}, {kKi * kKi, "MiB"}, {kKi, "KiB"}, {1, "B"}}});
}
std::string human_seconds(double s) {
  if (s >= 2 * 86400) return fmt::format("{:.1f} days", s / 86400);
  if (s >= 3600) return fmt::format("{:.1f} h", s / 3600);
  return human(s, {{{1, "s"}, {1e-3, "ms"}, {1e-6, "us"}, {1e-9, "ns"}, {1e-12, "ps"}}});
}
std::string human_count(double c) {
  return human(c, {{{1e12, "T"}, {1e9, "B"}, {1e6, "M"}, {1e3, "K"}, {1, ""}}});
}

std::string format_number(double value) {
  if (!std::isfinite(value)) return std::isnan(value) ? "nan" : value > 0 ? "inf" : "-inf";
  char buf[40];
  // Whole numbers as integers (a program may read an int: Megatron's --rotary-base 500000),
  // others in the shortest round-trip form (std::to_chars: fixed or scientific): 0.1, 3e-07.
  if (value == std::floor(value) && std::fabs(value) < 1e15)
    return std::to_string(static_cast<int64_t>(value));
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
  return std::string(buf, ec == std::errc() ? end : buf);
}

}  // namespace starfish::units

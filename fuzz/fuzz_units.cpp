// libFuzzer target: the unit parsers ("80GiB", "900GB/s", "312TFLOPS", "5us", "64Mi"). Each
// either refuses the text (std::invalid_argument, which the YAML layer turns into a located
// error) or returns a finite, non-negative value; the formatters read back exactly.
#include <cmath>

#include "fuzz/fuzz_check.h"
#include "sim/spec/units.h"

namespace {
template <class T>
void check(T (*parse)(std::string_view), std::string (*format)(T), std::string_view text) {
  T v{};
  try {
    v = parse(text);
  } catch (const std::invalid_argument&) {
    return;
  }
  if (!(v >= 0) || !std::isfinite(static_cast<double>(v))) starfish::fuzz::finding("a parsed value is negative or not finite", std::string(text));
  if (format && parse(format(v)) != v) starfish::fuzz::finding("a value does not round-trip", std::string(text) + " -> " + format(v));
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace starfish;
  const std::string text = fuzz::text_of(data, size);
  try {
    check<int64_t>(units::parse_bytes, units::format_bytes, text);
    check<double>(units::parse_rate, units::format_rate, text);
    check<double>(units::parse_flops, units::format_flops, text);
    check<double>(units::parse_flop_count, units::format_flop_count, text);
    check<double>(units::parse_seconds, units::format_seconds, text);
    check<int64_t>(units::parse_count, units::format_count, text);
    check<double>(units::parse_number, nullptr, text);
  } catch (const std::exception& e) {
    fuzz::finding("a formatter's text does not parse", text + ": " + e.what());
  }
  return 0;
}

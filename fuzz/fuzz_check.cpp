#include "fuzz/fuzz_check.h"

#include <cctype>

namespace starfish::fuzz {

void finding(const char* what, const std::string& detail) {
  std::fprintf(stderr, "starfish fuzz finding: %s: %s\n", what, detail.c_str());
  std::abort();
}

namespace {
// "<digits>:" at `at`, moving past it.
bool digits_then_colon(const std::string& s, size_t& at) {
  const size_t start = at;
  while (at < s.size() && std::isdigit(static_cast<unsigned char>(s[at]))) ++at;
  if (at == start || at >= s.size() || s[at] != ':' || s[start] == '0') return false;
  ++at;
  return true;
}
}  // namespace

void expect_located(const std::string& message, std::initializer_list<const char*> files) {
  if (message.find('\n') != std::string::npos || message.find('\r') != std::string::npos)
    finding("an error spans several lines", message);
  for (const char* file : files) {
    const std::string prefix = std::string(file) + ":";
    if (message.rfind(prefix, 0) != 0) continue;
    size_t at = prefix.size();
    if (digits_then_colon(message, at) && digits_then_colon(message, at) && at < message.size() && message[at] == ' ')
      return;
  }
  finding("an error without file:line:column", message);
}

}  // namespace starfish::fuzz

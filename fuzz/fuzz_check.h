#pragma once
// What every fuzz target asserts besides "no crash, no hang, no leak": a refused input gives one
// SpecError whose message is one line starting "<file>:<line>:<column>: " for one of the files
// the target read. Anything else (another exception type, a message without a location or over
// several lines) aborts, which libFuzzer reports as a finding.
#include <cstddef>
#include <cstdint>
#include <exception>
#include <initializer_list>
#include <string>
#include <string_view>

#include "sim/spec/error.h"

namespace starfish::fuzz {

[[noreturn]] void finding(const char* what, const std::string& detail);

// Aborts unless `message` is one line that starts with "<one of files>:<line>:<column>: ".
void expect_located(const std::string& message, std::initializer_list<const char*> files);

// Runs `body`; a SpecError must satisfy expect_located, any other exception aborts.
template <class F>
void refuse_cleanly(F&& body, std::initializer_list<const char*> files) {
  try {
    body();
  } catch (const SpecError& e) {
    expect_located(e.what(), files);
  } catch (const std::exception& e) {
    finding("an exception other than SpecError escaped", e.what());
  }
}

inline std::string text_of(const uint8_t* data, size_t size) { return std::string(reinterpret_cast<const char*>(data), size); }

}  // namespace starfish::fuzz

#pragma once
// The message of the SpecError that `f` throws, or "(no error)": the tests of bad input compare
// whole messages, so a missing error shows up as a mismatch with the expected text.
#include <string>
#include <utility>

#include "sim/spec/error.h"

namespace starfish::testing {

template <class F>
std::string error_of(F&& f) {
  try {
    std::forward<F>(f)();
  } catch (const SpecError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace starfish::testing

// libFuzzer target: a plan file (configs/plans/*.yaml) through the strict loader.
#include "fuzz/fuzz_check.h"
#include "sim/spec/spec_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace starfish;
  fuzz::refuse_cleanly([&] { (void)parse_plan_file_text(fuzz::text_of(data, size), "plan.yaml"); }, {"plan.yaml"});
  return 0;
}

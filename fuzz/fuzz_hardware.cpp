// libFuzzer target: a hardware profile (hwprofiles/*.yaml) through the strict loader.
#include "fuzz/fuzz_check.h"
#include "sim/spec/spec_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace starfish;
  fuzz::refuse_cleanly([&] { (void)parse_cluster_text(fuzz::text_of(data, size), "hw.yaml"); }, {"hw.yaml"});
  return 0;
}

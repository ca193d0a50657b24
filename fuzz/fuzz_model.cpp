// libFuzzer target: a model (configs/models/*.yaml) through the strict loader.
#include "fuzz/fuzz_check.h"
#include "sim/spec/spec_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace starfish;
  fuzz::refuse_cleanly([&] { (void)parse_model_text(fuzz::text_of(data, size), "model.yaml"); }, {"model.yaml"});
  return 0;
}

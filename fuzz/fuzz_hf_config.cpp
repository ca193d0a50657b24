// libFuzzer target: a Hugging Face config.json through the importer of import-hf and the GUI.
#include "fuzz/fuzz_check.h"
#include "sim/spec/hf_import.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace starfish;
  fuzz::refuse_cleanly([&] { (void)import_hf_config(fuzz::text_of(data, size), "config.json", "fuzz"); },
                       {"config.json"});
  return 0;
}

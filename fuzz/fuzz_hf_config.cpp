// libFuzzer target: a Hugging Face config.json through the GUI's importer (Qt-free code).
#include "fuzz/fuzz_check.h"
#include "gui/hf_import.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace starfish;
  fuzz::refuse_cleanly([&] { (void)gui::import_hf_config(fuzz::text_of(data, size), "config.json", "fuzz"); },
                       {"config.json"});
  return 0;
}

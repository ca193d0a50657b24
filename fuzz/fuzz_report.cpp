// libFuzzer target: a JSON report (`simulate --json`, `starfish-run --report`) as `compare` reads it.
#include "fuzz/fuzz_check.h"
#include "sim/spec/json_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace starfish;
  fuzz::refuse_cleanly(
      [&] {
        const JsonValue v = parse_json(fuzz::text_of(data, size), "report.json");
        for (const char* path : {"iteration_s", "tokens_per_s", "memory.peak_gpu_bytes", "bytes.h2d", "moves", "a.b.c"}) {
          (void)v.number_at(path);
          (void)v.string_at(path);
        }
      },
      {"report.json"});
  return 0;
}

// libFuzzer target: a move log (`simulate --moves`, `starfish-run --move-log`) as `compare` reads it.
#include <sstream>

#include "fuzz/fuzz_check.h"
#include "sim/chunk/move_log.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace starfish;
  fuzz::refuse_cleanly(
      [&] {
        std::istringstream in(fuzz::text_of(data, size));
        const std::vector<Move> moves = read_move_log(in, "moves.jsonl");
        // What `compare --moves` does with it: written lines read back the same.
        for (const Move& m : moves)
          if (!(parse_move_line(to_json_line(m)) == m)) fuzz::finding("a move does not round-trip", to_json_line(m));
        (void)diff_move_logs(moves, moves).describe();
      },
      {"moves.jsonl"});
  return 0;
}

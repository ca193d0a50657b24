#pragma once
// The move log: every byte the chunk runtime moves (copies and collectives), one JSON object per
// line, written the same way on every backend so a simulated run and a real one can be diffed:
//   {"rank":0,"moment":12,"chunk":3,"op":"copy","from":"gpu","to":"cpu","bytes":8388608,"reason":"eviction"}
// For a collective, op names it ("all-gather", ...), from = to = the tier it runs on, bytes =
// this rank's traffic in one direction (see ReferenceBackend), chunk = the group's first chunk.
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "sim/chunk/backend.h"

namespace starfish {

struct Move {
  int rank = 0;
  Moment moment = 0;
  int chunk = -1;
  std::string op = "copy";
  Tier from = Tier::gpu;
  Tier to = Tier::gpu;
  int64_t bytes = 0;
  MoveReason reason = MoveReason::access;
  bool operator==(const Move&) const = default;
};

std::string to_json_line(const Move& move);  // no trailing newline
// Throws SpecError("<source>:<line>:<column>: <why>: <text>") on anything but the format above
// (the text cut to one short line).
Move parse_move_line(const std::string& line, int line_number = 1, const std::string& source = "move log");
void write_move_log(std::ostream& out, const std::vector<Move>& moves);
std::vector<Move> read_move_log(std::istream& in, const std::string& source = "move log");  // blank lines are skipped
// The file at `path` (read_input_file's checks: no folder, device or oversized file).
std::vector<Move> read_move_log_file(const std::string& path);

struct MoveDiff {
  bool same = true;
  size_t index = 0;           // first diverging move (or the shorter log's length)
  std::optional<Move> left;   // absent when the left log ended first
  std::optional<Move> right;
  std::string describe() const;  // "identical (N moves)" or "move 17 differs: ... vs ..."
};
MoveDiff diff_move_logs(const std::vector<Move>& left, const std::vector<Move>& right);

}  // namespace starfish

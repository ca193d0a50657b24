// The move log round-trips through JSON lines, and the diff names the first divergence.
#include <gtest/gtest.h>

#include <sstream>

#include "sim/chunk/iteration_driver.h"
#include "sim/chunk/move_log.h"
#include "sim/chunk/reference_backend.h"
#include "sim/spec/error.h"
#include "tests/sim/chunk/hand_model.h"

namespace starfish {
namespace {

std::vector<Move> run_moves(int64_t gpu_bytes) {
  const ChunkLayout layout = ChunkLayout::build(test::one_tensor_layers(5, 100), LayoutOptions{100, DType::bf16, Optimizer::adam, 1});
  ReferenceBackend backend;
  RuntimeOptions o;
  o.budget = {gpu_bytes, 1 << 20, 0};
  ChunkRuntime rt(layout, o, backend);
  IterationDriver driver(rt, false);
  FixedNonModel hooks(0);
  driver.run_iteration(hooks);
  driver.run_iteration(hooks);
  return rt.moves();
}

TEST(MoveLog, OneMoveIsOneJsonLine) {
  const Move m{3, 12, 7, "copy", Tier::gpu, Tier::nvme, 8388608, MoveReason::eviction};
  EXPECT_EQ(to_json_line(m),
            "{\"rank\":3,\"moment\":12,\"chunk\":7,\"op\":\"copy\",\"from\":\"gpu\",\"to\":\"nvme\",\"bytes\":8388608,"
            "\"reason\":\"eviction\"}");
  EXPECT_EQ(parse_move_line(to_json_line(m)), m);
}

TEST(MoveLog, ARunRoundTripsThroughJsonLines) {
  const std::vector<Move> moves = run_moves(400);
  ASSERT_GT(moves.size(), 10u);
  std::stringstream text;
  write_move_log(text, moves);
  EXPECT_EQ(read_move_log(text), moves);
}

TEST(MoveLog, DiffFindsAnInjectedDivergence) {
  const std::vector<Move> a = run_moves(400);
  std::vector<Move> b = a;
  b[7].bytes += 2;
  const MoveDiff d = diff_move_logs(a, b);
  EXPECT_FALSE(d.same);
  EXPECT_EQ(d.index, 7u);
  EXPECT_EQ(d.describe(), "move 7 differs: " + to_json_line(a[7]) + " vs " + to_json_line(b[7]));
  EXPECT_TRUE(diff_move_logs(a, run_moves(400)).same);  // the runtime is deterministic
  // Another budget makes other decisions; a truncated log ends early.
  EXPECT_FALSE(diff_move_logs(a, run_moves(600)).same);
  const std::vector<Move> shorter(a.begin(), a.end() - 1);
  const MoveDiff end = diff_move_logs(a, shorter);
  EXPECT_EQ(end.index, a.size() - 1);
  EXPECT_FALSE(end.right.has_value());
}

TEST(MoveLog, BadLinesNameTheLineAndTheProblem) {
  std::stringstream text("\n{\"rank\":0,\"moment\":1,\"chunk\":2,\"op\":\"copy\",\"from\":\"gpu\",\"to\":\"disk\","
                         "\"bytes\":4,\"reason\":\"access\"}\n");
  try {
    read_move_log(text);
    FAIL() << "expected SpecError";
  } catch (const SpecError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("move log:2:1: unknown tier in 'to': {", 0), 0u) << e.what();
  }
  EXPECT_THROW(parse_move_line("{\"rank\":0}"), SpecError);
  EXPECT_THROW(parse_move_line(to_json_line(Move{}) + "x"), SpecError);
}

}  // namespace
}  // namespace starfish

#include <gtest/gtest.h>

#include "sim/spec/error.h"
#include "sim/spec/json_reader.h"
#include "sim/spec/json_writer.h"

namespace starfish {
namespace {

TEST(JsonReader, ReadsWhatTheWriterWrites) {
  JsonWriter w(true);
  w.begin_object().field("kind", "starfish.simulation").field("iteration_s", 1.25).key("memory").begin_object();
  w.field("peak_gpu_bytes", int64_t{85899345920}).end_object().key("list").begin_array().value(1).value("a\"b\n").null();
  w.end_array().field("ok", true).end_object();
  const JsonValue v = parse_json(w.str());
  EXPECT_EQ(v.string_at("kind"), "starfish.simulation");
  EXPECT_EQ(v.number_at("iteration_s"), 1.25);
  EXPECT_EQ(v.number_at("memory.peak_gpu_bytes"), 85899345920.0);
  ASSERT_NE(v.find("list"), nullptr);
  EXPECT_EQ(v.find("list")->array.size(), 3u);
  EXPECT_EQ(v.find("list")->array[1].string, "a\"b\n");
  EXPECT_FALSE(v.number_at("memory.missing").has_value());
}

TEST(JsonReader, ErrorsNameLineAndColumn) {
  try {
    parse_json("{\n  \"a\": 1,\n  \"b\" 2\n}", "r.json");
    FAIL();
  } catch (const SpecError& e) {
    EXPECT_STREQ(e.what(), "r.json:3:7: invalid JSON: expected ':'");
  }
  EXPECT_THROW(parse_json("[1, 2", "x"), SpecError);
  EXPECT_THROW(parse_json("{} extra", "x"), SpecError);
}

}  // namespace
}  // namespace starfish

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

TEST(JsonReader, EachValueKnowsWhereItStarts) {
  const JsonValue v = parse_json("{\n \"x\": [1, 2.5, \"s\\\"q\", true, null, {\"k\": -3}],\n \"n\": 12}");
  const std::vector<JsonValue>& x = v.find("x")->array;
  ASSERT_EQ(x.size(), 6u);
  const int columns[] = {8, 11, 16, 24, 30, 36};  // 1, 2.5, "s\"q", true, null, {
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(x[i].line, 2) << i;
    EXPECT_EQ(x[i].column, columns[i]) << i;
  }
  EXPECT_EQ(x[2].string, "s\"q");
  EXPECT_TRUE(x[0].integer);   // written without fraction
  EXPECT_FALSE(x[1].integer);  // 2.5
  EXPECT_EQ(x[5].find("k")->number, -3);
  EXPECT_EQ(v.find("n")->line, 3);
  EXPECT_EQ(v.find("n")->column, 7);
}

TEST(JsonReader, ErrorsPointAtTheToken) {
  auto error_of = [](const std::string& text) {
    try {
      parse_json(text, "r.json");
    } catch (const SpecError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error_of("[1 2]"), "r.json:1:4: invalid JSON: expected ']'");
  EXPECT_EQ(error_of("[1, 2"), "r.json:1:6: invalid JSON: unexpected end of input; expected ']'");
  EXPECT_EQ(error_of("{}\n extra"), "r.json:2:2: invalid JSON: unexpected text after the value");
  EXPECT_EQ(error_of("[tru]"), "r.json:1:5: invalid JSON: invalid literal");
}

TEST(JsonWriter, AnyBytesInAStringStillMakeValidJson) {
  JsonWriter w;
  w.begin_object().field("name", std::string("gpu\xff\x01\"0\"")).end_object();
  const JsonValue v = parse_json(w.str());
  EXPECT_EQ(v.string_at("name"), "gpu\xEF\xBF\xBD\x01\"0\"");  // the invalid byte as U+FFFD, the rest kept
}

}  // namespace
}  // namespace starfish

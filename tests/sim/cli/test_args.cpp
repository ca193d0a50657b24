// The one command-line parser of starfish and starfish-run (sim/cli/args.h, CLI11 underneath).
#include <gtest/gtest.h>

#include "sim/cli/args.h"

namespace starfish::cli {
namespace {

std::string error_of(std::vector<std::string> argv) {
  try {
    Args(std::move(argv), {"model", "top"}, {"json", "help"});
  } catch (const UsageError& e) {
    return e.what();
  }
  return "no error";
}

TEST(Args, OptionsFlagsAndPositionalsInAnyOrder) {
  const Args a({"config.json", "--model", "gpt3", "--top=5", "--json", "-"}, {"model", "top"}, {"json", "help"});
  EXPECT_EQ(a.get("model"), "gpt3");
  EXPECT_EQ(a.get("top"), "5");
  EXPECT_TRUE(a.flag("json"));
  EXPECT_FALSE(a.flag("help"));
  EXPECT_FALSE(a.get("missing").has_value());
  EXPECT_EQ(a.positional(), (std::vector<std::string>{"config.json", "-"}));  // "-": standard input
}

TEST(Args, TheLastValueOfARepeatedOptionWins) {
  const Args a({"--top", "5", "--top", "7"}, {"top"}, {});
  EXPECT_EQ(a.get("top"), "7");
}

TEST(Args, MistakesAreUsageErrorsThatNameTheOption) {
  EXPECT_EQ(error_of({"--modle", "x"}), "unknown option --modle (known: --model --top --help --json)");
  EXPECT_EQ(error_of({"--model"}), "--model needs a value");
  EXPECT_EQ(error_of({"--json=3"}), "--json takes no value");
  try {
    (void)Args({}, {"model"}, {}).required("model");
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "missing --model");
  }
}

}  // namespace
}  // namespace starfish::cli

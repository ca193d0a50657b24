#include <gtest/gtest.h>

#include <stdexcept>

#include "sim/spec/units.h"

namespace starfish::units {
namespace {

TEST(Units, ParsesBinaryAndDecimalSizes) {
  EXPECT_EQ(parse_bytes("80GiB"), 80LL << 30);
  EXPECT_EQ(parse_bytes("80 GiB"), 80LL << 30);
  EXPECT_EQ(parse_bytes("30TB"), 30'000'000'000'000LL);
  EXPECT_EQ(parse_bytes("1.5KiB"), 1536);
  EXPECT_EQ(parse_bytes("4096"), 4096);
  EXPECT_EQ(parse_bytes("2e3B"), 2000);
}

TEST(Units, ParsesRatesInBytesAndBits) {
  EXPECT_DOUBLE_EQ(parse_rate("2039GB/s"), 2039e9);
  EXPECT_DOUBLE_EQ(parse_rate("200Gb/s"), 25e9);
  EXPECT_DOUBLE_EQ(parse_rate("100Gbps"), 12.5e9);
  EXPECT_DOUBLE_EQ(parse_rate("1GiB/s"), 1073741824.0);
}

TEST(Units, ParsesFlopsAndDurations) {
  EXPECT_DOUBLE_EQ(parse_flops("312TFLOPS"), 312e12);
  EXPECT_DOUBLE_EQ(parse_flops("19.5TFLOP/s"), 19.5e12);
  EXPECT_DOUBLE_EQ(parse_flop_count("2.15GFLOP"), 2.15e9);
  EXPECT_DOUBLE_EQ(parse_seconds("5us"), 5e-6);
  EXPECT_DOUBLE_EQ(parse_seconds("30days"), 30 * 86400.0);
  EXPECT_EQ(parse_count("64Mi"), 64LL << 20);
  EXPECT_EQ(parse_count("64M"), 64'000'000);
}

TEST(Units, RejectsBadText) {
  EXPECT_THROW(parse_bytes("-1GiB"), std::invalid_argument);
  EXPECT_THROW(parse_bytes("80GiBs"), std::invalid_argument);
  EXPECT_THROW(parse_bytes("GiB"), std::invalid_argument);
  EXPECT_THROW(parse_bytes("0.3B"), std::invalid_argument);  // not a whole byte
  EXPECT_THROW(parse_rate("10GB"), std::invalid_argument);   // a size, not a rate
  EXPECT_THROW(parse_flops("nan"), std::invalid_argument);
  try {
    parse_bytes("12 parsecs");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("unknown unit 'parsecs'"), std::string::npos) << e.what();
  }
}

TEST(Units, FormatsRoundTripExactly) {
  for (int64_t b : {int64_t{80} << 30, int64_t{30'000'000'000'000}, int64_t{1536}, int64_t{123456789}, int64_t{1},
                    int64_t{305562}})  // 298.4 KiB: no short exact form
    EXPECT_EQ(parse_bytes(format_bytes(b)), b) << format_bytes(b);
  EXPECT_EQ(format_bytes(80LL << 30), "80GiB");
  EXPECT_EQ(format_bytes(30'000'000'000'000LL), "30TB");
  for (double r : {2039e9, 25e9, 300e9, 12.5e9, 3.14159e7, 1.0 / 3.0})
    EXPECT_EQ(parse_rate(format_rate(r)), r) << format_rate(r);
  EXPECT_EQ(format_rate(2039e9), "2039GB/s");
  for (double f : {312e12, 19.5e12, 1.979e15}) EXPECT_EQ(parse_flops(format_flops(f)), f) << format_flops(f);
  EXPECT_EQ(format_flops(312e12), "312TFLOPS");
  for (double s : {5e-6, 1e-3, 2.5, 100e-6, 1.0 / 7}) EXPECT_EQ(parse_seconds(format_seconds(s)), s) << format_seconds(s);
  EXPECT_EQ(format_seconds(5e-6), "5us");
  for (int64_t c : {int64_t{64} << 20, int64_t{1000}, int64_t{12345}}) EXPECT_EQ(parse_count(format_count(c)), c);
}

TEST(Units, HumanRenderings) {
  EXPECT_EQ(human_bytes(80.0 * (1LL << 30)), "80.0 GiB");
  EXPECT_EQ(human_bytes(0), "0");
  EXPECT_EQ(human_seconds(0.00123), "1.23 ms");
  EXPECT_EQ(human_count(175e9), "175 B");
}

}  // namespace
}  // namespace starfish::units

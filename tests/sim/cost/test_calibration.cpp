#include <gtest/gtest.h>

#include <cmath>

#include "sim/cost/calibration.h"
#include "test_support.h"

namespace starfish {
namespace {

// Measurements generated from a known efficiency law: a GEMM of F FLOP runs at
// 0.9 * F / (F + 2 GFLOP) of peak (latency-bound when small, saturating when large).
std::string synthetic_csv(double peak) {
  std::string csv = "kind,dtype,m,n,k,bytes,seconds\n";
  for (int e = 7; e <= 13; ++e)
    for (int i = 0; i < 4; ++i) {
      const double n = std::round(std::pow(2.0, e + i * 0.25));
      const double flop = 2 * n * n * n;
      const double eff = 0.9 * flop / (flop + 2e9);
      csv += "gemm,bf16," + std::to_string(n) + "," + std::to_string(n) + "," + std::to_string(n) + ",," +
             std::to_string(flop / (peak * eff)) + "\n";
    }
  csv += "stream,bf16,,,,1e9," + std::to_string(1e9 / (0.8 * 2039e9)) + "\n";
  return csv;
}

TEST(Calibration, RecoversAKnownEfficiencyLaw) {
  const GpuSpec gpu = testing::dgx(1).node.gpu;
  const Calibration cal = fit_calibration(gpu, parse_measurements(synthetic_csv(312e12), "m.csv"));
  ASSERT_GE(cal.matmul_efficiency.points.size(), 5u);
  for (double flop : {1e9, 1e10, 1e11, 1e12}) {
    const double truth = 0.9 * flop / (flop + 2e9);
    EXPECT_NEAR(cal.matmul_efficiency.at(flop), truth, 0.05 * truth) << flop;
  }
  EXPECT_NEAR(cal.hbm_efficiency, 0.8, 1e-3);
  EXPECT_EQ(cal.stream_points, 1);
}

TEST(Calibration, CurveIsMonotoneEvenWithNoisyMeasurements) {
  const GpuSpec gpu = testing::dgx(1).node.gpu;
  // A slow outlier at a large size must not make the curve dip.
  const std::string csv =
      "kind,dtype,m,n,k,bytes,seconds\n"
      "gemm,bf16,1024,1024,1024,,1.2e-5\n"
      "gemm,bf16,4096,4096,4096,,5.5e-4\n"
      "gemm,bf16,8192,8192,8192,,9.0e-3\n"
      "gemm,bf16,16384,16384,16384,,3.2e-2\n";
  const Calibration cal = fit_calibration(gpu, parse_measurements(csv, "m.csv"));
  const auto& p = cal.matmul_efficiency.points;
  for (size_t i = 1; i < p.size(); ++i) {
    EXPECT_GT(p[i].first, p[i - 1].first);
    EXPECT_GE(p[i].second, p[i - 1].second);
  }
}

TEST(Calibration, FittedPointsKeepThreeSignificantDigitsAndTheCopyRateIsReported) {
  const GpuSpec gpu = testing::dgx(1).node.gpu;
  const Calibration cal = fit_calibration(gpu, parse_measurements(synthetic_csv(312e12), "m.csv"));
  for (const auto& [flop, fraction] : cal.matmul_efficiency.points) {
    // 2 x 128^3 = 4194304 FLOP is written 4.19 MFLOP, not 4194303.9999999995.
    const double flop_scale = std::pow(10.0, std::floor(std::log10(flop)) - 2);
    EXPECT_DOUBLE_EQ(std::round(flop / flop_scale) * flop_scale, flop);
    const double fraction_scale = std::pow(10.0, std::floor(std::log10(fraction)) - 2);
    EXPECT_DOUBLE_EQ(std::round(fraction / fraction_scale) * fraction_scale, fraction);
  }
  // The synthetic copy ran at 0.8 of the GPU's 2039 GB/s (its time is written with 6 decimals: 1e-3).
  EXPECT_NEAR(cal.stream_bytes_per_s, 0.8 * 2039e9, 0.8 * 2039e9 * 1e-3);
}

TEST(Calibration, BadRowsNameTheLineAndColumn) {
  auto error = [](const std::string& csv) {
    try {
      parse_measurements(csv, "m.csv");
    } catch (const SpecError& e) {
      return std::string(e.what());
    }
    return std::string("<no error>");
  };
  EXPECT_EQ(error("kind,m\n"), "m.csv:1: expected the header 'kind,dtype,m,n,k,bytes,seconds'");
  EXPECT_EQ(error("kind,dtype,m,n,k,bytes,seconds\ngemm,bf17,1,1,1,,1\n"),
            "m.csv:2: column 'dtype': 'bf17' is not a dtype (fp32, tf32, fp16, bf16, fp8)");
  EXPECT_EQ(error("kind,dtype,m,n,k,bytes,seconds\ngemm,bf16,1,1,1,,0\n"), "m.csv:2: column 'seconds': must be positive");
  EXPECT_EQ(error("kind,dtype,m,n,k,bytes,seconds\ngemm,bf16,x,1,1,,1\n"), "m.csv:2: column 'm': no number in 'x'");
  EXPECT_EQ(error("kind,dtype,m,n,k,bytes,seconds\nconv,bf16,1,1,1,,1\n"), "m.csv:2: column 'kind': 'conv' is not gemm or stream");
  EXPECT_THROW(fit_calibration(testing::dgx(1).node.gpu, {}), SpecError);
}

}  // namespace
}  // namespace starfish

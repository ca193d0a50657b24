#include "sim/cost/calibration.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include "sim/spec/units.h"

namespace starfish {
namespace {

std::vector<std::string> cells(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream ss(line);
  std::string c;
  while (std::getline(ss, c, ',')) out.push_back(c);
  return out;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

std::vector<Measurement> parse_measurements(const std::string& text, const std::string& file) {
  static const char* kHeader = "kind,dtype,m,n,k,bytes,seconds";
  static const char* kColumns[] = {"kind", "dtype", "m", "n", "k", "bytes", "seconds"};
  std::stringstream in(text);
  std::string line;
  int number = 0;
  std::vector<Measurement> rows;
  auto fail = [&](int col, const std::string& why) {
    throw SpecError(file + ":" + std::to_string(number) + ": column '" + kColumns[col] + "': " + why);
  };
  while (std::getline(in, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (number == 1) {
      if (line != kHeader) throw SpecError(file + ":1: expected the header '" + std::string(kHeader) + "'");
      continue;
    }
    if (line.empty() || line[0] == '#') continue;
    const auto c = cells(line);
    if (c.size() != 7) throw SpecError(file + ":" + std::to_string(number) + ": expected 7 columns, got " + std::to_string(c.size()));
    Measurement r;
    r.line = number;
    if (c[0] == "gemm") r.kind = Measurement::Kind::gemm;
    else if (c[0] == "stream") r.kind = Measurement::Kind::stream;
    else fail(0, "'" + c[0] + "' is not gemm or stream");
    if (!parse_dtype(c[1], r.dtype)) fail(1, "'" + c[1] + "' is not a dtype (fp32, tf32, fp16, bf16, fp8)");
    double* fields[] = {&r.m, &r.n, &r.k, &r.bytes, &r.seconds};
    for (int i = 0; i < 5; ++i) {
      try {
        *fields[i] = c[static_cast<size_t>(i + 2)].empty() ? 0 : units::parse_number(c[static_cast<size_t>(i + 2)]);
      } catch (const std::invalid_argument& e) {
        fail(i + 2, e.what());
      }
    }
    if (r.seconds <= 0) fail(6, "must be positive");
    if (r.kind == Measurement::Kind::gemm && (r.m <= 0 || r.n <= 0 || r.k <= 0)) fail(2, "a gemm needs positive m, n and k");
    if (r.kind == Measurement::Kind::stream && r.bytes <= 0) fail(5, "a stream row needs positive bytes");
    rows.push_back(r);
  }
  if (number == 0) throw SpecError(file + ":1: empty file");
  return rows;
}

std::vector<Measurement> read_measurements(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw SpecError(path + ": cannot open file");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_measurements(ss.str(), path);
}

namespace {
// A fitted value to three significant digits: run-to-run noise of a timed GEMM or copy is a few
// per cent, so further digits carry nothing, and the written profile stays readable (the exact
// median of log-FLOP otherwise prints as 8388607.9999999916).
double three_significant_digits(double value) {
  if (value <= 0 || !std::isfinite(value)) return value;
  const double scale = std::pow(10.0, std::floor(std::log10(value)) - 2);
  return std::round(value / scale) * scale;
}
}  // namespace

Calibration fit_calibration(const GpuSpec& gpu, const std::vector<Measurement>& rows) {
  std::map<DType, int> count;
  for (const auto& r : rows)
    if (r.kind == Measurement::Kind::gemm) ++count[r.dtype];
  if (count.empty()) throw SpecError("calibration needs at least one gemm measurement");
  const DType dtype = std::max_element(count.begin(), count.end(), [](auto& a, auto& b) { return a.second < b.second; })->first;
  const double peak = gpu.peak(dtype);

  std::vector<std::pair<double, double>> pts;  // (log10 flop, fraction)
  for (const auto& r : rows) {
    if (r.kind != Measurement::Kind::gemm || r.dtype != dtype) continue;
    const double flop = 2 * r.m * r.n * r.k;
    pts.emplace_back(std::log10(flop), std::min(1.0, flop / r.seconds / peak));
  }
  std::sort(pts.begin(), pts.end());
  // Pool adjacent violators: blocks of (sum, count) whose means never decrease.
  struct Block {
    double sum, n, x_sum;
  };
  std::vector<Block> blocks;
  for (const auto& [x, y] : pts) {
    blocks.push_back({y, 1, x});
    while (blocks.size() > 1 && blocks[blocks.size() - 2].sum / blocks[blocks.size() - 2].n > blocks.back().sum / blocks.back().n) {
      Block b = blocks.back();
      blocks.pop_back();
      blocks.back().sum += b.sum;
      blocks.back().n += b.n;
      blocks.back().x_sum += b.x_sum;
    }
  }
  std::vector<double> fitted;  // per point, its block's mean
  for (const Block& b : blocks) fitted.insert(fitted.end(), static_cast<size_t>(b.n), b.sum / b.n);
  // Half-decade bins: the median log-FLOP and the median fitted fraction of each.
  std::map<int, std::pair<std::vector<double>, std::vector<double>>> bins;
  for (size_t i = 0; i < pts.size(); ++i) {
    auto& bin = bins[static_cast<int>(std::floor(pts[i].first * 2))];
    bin.first.push_back(pts[i].first);
    bin.second.push_back(fitted[i]);
  }
  Calibration out;
  out.gemm_points = static_cast<int>(pts.size());
  double last = 0;
  for (auto& [key, bin] : bins) {
    const double flop = three_significant_digits(std::pow(10.0, median(bin.first)));
    // Medians of a monotone fit stay monotone; rounding each up keeps it so.
    const double fraction = std::max(last, three_significant_digits(median(bin.second)));
    if (!out.matmul_efficiency.points.empty() && flop <= out.matmul_efficiency.points.back().first) continue;
    out.matmul_efficiency.points.emplace_back(flop, std::max(fraction, 1e-4));
    last = fraction;
  }
  std::vector<double> stream;
  for (const auto& r : rows)
    if (r.kind == Measurement::Kind::stream) stream.push_back(r.bytes / r.seconds / gpu.hbm_bandwidth_Bps);
  out.stream_points = static_cast<int>(stream.size());
  if (!stream.empty()) {
    const double achieved_fraction = median(stream);
    out.stream_bytes_per_s = achieved_fraction * gpu.hbm_bandwidth_Bps;
    out.hbm_efficiency = std::clamp(three_significant_digits(achieved_fraction), 0.01, 1.0);
  }
  return out;
}

}  // namespace starfish

#pragma once
// Fitting a GPU's efficiency from measurements (the documented calibration procedure):
//   1. measure GEMMs of many shapes and a streaming copy on the GPU (exec/bench/gemm_calibration
//      writes them as CSV: kind,dtype,m,n,k,bytes,seconds);
//   2. `starfish calibrate --hw H --measurements M.csv --out H-calibrated.yaml` fits
//      matmul_efficiency as a monotone piecewise-linear curve in log10(FLOP) and hbm_efficiency
//      as the median achieved fraction of the streaming rows, and writes a new hwprofile.
// The curve: each GEMM gives (2mnk FLOP, achieved / peak); the points are sorted by FLOP, made
// non-decreasing by pool-adjacent-violators (bigger GEMMs are never slower per FLOP on average),
// then reduced to the median of each half-decade bin.
#include <string>
#include <vector>

#include "sim/spec/hardware.h"

namespace starfish {

struct Measurement {
  enum class Kind { gemm, stream } kind = Kind::gemm;
  DType dtype = DType::bf16;
  double m = 0, n = 0, k = 0;  // GEMM shape
  double bytes = 0;            // stream: bytes read + written
  double seconds = 0;
  int line = 0;                // in the CSV, for messages
};

// Reads the CSV (header "kind,dtype,m,n,k,bytes,seconds"); errors name file:line and column.
std::vector<Measurement> read_measurements(const std::string& path);
std::vector<Measurement> parse_measurements(const std::string& text, const std::string& file);

struct Calibration {
  EfficiencyCurve matmul_efficiency;
  double hbm_efficiency = 0;  // 0 when no stream rows; at most 1
  // The streaming rows' median achieved rate. Above the profile's hbm_bandwidth (efficiency
  // capped at 1) the profile's bandwidth is too low: a CPU profile states its achieved rate.
  double stream_bytes_per_s = 0;
  int gemm_points = 0, stream_points = 0;
};

// Fits against `gpu`'s peaks for the measurements' dtype (one dtype per fit: the most common).
// Throws SpecError when there are no GEMM rows or a dtype the GPU has no peak for.
Calibration fit_calibration(const GpuSpec& gpu, const std::vector<Measurement>& rows);

}  // namespace starfish

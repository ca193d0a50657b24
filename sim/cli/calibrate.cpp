// starfish calibrate --hw H --measurements M.csv --out NEW.yaml [--force] [--json]: fits the GPU's GEMM
// efficiency curve and HBM efficiency from measurements (see sim/cost/calibration.h) and writes
// a new hwprofile; the original is never touched.
#include <cstdio>

#include <fmt/core.h>

#include "sim/cli/cli.h"
#include "sim/cost/calibration.h"
#include "sim/spec/json_writer.h"
#include "sim/spec/spec_io.h"
#include "sim/spec/units.h"

namespace starfish::cli {

int run_calibrate(const std::vector<std::string>& argv) {
  Args args(argv, {"hw", "measurements", "out"}, {"force", "json", "help"});
  if (args.flag("help")) {
    fmt::print(
        "usage: starfish calibrate --hw H --measurements M.csv --out NEW.yaml [--force] [--json]\n"
        "  M.csv: kind,dtype,m,n,k,bytes,seconds rows (exec/bench/gemm_calibration writes them)\n"
        "  Fits matmul_efficiency (monotone, piecewise linear in log FLOP) and hbm_efficiency,\n"
        "  and writes a copy of H with them. --force replaces an existing NEW.yaml.\n"
        "  --json: what was fitted as one JSON object.\n");
    return 0;
  }
  const std::string hw_path = resolve_hardware(args.required("hw"));
  const std::string out = args.required("out");
  Cluster c = load_cluster(hw_path);
  const Calibration cal = fit_calibration(c.node.gpu, read_measurements(args.required("measurements")));
  c.node.gpu.matmul_efficiency = cal.matmul_efficiency;
  if (cal.stream_points > 0) c.node.gpu.hbm_efficiency = cal.hbm_efficiency;
  const std::string header = "# Calibrated by `starfish calibrate` from " + args.required("measurements") + " (" +
                             std::to_string(cal.gemm_points) + " GEMMs, " + std::to_string(cal.stream_points) +
                             " streaming copies) on top of " + hw_path + ".\n";
  save_text_file(out, header + to_yaml(c), args.flag("force"));
  if (args.flag("json")) {
    JsonWriter w(true);
    w.begin_object().field("kind", "starfish.calibrate").field("hwprofile", out).field("gemm_points", cal.gemm_points);
    w.key("matmul_efficiency").begin_array();
    for (const auto& [flop, f] : cal.matmul_efficiency.points) w.begin_array().value(flop).value(f).end_array();
    w.end_array().field("stream_points", cal.stream_points);
    if (cal.stream_points > 0) w.field("hbm_efficiency", cal.hbm_efficiency);
    w.end_object();
    std::fputs((w.str() + "\n").c_str(), stdout);
    return 0;
  }
  fmt::print("{}: matmul_efficiency from {} GEMMs:", out, cal.gemm_points);
  for (const auto& [flop, f] : cal.matmul_efficiency.points) fmt::print(" [{}, {:.3f}]", units::format_flop_count(flop), f);
  if (cal.stream_points > 0) fmt::print("; hbm_efficiency {:.3f} from {} copies", cal.hbm_efficiency, cal.stream_points);
  fmt::print("\n");
  std::fflush(stdout);  // the summary, then the warning about it
  if (cal.stream_bytes_per_s > c.node.gpu.hbm_bandwidth_Bps * 1.05)
    fmt::print(stderr, "calibrate: the copies ran at {:.3g} GB/s, above {}'s hbm_bandwidth of {:.3g} GB/s (hbm_efficiency is capped at 1): raise its hbm_bandwidth\n",
               cal.stream_bytes_per_s / 1e9, hw_path, c.node.gpu.hbm_bandwidth_Bps / 1e9);
  return 0;
}

}  // namespace starfish::cli

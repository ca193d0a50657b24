// starfish compare PREDICTED.json MEASURED.json [--moves A.jsonl B.jsonl]: predicted against
// measured, quantity by quantity (the keys both `starfish simulate --json` and `starfish-run
// --report` write), and the first move where two move logs diverge.
#include <cmath>
#include <cstdio>

#include "sim/chunk/move_log.h"
#include "sim/cli/cli.h"
#include "sim/spec/json_reader.h"
#include "sim/spec/units.h"

namespace starfish::cli {
namespace {

struct Quantity {
  const char* path;
  const char* name;
  bool bytes;
};

constexpr Quantity kQuantities[] = {
    {"iteration_s", "iteration time", false},
    {"tokens_per_s", "tokens/s", false},
    {"memory.peak_gpu_bytes", "peak GPU memory (per GPU)", true},
    {"memory.cpu_bytes_per_gpu", "peak CPU memory (per GPU)", true},
    {"memory.nvme_bytes_per_gpu", "peak NVMe (per GPU)", true},
    {"bytes.h2d", "bytes host -> GPU", true},
    {"bytes.d2h", "bytes GPU -> host", true},
    {"bytes.nvme_read", "bytes read from NVMe", true},
    {"bytes.nvme_write", "bytes written to NVMe", true},
    {"moves", "chunk moves", false},
};

std::string show(std::optional<double> v, const Quantity& q) {
  if (!v) return "-";
  if (q.bytes) return units::human_bytes(*v);
  if (std::string(q.path) == "iteration_s") return units::human_seconds(*v);
  return units::human_count(*v);
}

}  // namespace

int run_compare(const std::vector<std::string>& argv) {
  Args args(argv, {}, {"moves", "help"});
  if (args.flag("help")) {
    std::printf(
        "usage: starfish compare PREDICTED.json MEASURED.json [--moves PREDICTED.jsonl MEASURED.jsonl]\n"
        "  PREDICTED: `starfish simulate --json` output; MEASURED: `starfish-run --report` output.\n"
        "  --moves: also diff the two move logs (`simulate --moves`, `starfish-run --move-log`).\n"
        "exit status: 0 when the move logs are identical (or --moves is not given), 3 when they\n"
        "  diverge (a move differs, or one log ends first), 1 for unreadable input, 2 for bad usage.\n");
    return 0;
  }
  const auto& files = args.positional();
  const size_t want = args.flag("moves") ? 4 : 2;
  if (files.size() != want)
    throw UsageError(args.flag("moves") ? "expected PREDICTED.json MEASURED.json PREDICTED.jsonl MEASURED.jsonl"
                                        : "expected PREDICTED.json MEASURED.json");
  const JsonValue a = read_json_file(files[0]), b = read_json_file(files[1]);
  std::printf("%-28s %14s %14s %10s\n", "", "predicted", "measured", "meas/pred");
  int shown = 0;
  for (const Quantity& q : kQuantities) {
    const auto pa = a.number_at(q.path), pb = b.number_at(q.path);
    if (!pa && !pb) continue;
    ++shown;
    std::string ratio = "-";
    if (pa && pb && *pa != 0) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.3f", *pb / *pa);
      ratio = buf;
    }
    std::printf("%-28s %14s %14s %10s\n", q.name, show(pa, q).c_str(), show(pb, q).c_str(), ratio.c_str());
  }
  if (shown == 0)
    throw SpecError(files[0] + ", " + files[1] + ": neither report has any of the compared keys (iteration_s, ...)");
  if (args.flag("moves")) {
    const MoveDiff d = diff_move_logs(read_move_log_file(files[2]), read_move_log_file(files[3]));
    std::printf("\nmove logs: %s\n", d.describe().c_str());
    return d.same ? 0 : 3;
  }
  return 0;
}

}  // namespace starfish::cli

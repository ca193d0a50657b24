#pragma once
// Chrome-trace / Perfetto JSON (the "JSON Array/Object Format" that chrome://tracing and
// ui.perfetto.dev read) for one run: one process per node, one thread per resource (compute
// stream, copy engines, NVMe queues, user streams), and for tasks without a resource (transfers,
// collectives) per-GPU "comm" lanes, as many as needed so that events on one thread never
// overlap. Every task is a complete ("X") event with its category, and args: task id, kind,
// bytes, ready time, and for collectives the collective and the group size. Counter tracks
// ("C" events: memory over time) are drawn under their process as Perfetto counter tracks.
// A large cluster's trace is drawn for a few GPUs (TraceOptions::gpus): one row set per
// pipeline stage keeps a 1024-GPU trace a few megabytes instead of a hundred.
#include <iosfwd>
#include <string>
#include <utility>
#include <vector>

#include "sim/des/engine.h"

namespace starfish::des {

// A value over time ("stage 0 GPU memory", in bytes), drawn as a counter track of process `pid`.
struct CounterTrack {
  int pid = 0;
  std::string name;
  std::vector<std::pair<double, double>> points;  // (time_s, bytes), in time order
};

struct TraceOptions {
  // A collective is drawn on every GPU of its group (true) or only on its first GPU (false,
  // smaller files for very large groups).
  bool collectives_on_every_gpu = true;
  // The GPUs whose rows are drawn (compute and copy streams, comm lanes), with the node-level
  // rows (NVMe queues, host transfers) of their nodes; empty: every GPU and node. A task is
  // drawn on the listed GPUs it runs on, and not at all when it runs on none of them.
  std::vector<int> gpus;
  std::vector<CounterTrack> counters;
};

void write_chrome_trace(std::ostream& out, const Engine& engine, const Results& results, TraceOptions options = {});
// Writes to a file; throws SpecError when it cannot be written.
void write_chrome_trace_file(const std::string& path, const Engine& engine, const Results& results,
                             TraceOptions options = {});

}  // namespace starfish::des

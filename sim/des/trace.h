#pragma once
// Chrome-trace / Perfetto JSON (the "JSON Array/Object Format" that chrome://tracing and
// ui.perfetto.dev read) for one run: one process per node, one thread per resource (compute
// stream, copy engines, NVMe queues, user streams), and for tasks without a resource (transfers,
// collectives) per-GPU "comm" lanes, as many as needed so that events on one thread never
// overlap. Every task is a complete ("X") event with its category, and args: task id, kind,
// bytes, ready time, and for collectives the collective and the group size.
#include <iosfwd>
#include <string>

#include "sim/des/engine.h"

namespace starfish::des {

struct TraceOptions {
  // A collective is drawn on every GPU of its group (true) or only on its first GPU (false,
  // smaller files for very large groups).
  bool collectives_on_every_gpu = true;
};

void write_chrome_trace(std::ostream& out, const Engine& engine, const Results& results, TraceOptions options = {});
// Writes to a file; throws SpecError when it cannot be written.
void write_chrome_trace_file(const std::string& path, const Engine& engine, const Results& results,
                             TraceOptions options = {});

}  // namespace starfish::des

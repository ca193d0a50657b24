#include "sim/schedule/pipeline_order.h"

#include <algorithm>

#include "sim/cost/pipeline_slots.h"

namespace starfish::schedule {
namespace {

// Megatron-LM's mapping of the k-th forward (or backward) of a stage to (micro-batch, virtual stage)
// in the interleaved schedule: micro-batches go in groups of p through each virtual stage in turn.
PipelineOp interleaved_op(int k, int p, int v, bool forward) {
  const int in_group = k % (p * v);
  int virtual_stage = in_group / p;
  if (!forward) virtual_stage = v - 1 - virtual_stage;
  const int micro_batch = (k / (p * v)) * p + k % p;
  return PipelineOp{forward, micro_batch, virtual_stage};
}

}  // namespace

std::vector<PipelineOp> stage_order(Schedule schedule, int p, int s, int m, int v) {
  std::vector<PipelineOp> ops;
  ops.reserve(static_cast<size_t>(2 * m * v));
  switch (schedule) {
    case Schedule::gpipe:
      for (int c = 0; c < v; ++c)
        for (int i = 0; i < m; ++i) ops.push_back({true, i, c});
      for (int c = v - 1; c >= 0; --c)
        for (int i = 0; i < m; ++i) ops.push_back({false, i, c});
      break;
    case Schedule::one_f_one_b: {
      const int warmup = static_cast<int>(warmup_forwards(schedule, p, s, m, 1));
      int f = 0, b = 0;
      for (; f < warmup; ++f) ops.push_back({true, f, 0});
      while (f < m) {
        ops.push_back({true, f++, 0});
        ops.push_back({false, b++, 0});
      }
      while (b < m) ops.push_back({false, b++, 0});
      break;
    }
    case Schedule::interleaved: {
      const int total = m * v;
      const int warmup = static_cast<int>(warmup_forwards(schedule, p, s, m, v));
      int f = 0, b = 0;
      for (; f < warmup; ++f) ops.push_back(interleaved_op(f, p, v, true));
      while (f < total) {
        ops.push_back(interleaved_op(f++, p, v, true));
        ops.push_back(interleaved_op(b++, p, v, false));
      }
      while (b < total) ops.push_back(interleaved_op(b++, p, v, false));
      break;
    }
  }
  return ops;
}

}  // namespace starfish::schedule

#include "sim/cost/pipeline_order.h"

#include <algorithm>

#include "sim/cost/pipeline_slots.h"

namespace starfish {
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

double peak_held_layers(Schedule schedule, int p, int s, int64_t m, int v, const std::function<int(int)>& layers_of) {
  // Fewer micro-batches walk the same first ops while the warm-up is not cut short by them:
  // p (v + 3) of them hold the warm-up (under (v + 1) p forwards) and a steady period of 2 p v.
  const int64_t walked = std::min<int64_t>(m, static_cast<int64_t>(p) * (v + 3));
  const int64_t period = static_cast<int64_t>(warmup_forwards(schedule, p, s, walked, v)) + 2LL * p * v;
  const std::vector<PipelineOp> ops = stage_order(schedule, p, s, static_cast<int>(walked), v);
  double held = 0, most = 0;
  for (size_t i = 0; i < ops.size() && static_cast<int64_t>(i) < period; ++i) {
    const int layers = layers_of(ops[i].virtual_stage);
    held += ops[i].forward ? layers : -layers;
    most = std::max(most, held);
  }
  return most;
}

}  // namespace starfish

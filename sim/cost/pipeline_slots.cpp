#include "sim/cost/pipeline_slots.h"

#include <algorithm>

#include "sim/cost/moe.h"
#include "sim/cost/op_time.h"
#include "sim/spec/pipeline_layout.h"

namespace starfish {

int64_t warmup_forwards(Schedule schedule, int p, int stage, int64_t m, int v) {
  const int64_t total = m * v;
  switch (schedule) {
    case Schedule::gpipe: return total;
    case Schedule::one_f_one_b: return std::min<int64_t>(p - stage - 1, m);
    case Schedule::interleaved: return std::min<int64_t>(int64_t{p - stage - 1} * 2 + int64_t{v - 1} * p, total);
  }
  return total;
}

double peak_in_flight_micro_batches(Schedule schedule, int p, int stage, int64_t m, int v) {
  const int64_t held = std::min(warmup_forwards(schedule, p, stage, m, v) + 1, m * v);
  return static_cast<double>(held) / v;
}

int64_t first_virtual_stage_in_flight(Schedule schedule, int p, int64_t m, int v) {
  switch (schedule) {
    case Schedule::gpipe: return m;
    case Schedule::one_f_one_b: return std::min<int64_t>(p, m);
    case Schedule::interleaved: return std::min<int64_t>(v > 1 ? 2 * int64_t{p} : p, m);
  }
  return m;
}

namespace {
int stage_windowed_layers(const Model& m, const Plan& p, int stage) {
  return stage_layers_where(m.layers, p.pp, p.virtual_stages, p.stage_layers, stage,
                            [&m](int l) { return m.windowed_layer(l); });
}

// A stage's transformer layers of one kind (all, MoE, sliding-window, kept in bf16 under fp8:
// dense and MoE), of which `kept` do not run the plan's recomputation (block recomputation; 0
// otherwise).
struct LayerCount {
  double all = 0, kept = 0;
  double recomputing() const { return all - kept; }
};
struct LayerKinds {
  double layers = 0, moe = 0, window = 0, bf16 = 0, moe_bf16 = 0;
};

// Adds the layers of `n`, at costs `c`, to a slot.
void add_layers(StageSlot& x, const StageCosts& c, const LayerKinds& n) {
  x.compute_s += n.layers * c.layer_s + n.moe * c.moe_extra_s + n.window * c.window_extra_s + n.bf16 * c.bf16_extra_s +
                 n.moe_bf16 * c.moe_bf16_extra_s;
  x.exchange_s += n.moe * c.moe_exchange_s;
  x.tp_comm_s += n.layers * c.tp_per_layer_s;
  x.cp_comm_s += n.layers * c.cp_per_layer_s;
  x.forward_s += n.layers * (c.layer_forward_s + c.tp_forward_per_layer_s + c.cp_forward_per_layer_s) +
                 n.moe * c.moe_forward_extra_s + n.window * c.window_forward_extra_s + n.bf16 * c.bf16_forward_extra_s +
                 n.moe_bf16 * c.moe_bf16_forward_extra_s;
}

// A stage's count of the layers `counts` picks, and of those that do not recompute (`kept`).
template <typename Predicate>
LayerCount stage_count(const Model& m, const Plan& p, int stage, bool block, Predicate counts) {
  LayerCount n{static_cast<double>(stage_layers_where(m.layers, p.pp, p.virtual_stages, p.stage_layers, stage, counts))};
  if (block) n.kept = n.all - stage_recomputing_layers_where(m.layers, p, stage, counts);
  return n;
}

// Stage s's time per micro-batch: its layers (dense, MoE, windowed, bf16 under fp8; under block
// recomputation those that keep their activations at `kept`'s cost), the last stage's output
// layer and metrics, gradient accumulation and the stage's sends.
StageSlot stage_slot(const Model& m, const Plan& p, const std::vector<double>& stage_params, const StageCosts& c,
                     const StageCosts* kept, int s) {
  StageSlot x;
  x.stage = s;
  x.layers = stage_layer_count(m.layers, p.pp, p.virtual_stages, p.stage_layers, s);
  const bool last = s == p.pp - 1;
  const bool block = kept != nullptr;
  LayerCount all{x.layers}, moe{m.is_moe() ? static_cast<double>(stage_moe_layers(m, p, s)) : 0},
      window{c.window_extra_s != 0 ? static_cast<double>(stage_windowed_layers(m, p, s)) : 0}, bf16, moe_bf16;
  if (block) {
    all.kept = all.all - stage_recomputing_layers_where(m.layers, p, s, [](int) { return true; });
    moe.kept = moe.all - stage_recomputing_layers_where(m.layers, p, s, [&m](int l) { return m.moe_layer(l); });
    window.kept = window.all - stage_recomputing_layers_where(m.layers, p, s, [&m](int l) { return m.windowed_layer(l); });
  }
  if (p.has_bf16_layers()) {
    bf16 = stage_count(m, p, s, block, [&](int l) { return bf16_layer_of_kind(m, p, l, false); });
    moe_bf16 = stage_count(m, p, s, block, [&](int l) { return bf16_layer_of_kind(m, p, l, true); });
  }
  if (block) add_layers(x, *kept, {all.kept, moe.kept, window.kept, bf16.kept, moe_bf16.kept});
  add_layers(x, c, {all.recomputing(), moe.recomputing(), window.recomputing(), bf16.recomputing(), moe_bf16.recomputing()});
  x.compute_s += last ? c.output_s + c.metric_s : 0;
  x.accumulate_s = stage_params[static_cast<size_t>(s)] * c.accumulate_s_per_param;
  x.pp_comm_s = c.pp_comm_s;
  // The output layer's forward is a third of its work (one GEMM to backward's two); the
  // sends split evenly between activations and gradients.
  x.forward_s += last ? output_forward_s(c.output_s) : 0;
  x.forward_s += c.pp_comm_s / 2;
  return x;
}
}  // namespace

PipelineSlots pipeline_slots(const Model& m, const Plan& p, const std::vector<double>& stage_params,
                             const StageCosts& c, int64_t micro_batches, const StageCosts* kept) {
  PipelineSlots out;
  double total_slots = 0;
  auto slot_of = [&](int s) { return stage_slot(m, p, stage_params, c, kept, s); };
  const double mb = static_cast<double>(micro_batches);
  // Stage k's finish (pipeline_slots.h) from the sums over the stages before it.
  auto finish = [&](const StageSlot& x, int k, double before_f, double before_b, double before_slots) {
    const double after = total_slots - before_slots - x.slot_s();
    const double warmup = std::min(mb, static_cast<double>(p.pp - k - 1)) * x.forward_s;
    return before_f + mb * x.slot_s() + std::max(0.0, after - warmup) + before_b;
  };
  double iteration = 0;
  if (p.stage_layers.per_stage.empty() && !m.is_moe() && !m.mixed_window() && !p.has_bf16_layers() && p.pp > 4) {
    // Every middle stage is the same (the layout differs at most on the first and last stage,
    // which also hold the embedding and the head): three slots. The finish is convex in k
    // between the first and last middle stage, so its largest value is at one of them -- an
    // O(1) answer for the search's hot path, equal to the loop below.
    const StageSlot first = slot_of(0), middle = slot_of(1), last = slot_of(p.pp - 1);
    out.slowest = first;
    if (middle.slot_s() > out.slowest.slot_s()) out.slowest = middle;
    if (last.slot_s() > out.slowest.slot_s()) out.slowest = last;
    out.shortest_backward_s = std::min({first.slot_s() - first.forward_s, middle.slot_s() - middle.forward_s,
                                        last.slot_s() - last.forward_s});
    total_slots = first.slot_s() + (p.pp - 2) * middle.slot_s() + last.slot_s();
    auto sum_before = [&](int k, double first_part, double middle_part) {
      return k == 0 ? 0.0 : first_part + (k - 1) * middle_part;
    };
    for (int k : {0, 1, p.pp - 2, p.pp - 1}) {
      const StageSlot& x = k == 0 ? first : k == p.pp - 1 ? last : middle;
      iteration = std::max(
          iteration, finish(x, k, sum_before(k, first.forward_s, middle.forward_s),
                            sum_before(k, first.slot_s() - first.forward_s, middle.slot_s() - middle.forward_s),
                            sum_before(k, first.slot_s(), middle.slot_s())));
    }
  } else {
    std::vector<StageSlot> slots;
    for (int s = 0; s < p.pp; ++s) {
      slots.push_back(slot_of(s));
      total_slots += slots.back().slot_s();
      if (s == 0 || slots.back().slot_s() > out.slowest.slot_s()) out.slowest = slots.back();
      const double backward_s = slots.back().slot_s() - slots.back().forward_s;
      out.shortest_backward_s = s == 0 ? backward_s : std::min(out.shortest_backward_s, backward_s);
    }
    double before_f = 0, before_b = 0, before_slots = 0;
    for (int k = 0; k < p.pp; ++k) {
      const StageSlot& x = slots[static_cast<size_t>(k)];
      iteration = std::max(iteration, finish(x, k, before_f, before_b, before_slots));
      before_f += x.forward_s;
      before_b += x.slot_s() - x.forward_s;
      before_slots += x.slot_s();
    }
  }
  out.bubble_s = (iteration - mb * out.slowest.slot_s()) / p.virtual_stages;
  return out;
}

}  // namespace starfish

#include "sim/cost/pipeline_slots.h"

#include <algorithm>

#include "sim/cost/moe.h"
#include "sim/spec/pipeline_layout.h"

namespace starfish {

PipelineSlots pipeline_slots(const Model& m, const Plan& p, const std::vector<double>& stage_params,
                             const StageCosts& c, int64_t micro_batches) {
  PipelineSlots out;
  // Prefix sums of the stages' forward and backward parts and their whole slots.
  double total_slots = 0;
  auto slot_of = [&](int s) {
    StageSlot x;
    x.stage = s;
    x.layers = stage_layer_count(m.layers, p.pp, p.virtual_stages, p.stage_layers, s);
    const bool last = s == p.pp - 1;
    const double moe_layers = m.is_moe() ? stage_moe_layers(m, p, s) : 0;
    x.compute_s = x.layers * c.layer_s + moe_layers * c.moe_extra_s + (last ? c.output_s : 0);
    x.accumulate_s = stage_params[static_cast<size_t>(s)] * c.accumulate_s_per_param;
    x.tp_comm_s = x.layers * c.tp_per_layer_s;
    x.pp_comm_s = c.pp_comm_s;
    // The output layer's forward is a third of its work (one GEMM to backward's two); the
    // sends split evenly between activations and gradients.
    x.forward_s = x.layers * (c.layer_forward_s + c.tp_forward_per_layer_s) + moe_layers * c.moe_forward_extra_s +
                  (last ? c.output_s / 3 : 0) + c.pp_comm_s / 2;
    return x;
  };
  for (int s = 0; s < p.pp; ++s) {
    const StageSlot x = slot_of(s);
    total_slots += x.slot_s();
    if (s == 0 || x.slot_s() > out.slowest.slot_s()) out.slowest = x;
  }
  const double mb = static_cast<double>(micro_batches);
  double before_f = 0, before_b = 0, before_slots = 0, iteration = 0;
  for (int k = 0; k < p.pp; ++k) {
    const StageSlot x = slot_of(k);
    const double after = total_slots - before_slots - x.slot_s();
    const double warmup = std::min(mb, static_cast<double>(p.pp - k - 1)) * x.forward_s;
    iteration = std::max(iteration, before_f + mb * x.slot_s() + std::max(0.0, after - warmup) + before_b);
    before_f += x.forward_s;
    before_b += x.slot_s() - x.forward_s;
    before_slots += x.slot_s();
  }
  out.bubble_s = (iteration - mb * out.slowest.slot_s()) / p.virtual_stages;
  return out;
}

}  // namespace starfish

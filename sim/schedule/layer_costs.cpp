#include "sim/schedule/layer_costs.h"

#include "sim/cost/activations.h"
#include "sim/cost/framework.h"
#include "sim/cost/moe.h"

namespace starfish::schedule {

LayerCosts layer_costs(const Job& job) {
  const Model& m = job.model;
  const Plan& p = job.plan;
  const GpuSpec& gpu = job.cluster.node.gpu;
  LayerCosts c;
  c.act_bytes = bytes_of(job.training.dtype);
  const PlanLayerTimes times = plan_layer_times(job.cluster.node, job.training.dtype, m, p);
  c.layer = times.layer;
  c.window_saving = times.window_saving;
  c.bf16_extra = times.bf16_extra;
  c.moe_bf16_extra = times.moe_bf16_extra;
  c.bf16_bytes = bf16_layer_extra_bytes(m, p, c.act_bytes);
  c.output_s = times.output_s;
  c.boundary_bytes = boundary_bytes(m, p, c.act_bytes);
  c.tp_bytes = 2 * c.boundary_bytes;
  const LayerActivations layer = plan_layer_activations(m, p, c.act_bytes);
  c.stored_bytes = layer.kept;
  c.full_bytes = layer.full;
  c.backward_transient_bytes = layer.backward_transient;
  c.embedding_bytes = embedding_activation_bytes(m, p, c.act_bytes);
  const StageActivations last = peak_stage_activations(m, p, 1, c.act_bytes, p.pp - 1);
  c.output_bytes = output_layer_activation_bytes(m, p, c.act_bytes);
  c.metric_s = times.metric_s;
  c.metric_bytes = last.metric_bytes;
  if (m.is_moe()) {
    const DType dtype = job.training.dtype;
    c.moe_layer = layer_time(gpu, dtype, m, plan_layer_shape(p, true), p.recompute);
    c.moe_stored_bytes = layer.moe_kept;
    c.moe_full_bytes = layer.moe_full;
    c.moe_backward_transient_bytes = layer.moe_backward_transient;
    c.dispatch_bytes = moe_dispatch_bytes(m, p, c.act_bytes);
    if (p.expert_tp() > 1) c.etp_gather_bytes = c.dispatch_bytes * p.expert_tp();
  }
  return c;
}

}  // namespace starfish::schedule

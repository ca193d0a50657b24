#pragma once
// Durations and memory of one layer's work on one GPU of a plan, from sim/cost: what every task
// of a simulated iteration is sized by.
#include <cstdint>

#include "sim/cost/activations.h"
#include "sim/cost/op_time.h"
#include "sim/spec/job.h"

namespace starfish::schedule {

struct LayerCosts {
  LayerTime layer;             // forward, backward, recompute of one transformer layer
  LayerTime window_saving;     // what a sliding-window layer saves (PlanLayerTimes)
  double output_s = 0;         // output layer (head + loss), forward + backward
  double metric_s = 0;         // training metrics after a micro-batch's backward (PlanLayerTimes)
  double metric_bytes = 0;     // what they hold at their most (StageActivations::metric_bytes)
  double boundary_bytes = 0;   // one micro-batch's hidden states: s * b * h * dtype bytes
  double tp_bytes = 0;         // a layer's TP collective volume (two all-reduces)
  double stored_bytes = 0;     // activations a layer keeps for backward
  double full_bytes = 0;       // a layer's activations without recompute (rebuilt in backward)
  // The gradients a layer's backward holds at their most beyond its activations (activations.h
  // layer_backward_transient_bytes; MoE: moe_layer_backward_transient_bytes).
  double backward_transient_bytes = 0;
  double moe_backward_transient_bytes = 0;
  double embedding_bytes = 0;  // what the first stage keeps per micro-batch for the embedding's backward
  double output_bytes = 0;     // the output layer's activations (fp32 logits) of one micro-batch
  int64_t act_bytes = 2;       // bytes per activation / param element
  // MoE layers (sim/cost/moe.h): their own time and activations, and per pass two all-to-alls of
  // `dispatch_bytes` over the EP group (dispatch, combine), each with an all-gather of
  // `etp_gather_bytes` over the expert-TP group when ETP > 1.
  LayerTime moe_layer;
  double moe_stored_bytes = 0;
  double moe_full_bytes = 0;
  double dispatch_bytes = 0;
  double etp_gather_bytes = 0;
  // Layers kept in the training dtype under fp8 (Plan::bf16_layer): their time and activations
  // over an fp8 layer's (PlanLayerTimes, activations.h bf16_layer_extra_bytes).
  LayerTime bf16_extra;
  LayerTime moe_bf16_extra;
  Bf16LayerBytes bf16_bytes;
};

LayerCosts layer_costs(const Job& job);

}  // namespace starfish::schedule

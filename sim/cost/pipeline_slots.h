#pragma once
// The pipeline's pace and bubble from each stage's time per micro-batch. Stages differ when the
// layers are spread unevenly (Plan::stage_layers), when the last one carries the LM head and the
// loss, and by their parameters (gradient accumulation).
//
// 1F1B with stage times t_s = f_s + b_s: a stage k runs its m micro-batches back to back once
// started, except that after its warm-up forwards ((p - k - 1) of them) it waits for the first
// gradient, which needs the later stages' forward and backward of micro-batch 0. So
//   T = max_k [ sum_{s<k} f_s + m t_k + max(0, sum_{s>k} t_s - (p - k - 1) f_k) + sum_{s<k} b_s ]
// (fill through the earlier stages, the stage's own work, its wait, the drain through the
// earlier stages). With equal stages it is (m + p - 1) t, Narayanan et al. 2021 sec. 2.2; the
// event-driven tier gives the same for uneven ones (tests/sim/schedule). The bubble is T - m
// t_max. GPipe gets the same bound; interleaving (v chunks per stage) divides the fill and
// drain by v, as Narayanan's (p - 1) / v.
#include <cstdint>
#include <vector>

#include "sim/spec/model.h"
#include "sim/spec/plan.h"

namespace starfish {

// The virtual-stage forwards stage `stage` (0..p-1) of a p-stage pipeline runs before its first
// backward, with m micro-batches of v virtual stages each: GPipe all m v; 1F1B p - s - 1;
// interleaved (p - s - 1) 2 + (v - 1) p (Megatron-LM's forward_backward_pipelining_with_interleaving,
// num_warmup_microbatches), each at most m v. The one home of the simulator's order
// (pipeline_order.h) and of the activations a stage holds at its peak.
int64_t warmup_forwards(Schedule schedule, int p, int stage, int64_t micro_batches, int v);

// The forwards whose activations a stage holds at once at its most, in micro-batches of its
// layers: the warm-up's and the first steady-state forward's virtual stages, over v.
double peak_in_flight_micro_batches(Schedule schedule, int p, int stage, int64_t micro_batches, int v);

// The micro-batches whose first virtual stage (the embedding's) the first stage holds at once:
// GPipe all m, 1F1B p; interleaved 2p, the warm-up's first round of p and a second before the
// first backward reaches virtual stage 0 (its (v - 1) p-th, after (v - 1) p more forwards). At
// most m.
int64_t first_virtual_stage_in_flight(Schedule schedule, int p, int64_t micro_batches, int v);

struct StageCosts {
  double layer_s = 0;                // one layer's forward + backward + recompute
  double layer_forward_s = 0;        // its forward part
  double tp_forward_per_layer_s = 0; // the TP collectives of a layer's forward
  double output_s = 0;               // the output layer (last stage), forward + backward
  double metric_s = 0;               // the training metrics after its backward (last stage)
  double tp_per_layer_s = 0;         // one layer's exposed TP collectives
  double cp_per_layer_s = 0;         // one layer's exposed context-parallel ring (context_parallel.h)
  double cp_forward_per_layer_s = 0; // its forward part
  double pp_comm_s = 0;              // one micro-batch's pipeline sends of a stage
  double accumulate_s_per_param = 0; // gradient accumulation per parameter of the stage
  double moe_extra_s = 0;            // an MoE layer's time over a dense one's (experts, all-to-alls)
  double moe_forward_extra_s = 0;    // its forward part
  double moe_exchange_s = 0;         // of which its token exchanges (all-to-alls, expert-TP gathers)
  double moe_exchange_forward_s = 0; // their forward part
  double moe_tp_less_s = 0;          // an MoE layer's TP collectives under a dense one's (the mlp
                                     // recompute module reruns a dense MLP's only, SP re-gathers
                                     // a dense MLP's input only), in moe_extra_s
  double window_extra_s = 0;         // a sliding-window layer's time over a full one's (<= 0)
  double window_forward_extra_s = 0; // its forward part
  // A layer kept in the training dtype under fp8 (Plan::bf16_layer): its time over the fp8
  // layer's, dense and MoE (>= 0).
  double bf16_extra_s = 0;
  double bf16_forward_extra_s = 0;
  double moe_bf16_extra_s = 0;
  double moe_bf16_forward_extra_s = 0;
  // The backward parts (recomputation's included) of a layer's TP collectives and CP ring.
  double tp_backward_per_layer_s() const { return tp_per_layer_s - tp_forward_per_layer_s; }
  double cp_backward_per_layer_s() const { return cp_per_layer_s - cp_forward_per_layer_s; }
};

struct StageSlot {
  int stage = 0;
  double layers = 0;
  double compute_s = 0;      // layers, output layer and training metrics
  double accumulate_s = 0;   // from the second micro-batch on
  double tp_comm_s = 0;
  double cp_comm_s = 0;
  double pp_comm_s = 0;
  double forward_s = 0;      // the forward part of the slot (the rest is backward)
  double exchange_s = 0;     // of compute_s, the MoE layers' token exchanges (all-to-alls)
  double slot_s() const { return compute_s + accumulate_s + tp_comm_s + cp_comm_s + pp_comm_s; }
};

struct PipelineSlots {
  StageSlot slowest;
  double bubble_s = 0;  // the fill and drain around the slowest stage's m slots
  // The least backward part of a stage's slot (slot_s - forward_s): in 1F1B's flush the stages'
  // last backwards end that far apart at the least (v virtual stages: that over v).
  double shortest_backward_s = 0;
};

// `stage_params`: parameters one GPU of each stage holds; `micro_batches` per pipeline. `costs`
// are those of a layer that runs the plan's recomputation; under block recomputation
// (Plan::recompute_layers) `kept` are those of a layer that does not (it keeps its activations),
// nullptr otherwise.
PipelineSlots pipeline_slots(const Model& model, const Plan& plan, const std::vector<double>& stage_params,
                             const StageCosts& costs, int64_t micro_batches, const StageCosts* kept = nullptr);

}  // namespace starfish

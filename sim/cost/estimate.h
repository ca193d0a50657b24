#pragma once
// The analytic model of one training iteration: memory per tier and time per component, from
// closed forms and the hwprofile (no event simulation). It is the search's fast first tier and
// the cross-check of the discrete-event simulator.
#include <functional>
#include <string>
#include <vector>

#include "sim/cost/capacity.h"
#include "sim/cost/flops.h"
#include "sim/cost/memory.h"
#include "sim/cost/params.h"
#include "sim/spec/job.h"

namespace starfish {

struct TierUse {
  double params_bytes = 0, grads_bytes = 0, optimizer_bytes = 0, activations_bytes = 0, buffers_bytes = 0;
  double allocator_bytes = 0;  // what the framework's caching allocator reserves beyond the tensors
  double communicator_bytes = 0;  // NCCL's buffers, outside the allocator (GPU only)
  double capacity_bytes = 0;   // usable (after the hwprofile's reserved bytes)
  double total() const {
    return params_bytes + grads_bytes + optimizer_bytes + activations_bytes + buffers_bytes + allocator_bytes +
           communicator_bytes;
  }
  bool fits() const { return total() <= capacity_bytes; }
};

struct TimeBreakdown {
  double compute_s = 0;        // forward + backward + recompute of all micro-batches, slowest stage
  double bubble_s = 0;         // pipeline fill and drain
  double tp_comm_s = 0;        // tensor-parallel collectives (not overlapped)
  double cp_comm_s = 0;        // context-parallel ring sends attention's blocks do not hide
  double pp_comm_s = 0;        // pipeline sends and receives
  double dp_comm_s = 0;        // gradient all-reduce / ZeRO collectives (not overlapped)
  double optimizer_s = 0;      // optimizer step (GPU or CPU Adam), NVMe state traffic
  double offload_s = 0;        // PCIe traffic of offloaded params and grads
  double iteration_s = 0;
};

struct Estimate {
  ParamCount params;
  double params_per_gpu = 0;          // of the most loaded stage
  int peak_stage = 0;                 // the stage with the most GPU memory
  ModelStates::ChunkShares chunk_shares;  // a chunked plan's placement of the most loaded stage
  double model_flops = 0;             // per iteration, no recompute
  double hardware_flops = 0;          // per iteration, with recompute
  int64_t micro_batches = 0;          // per pipeline per iteration
  TierUse gpu;                        // per GPU, most loaded stage
  TierUse cpu;                        // per node
  TierUse nvme;                       // per node
  MemoryVerdict memory;               // check_memory of the three tiers' totals (sim/cost/capacity.h)
  bool fits = false;                  // memory.fits
  std::string why_not;                // empty when it fits: the first tier that overflows and by how much
  TimeBreakdown time;
  double tokens_per_s = 0;
  double tflops_per_gpu = 0;          // hardware FLOP/s per GPU (Megatron's reporting convention)
  double mfu = 0;                     // model FLOP/s over peak
  double bubble_fraction = 0;         // bubble / iteration
};

Estimate estimate(const Job& job);

// One layer's communication on one GPU for one micro-batch as the estimate charges it (beside
// the layer's ops: `estimate --ops`): its TP collectives, an MoE layer's token exchanges
// (all-to-alls and expert-TP gathers; 0 for a dense layer), the context-parallel ring's exposed
// sends, for a dense or an MoE layer of the plan. Backward includes what recomputation repeats
// of the forward's (full: all of it; the mlp module: a dense MLP's TP collectives).
struct LayerCommunication {
  double tp_forward_s = 0, tp_backward_s = 0;
  double exchange_forward_s = 0, exchange_backward_s = 0;
  double cp_forward_s = 0, cp_backward_s = 0;
};
struct PlanLayerCommunication {
  LayerCommunication dense, moe;
};
PlanLayerCommunication layer_communication(const Job& job);

// For a job under full recomputation of every layer that block recomputation could run
// (recompute_layers_problem): the fewest layers of each virtual stage that may recompute with
// the plan still fitting, 1 .. (layers of the largest virtual stage) - 1, or 0 when every one
// must (or the plan does not fit, or is not such a job). Memory only falls as more layers
// recompute, so a bisection over the estimate finds it. The search bisects with its own
// evaluator through `fits(n)` (the plan with recompute_layers = n fits).
int fewest_fitting_recompute_layers(const Model& model, const Plan& plan, const std::function<bool(int)>& fits);
int fewest_fitting_recompute_layers(const Job& job);

// The same for a caller that evaluates many plans of one model (the search): what depends on
// the model alone is given, computed once -- the parameter count, the parameters one GPU of each
// pipeline stage holds (shard_parameters per stage), and the iteration's FLOPs for the plan's
// recompute mode, and for a chunked plan its chunk footprint (plan_chunk_footprint; null for
// a static plan). `plan.dp` must be resolved (as make_job does).
struct EstimateOptions {
  bool memory_only_if_rejected = false;  // a plan that does not fit stops after the memory model
  bool explain = true;                   // fill why_not
};
void estimate_into(const Model& model, const Cluster& cluster, const Training& training, const Plan& plan,
                   const ParamCount& params, const std::vector<double>& stage_params, const IterationFlops& flops,
                   const EstimateOptions& options, const ChunkFootprint* chunks, Estimate& out);

}  // namespace starfish

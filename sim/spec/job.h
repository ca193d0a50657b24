#pragma once
// A complete job: model, cluster, training and plan, checked against one another.
#include <optional>
#include <string>
#include <vector>

#include "sim/spec/hardware.h"
#include "sim/spec/model.h"
#include "sim/spec/plan.h"
#include "sim/spec/training.h"

namespace starfish {

struct Job {
  Model model;
  Cluster cluster;
  Training training;
  Plan plan;  // after validate(): dp is resolved (never 0)

  int dp() const { return plan.dp; }
  int dp_cp() const { return plan.dp_cp(); }  // the ranks that reduce gradients: DP x CP
  int64_t micro_batches() const;  // per pipeline per iteration: global / (micro * dp)

  // Megatron's rank order, the one every part uses (simulator, chunk runtime, executor): TP
  // innermost, then CP, then DP, then PP (megatron/core/parallel_state.py, order "tp-cp-ep-dp-pp";
  // EP folds into the stage's TP x CP x DP ranks, sim/cost/moe.h).
  int global_rank(int tp_rank, int dp_rank, int stage, int cp_rank = 0) const;
  // The global ranks that reduce the gradients of TP rank `tp_rank` in stage `stage`: its
  // data-parallel group with the context-parallel ranks (DP x CP, Plan::dp_cp), by CP rank, then DP rank.
  std::vector<int> dp_group_ranks(int tp_rank, int stage) const;
  // The context-parallel group of TP rank `tp_rank`, DP rank `dp_rank` of `stage`, in ring order.
  std::vector<int> cp_group_ranks(int tp_rank, int dp_rank, int stage) const;
};

// Tensor-parallel groups are consecutive ranks (Megatron's layout), so they stay inside a node
// -- or cover whole nodes -- exactly when TP divides the GPUs per node or is a multiple of them.
// Otherwise some groups straddle two nodes and the data-parallel groups hold different numbers
// of GPUs on different nodes (TP 3 on 8-GPU nodes), which no framework lays out on purpose and
// the simulator's hierarchical collectives do not model: such a plan is refused.
bool tp_aligned_to_nodes(int tp, int gpus_per_node);

// Why a plan's quantized GEMMs (plan.fp8, plan.fp4) cannot run, or an empty `why` when they
// can: the one home of these rules, for make_job and the search's plan space. TransformerEngine's
// kernels under Megatron-core, inside bf16/fp16 mixed precision, on a GPU with the format's peak.
struct QuantizedGemmProblem {
  std::string field;       // the plan field at fault, e.g. "plan.fp4"
  std::string why;         // one line; empty when the GEMMs can run
  bool about_gpu = false;  // the GPU lacks the format (the message should name the hwprofile)
};
QuantizedGemmProblem quantized_gemm_problem(const GpuSpec& gpu, const Training& training, const Plan& plan);

// Why plan.framework cannot hold the model states where plan.offload puts them, or run the
// plan's chunks (plan.chunk_size): the one home of these rules, read off each framework's code,
// for make_job, the plan reader's default framework, the search and the exports. Both strings
// are empty when the framework runs the placement as written.
//  - Megatron (-LM and -core): no chunk runtime; Megatron-LM 2021-22 shards the optimizer
//    states only (its distributed optimizer, ZeRO-1), Megatron-core also grads and params (its
//    FSDP, ZeRO-2/3); params and gradients on the GPU (its DDP
//    allocates the grad buffer on the current device, param_and_grad_buffer.py); the optimizer
//    on the GPU, or in CPU memory under the distributed optimizer (--optimizer-cpu-offload,
//    HybridDeviceOptimizer, which copies the grads to the host for its step).
//  - DeepSpeed: no chunk runtime; offload_param under ZeRO-3 only; offload_optimizer under ZeRO
//    1-3, to NVMe under ZeRO-3 only (ZeRO-Infinity); the gradient partitions live where the
//    optimizer steps (stage_1_and_2.py accumulates them in CPU memory with cpu_offload;
//    stage3.py copies its fp32 grad partitions out with offload_optimizer, and ZeRO-Infinity's
//    optimizer swapper writes them to NVMe with the optimizer states).
//  - FSDP: CPUOffload(offload_params=True) moves params and gradients to the CPU together and
//    the optimizer steps there: all on the GPU or all in CPU memory; no chunks.
//  - Starfish's executor: any tiers through its chunk runtime; a plan without chunks keeps
//    everything on the GPU (one flat store, exec/run.cpp).
struct PlacementProblem {
  std::string field;  // the plan field at fault, e.g. "plan.offload.grads"
  std::string why;    // one line; empty when the framework runs the placement
};
PlacementProblem placement_problem(const Plan& plan);

// Why plan.framework cannot run the plan's pipeline schedule, its ZeRO stage beside a pipeline,
// or its sequence parallelism: DeepSpeed's pipeline engine runs its 1F1B TrainSchedule only
// (runtime/pipe/schedule.py), without interleaving, and refuses ZeRO-2/3 ("ZeRO-2 and ZeRO-3 are
// incompatible with pipeline parallelism", runtime/pipe/engine.py); and under DeepSpeed,
// Megatron's sequence parallelism trains the TP ranks' norms apart: their weights' gradients
// are partial sums over each rank's tokens, which Megatron's optimizer all-reduces over TP
// (allreduce_layernorm_grads) and DeepSpeed's engine, stepping in its place, does not
// (deepspeedai/Megatron-DeepSpeed#170; #223: "the weights of LayerNorm ... are different" across
// TP ranks). Static strings (the search asks per candidate); both null when the framework runs
// it. The one home for make_job, the search and the DeepSpeed export.
struct FrameworkScheduleProblem {
  const char* field = nullptr;
  const char* why = nullptr;
};
FrameworkScheduleProblem framework_schedule_problem(const Plan& plan);

// Why Starfish's executor (starfish-run, exec/run.cpp) cannot run the plan, or null fields when
// it can: the one home of what the executor trains, for make_job (a plan on framework starfish:
// every chunked plan), the search's plan space and starfish-run itself. Its GPT model and its
// chunk runtime are data parallel only, as PatrickStar's (which has no tensor or pipeline
// parallelism): TP, PP and CP 1; its layers recompute whole (full) or not at all
// (exec/trainer.cpp). Static strings: the search asks per candidate.
struct ExecutorProblem {
  const char* field = nullptr;
  const char* why = nullptr;
};
ExecutorProblem executor_problem(const Plan& plan);

// The framework that runs the plan's chunks and offload: `preferred` when it can, else
// Starfish's chunk runtime for a chunked plan, DeepSpeed (ZeRO-Offload / ZeRO-Infinity) or FSDP
// (CPU offload) for an offloaded one; nullopt when none of them can.
std::optional<Framework> placement_framework(const Plan& plan, Framework preferred);

// Why the plan's block recomputation (plan.recompute_layers) cannot run, or "" when it can (or
// the plan has none): Megatron's --recompute-method block, under full recomputation, outside the
// chunk runtime. The one home of the rule, for make_job and the search's plan space.
std::string recompute_layers_problem(const Plan& plan);

// Checks every cross-spec rule and resolves plan.dp; throws SpecError naming the offending
// field's file:line. Rules: TP divides heads, kv_heads and the FFN and is aligned to the nodes
// (tp_aligned_to_nodes); PP * virtual stages divides
// layers; TP * CP * PP * DP equals the cluster's GPUs; CP's load-balanced halves divide the
// sequence and it runs under Megatron-core's fused attention; the global batch divides into micro-batches
// over DP; interleaving needs virtual stages > 1 and micro-batches divisible by PP; offload to
// NVMe needs an NVMe; chunk-runtime plans have no pipeline parallelism and one micro-batch per
// iteration; the dtype is one the GPU supports.
Job make_job(Model model, Cluster cluster, Training training, Plan plan);

// The plan Starfish assumes when none is given: pure data parallelism over every GPU, no ZeRO.
Plan default_plan();

}  // namespace starfish

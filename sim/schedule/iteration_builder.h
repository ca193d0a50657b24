#pragma once
// Builds one training iteration of a Job as a task DAG in the discrete-event engine.
//
// Symmetry reduction: the TP ranks of a stage do identical work, and so do the DP replicas, so
// by default one "lead" GPU per pipeline stage (TP rank 0 of replica 0) carries the compute
// tasks; TP collectives run over the stage's whole TP group, and the DP collectives of every TP
// rank run over their DP groups (so they share NICs and switches as they really do). Where the
// symmetry holds this gives the full cluster's timeline at a fraction of the tasks.
//
// Per stage, the ops of its schedule (pipeline_order.h) are chained in order on the lead's
// compute stream; each op is its layers in order, each layer a compute task followed by its
// TP collective (the layer's two all-reduces, or SP's all-gather/reduce-scatter pairs, of the
// same volume). Forward ops wait for the previous virtual stage's activation (a PP transfer),
// backward ops for the next one's gradient. After a model chunk's last backward its grads are
// reduced over DP (all-reduce, or reduce-scatter with ZeRO >= 1), then the optimizer step runs
// where the optimizer states live (GPU, or CPU with PCIe copies, NVMe reads/writes), and ZeRO
// >= 1 all-gathers the updated params. ZeRO-3 all-gathers a chunk's params before each of its
// ops, and offloaded params are copied in before each op, one op ahead (prefetch).
#include <cstdint>
#include <string>
#include <vector>

#include "sim/chunk/move_log.h"
#include "sim/des/engine.h"
#include "sim/spec/job.h"

namespace starfish::schedule {

struct BuildOptions {
  // Chunk plans: the non-model GPU bytes given to the runtime at every moment, instead of the
  // cost model's activations (-1): what an executor told a fixed value is compared against.
  int64_t fixed_non_model_bytes = -1;
  des::CollectiveAlgo tp_algo = des::CollectiveAlgo::Ring;
  // DP collectives use the hierarchical algorithm when the group has several GPUs on each of
  // several nodes (NCCL's behaviour), else the ring.
  bool hierarchical_dp = true;
};

// Category names used for tasks (and by the report and the trace).
namespace category {
inline constexpr const char* forward = "fwd";
inline constexpr const char* backward = "bwd";
inline constexpr const char* recompute = "recompute";
inline constexpr const char* tp = "tp";
inline constexpr const char* pp = "pp";
inline constexpr const char* dp = "dp";
inline constexpr const char* optimizer = "optimizer";
inline constexpr const char* offload = "offload";
inline constexpr const char* ep = "ep";  // MoE token dispatch and combine
}  // namespace category

// An activation-memory change of a stage's lead GPU at the end of a task.
struct MemoryEvent {
  des::TaskId task = 0;
  double delta_bytes = 0;
};

struct StageInfo {
  int lead_gpu = 0;
  std::vector<int> tp_group;           // global GPU indices
  double model_state_bytes = 0;        // resident on the GPU for the whole iteration
  std::vector<MemoryEvent> memory;     // activations allocated / freed
  des::TaskId first_task = des::kNone; // the stage's first compute task
  des::TaskId last_backward = des::kNone;
};

struct BuiltIteration {
  std::vector<StageInfo> stages;
  des::CategoryId fwd = 0, bwd = 0, recompute = 0, tp = 0, pp = 0, dp = 0, optimizer = 0, offload = 0, ep = 0;
  double cpu_bytes_per_node = 0;       // model states on the host (constant)
  double nvme_bytes_per_node = 0;
  std::vector<Move> moves;             // chunk plans: the runtime's move log, every iteration it ran
};

// Interns the categories above in `engine` and records their ids in `out`.
void intern_categories(des::Engine& engine, BuiltIteration& out);

// Adds the iteration's tasks to `engine` (whose topology is built from job.cluster).
BuiltIteration build_iteration(const Job& job, des::Engine& engine, const BuildOptions& options = {});

// Megatron's rank order: TP innermost, then DP, then PP.
inline int global_rank(const Job& job, int tp_rank, int dp_rank, int stage) {
  return tp_rank + job.plan.tp * (dp_rank + job.dp() * stage);
}

}  // namespace starfish::schedule

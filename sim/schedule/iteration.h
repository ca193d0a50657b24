#pragma once
// One training iteration of a Job as a task DAG in the discrete-event engine: the types every
// iteration builder fills and simulate() reads, and the one selector that picks the builder for
// a plan's placement (as Megatron-core's get_forward_backward_func picks a schedule behind one
// signature). This header is the seam's leaf: the builders include it, never each other.
//
// The builders (one per placement of the model states):
//   static_iteration.h   states resident where the plan puts them (GPU, or CPU/NVMe with
//                        copies), any TP x PP x DP x EP, the pipeline schedules (GPipe, 1F1B,
//                        interleaved), ZeRO 0-3 as DeepSpeed/Megatron/FSDP run them;
//   chunked_iteration.h  the chunk runtime (PatrickStar-style chunks that move between tiers),
//                        walked through the simulator's Backend: every move and ZeRO
//                        collective it decides becomes a task.
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

// Over PCIe without NVLink every group of one shape (the EP groups of a stage's expert-TP ranks,
// the stage's senders to the next) moves its bytes at once, but a builder simulates only the lead's:
// its bytes are scaled so the PCIe switch uplink it crosses carries the others' crossings too,
// the analytic tier's rate (Cluster::pcie_uplink_sharers; a ring's and an all-to-all's time
// both follow the uplink's load then). 1 over NVLink, and for groups or pairs spanning nodes
// (their NICs' sharing is the builders' nic_sharers).
double lead_group_pcie_scale(const Cluster& cluster, const std::vector<int>& ranks);
// A send from GPU `from` to GPU `to` beside `senders` GPUs of its stage sending alike: those
// behind `from`'s switch share its uplink when the pair crosses it (link_for_send's rule).
double lead_send_pcie_scale(const Cluster& cluster, int from, int to, int senders);

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
inline constexpr const char* cp = "cp";  // context parallelism's ring sends of keys and values
}  // namespace category

// An activation-memory change of a stage's lead GPU at the end of a task, and the bytes the
// task holds beyond the level while it runs (a backward's gradients), which count toward the
// peak but not the level after it.
struct MemoryEvent {
  des::TaskId task = 0;
  double delta_bytes = 0;
  double transient_bytes = 0;
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
  des::CategoryId fwd = 0, bwd = 0, recompute = 0, tp = 0, pp = 0, dp = 0, optimizer = 0, offload = 0, ep = 0, cp = 0;
  double cpu_bytes_per_node = 0;       // model states on the host (constant)
  double nvme_bytes_per_node = 0;
  std::vector<Move> moves;             // chunk plans: the runtime's move log, every iteration it ran
};

// Interns the categories above in `engine` and records their ids in `out`.
void intern_categories(des::Engine& engine, BuiltIteration& out);

// Every builder has this signature: it adds one iteration's tasks to `engine` (whose topology is
// built from job.cluster) and says where they are.
using IterationBuilder = BuiltIteration (*)(const Job& job, des::Engine& engine, const BuildOptions& options);

// The builder for `plan`'s placement: the chunked one for a chunk-runtime plan, else the static.
IterationBuilder iteration_builder_for(const Plan& plan);

// iteration_builder_for(job.plan)(job, engine, options).
BuiltIteration build_iteration(const Job& job, des::Engine& engine, const BuildOptions& options = {});

}  // namespace starfish::schedule

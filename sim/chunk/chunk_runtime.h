#pragma once
// The chunk runtime: decides every move of chunk payloads between GPU, CPU and NVMe and every
// ZeRO collective, for one rank, and has a Backend carry them out. Callers (the iteration
// driver, on either backend) walk an iteration as a sequence of moments:
//   begin_iteration()
//   per moment:  enter_moment(signature, non_model_bytes)
//                access(tensors) ... compute ... release(tensors, HOLD / HOLD_AFTER_FWD / HOLD_AFTER_BWD)
//                (optimizer moments: begin_optimizer(chunk) ... step ... end_optimizer(chunk))
//                end_moment()
//   end_iteration()
// Iteration 0 is the warm-up: chunks and optimizer states start on the CPU (NVMe when it is
// full), eviction is LRU, nothing is prefetched, and the MemoryTracer records the moments.
// After it the optimizer states are placed (GPU margin, else CPU, else NVMe) and later
// iterations use the trace: farthest-next-use eviction, pre-emptive eviction before a moment
// whose budget would be exceeded, and prefetch of the next moment's chunks on the copy queue.
// All decisions depend only on the layout, the options and the moments' non-model memory, so
// two backends given the same inputs produce the same move log.
#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "sim/chunk/backend.h"
#include "sim/cost/chunk_layout.h"
#include "sim/chunk/eviction_policy.h"
#include "sim/chunk/memory_tracer.h"
#include "sim/chunk/move_log.h"
#include "sim/chunk/placement.h"
#include "sim/chunk/tensor_state.h"
#include "sim/chunk/zero_groups.h"

namespace starfish {

struct RuntimeOptions {
  MemoryBudget budget;
  EvictionKind eviction = EvictionKind::farthest_next_use;
  bool prefetch = true;
  ZeroMode zero = ZeroMode::replicated;
  std::vector<int> dp_ranks = {0};  // the data-parallel group's global ranks
  int dp_index = 0;                 // this rank's position in dp_ranks
  bool record_moves = true;         // keep the move log (the search may only need the counters)
};

// What an optimizer step of one param chunk works on, all on `tier` (GPU or CPU).
struct OptimizerWork {
  int param_chunk = 0;
  Tier tier = Tier::cpu;
  Buffer param;     // fp16/bf16 (mixed: holds the grads until the step writes new params) or fp32
  Buffer grad;      // == param in mixed precision
  Buffer master;    // invalid without mixed precision
  Buffer momentum;  // invalid for SGD
  Buffer variance;
};

struct MomentTierBytes {
  int64_t gpu = 0, cpu = 0, nvme = 0;
};

class ChunkRuntime {
 public:
  // Throws SpecError when the GPU budget cannot hold two of the largest chunks (naming the
  // minimum), or the kept chunks do not fit CPU + NVMe.
  ChunkRuntime(const ChunkLayout& layout, RuntimeOptions options, Backend& backend);
  ~ChunkRuntime();
  ChunkRuntime(const ChunkRuntime&) = delete;
  ChunkRuntime& operator=(const ChunkRuntime&) = delete;

  void begin_iteration();
  // Starts the next moment; `non_model_bytes` is the GPU memory the moment needs besides chunks.
  Moment enter_moment(const MomentSignature& signature, int64_t non_model_bytes);
  // An executor that measures its peak after the moment raises the trace with it.
  void report_non_model_peak(int64_t non_model_bytes);
  // Makes the tensors' chunks (and, in backward, their grad chunks) present on the GPU,
  // gathering ZeRO groups as needed; tensors become COMPUTE. Throws SpecError naming the
  // minimum GPU memory when the moment cannot fit.
  void access(const std::vector<int>& tensors);
  // Tensors leave COMPUTE for `to`; ZeRO drops remote copies after their last forward use and
  // reduces grads after their last backward use.
  void release(const std::vector<int>& tensors, TensorState to);
  OptimizerWork begin_optimizer(int param_chunk);
  void end_optimizer(int param_chunk);
  void end_moment();  // pre-emptive eviction and prefetch for the next moment
  void end_iteration();

  const ChunkLayout& layout() const { return *layout_; }
  const ZeroGroups& zero() const { return zero_; }
  const MemoryTracer& tracer() const { return tracer_; }
  const Placement& placement() const { return placement_; }  // valid after the warm-up
  int iteration() const { return iteration_; }
  Moment moment() const { return moment_; }
  // Param chunks whose optimizer step this rank runs, in order.
  const std::vector<int>& optimizer_chunks() const { return kept_; }

  // Where things are: the buffer holding a chunk (invalid when RELEASED) and where a tensor
  // lies in its param chunk (the executor makes its views from these).
  Buffer buffer(int chunk) const { return slot_[chunk].buffer; }
  const TensorPlace& where(int tensor) const { return layout_->place(tensor); }
  bool on(int chunk, Tier t) const { return slot_[chunk].buffer.valid() && slot_[chunk].buffer.tier == t; }
  ChunkState chunk_state(int param_chunk) const;
  TensorState tensor_state(int tensor) const { return states_.state(tensor); }

  int64_t in_use(Tier t) const { return used_[static_cast<int>(t)]; }
  const std::vector<MomentTierBytes>& moment_peaks() const { return peaks_; }  // per moment, last iteration
  const std::vector<Move>& moves() const { return moves_; }
  int64_t moved_bytes(MoveReason r) const { return reason_bytes_[static_cast<int>(r)]; }
  int64_t moves_decided() const { return moves_decided_; }
  // GPU bytes the busiest moment needs (its chunks + non-model); valid after the warm-up.
  int64_t minimum_gpu_bytes() const;

 private:
  struct Slot {
    Buffer buffer;
    Completion pending;
    bool dirty = false;  // remote ZeRO chunk holding grads (cannot be dropped)
    int pins = 0;        // needed by the current moment
  };

  int rank() const;
  bool is_state(int chunk) const { return layout_->chunk(chunk).kind != ChunkKind::param && layout_->chunk(chunk).kind != ChunkKind::grad; }
  int64_t bytes(int chunk) const { return layout_->chunk(chunk).bytes(); }
  int64_t gpu_budget(Moment t) const;
  void log(int chunk, const char* op, Tier from, Tier to, int64_t bytes, MoveReason reason);
  void allocate(int chunk, Tier tier);
  void drop(int chunk);
  void move(int chunk, Tier to, MoveReason reason, Queue queue);
  Tier spill_tier(int chunk) const;  // CPU if it has room, else NVMe; throws when neither
  void make_room(int64_t need, Moment budget_moment, MoveReason reason, Queue queue, bool for_access);
  void bring_to_gpu(int chunk, MoveReason reason);
  void gather(int param_chunk);
  void reduce(int param_chunk);
  void pin(int chunk);
  [[noreturn]] void too_small(int64_t need) const;
  std::vector<int> gpu_need(Moment t) const;  // chunks moment t needs on the GPU (from the trace)
  void record_peak();
  void place_states_after_warmup();

  const ChunkLayout* layout_;
  RuntimeOptions options_;
  Backend* backend_;
  ZeroGroups zero_;
  TensorStates states_;
  MemoryTracer tracer_;
  std::unique_ptr<EvictionPolicy> policy_;
  Placement placement_;
  std::vector<Slot> slot_;
  std::vector<char> gathered_;  // per group (sharded) or per param chunk (memory-saving)
  std::vector<int> kept_;
  std::vector<int> pinned_;     // chunks pinned this moment
  std::vector<int> on_gpu_;     // chunks with a GPU buffer (any order), for eviction scans
  std::vector<int> gpu_pos_;    // index in on_gpu_, -1 when not there
  void track(int chunk, bool on_gpu);
  std::array<int64_t, 3> used_{};
  std::array<int64_t, 8> reason_bytes_{};
  std::vector<MomentTierBytes> peaks_;
  std::vector<Move> moves_;
  int64_t moves_decided_ = 0;
  int iteration_ = -1;
  Moment moment_ = -1;
  bool in_iteration_ = false;
  bool placed_ = false;
};

}  // namespace starfish

#pragma once
// The one interface between the chunk runtime and the world. Every policy decision (what moves,
// when, where, why) is made above this line by sim/chunk, so the simulator (DES resources and
// clocks) and the executor (torch tensors, CUDA streams, c10d) make the same decisions for the
// same plan and their move logs can be diffed. A Backend only does what it is told:
//   allocate / release  raw bytes on one memory tier of this rank,
//   copy                whole or partial buffer to buffer (H2D, D2H, CPU<->NVMe, ...),
//   collective          all-gather / reduce-scatter / broadcast / reduce / all-reduce over a group,
//   wait                order the caller (the compute stream) after a completion,
//   now_s               the backend's clock (simulated or wall seconds), for traces only.
// Compute (forward, backward, the optimizer step) is not here: the iteration driver hands it to
// the caller's StepHooks (sim/chunk/iteration_driver.h).
//
// This header is kept stable: the executor implements it with torch tensors.
#include <cstdint>
#include <string>
#include <vector>

#include "sim/spec/collective_kind.h"
#include "sim/spec/dtype.h"
#include "sim/spec/plan.h"  // Tier { gpu, cpu, nvme }

namespace starfish {

// An operator boundary within one training iteration, counted from 0 by the runtime. The same
// plan gives the same moment sequence on every backend (the MemoryTracer checks it).
using Moment = int64_t;

// Raw bytes on one tier of this rank. Ids are unique per backend and never reused, so the
// executor can map id -> flat tensor (or NVMe file extent) and the runtime can tell a user which
// buffer holds a chunk (ChunkRuntime::buffer) and where a tensor lies in it (ChunkLayout).
struct Buffer {
  uint64_t id = 0;  // 0 = no buffer
  Tier tier = Tier::gpu;
  int64_t bytes = 0;
  bool valid() const { return id != 0; }
  bool operator==(const Buffer&) const = default;
};

// A handle to work a backend has queued. id 0 = already complete (waiting on it is a no-op).
struct Completion {
  uint64_t id = 0;
  bool operator==(const Completion&) const = default;
};

// Where a move is ordered: on the compute stream (the caller needs it now: an access) or on a
// separate copy queue that overlaps compute (prefetch, write-back of evicted chunks).
enum class Queue { compute, copy };

// Why the runtime moves bytes. Part of the move log; the simulator may also use it to label tasks.
enum class MoveReason {
  access,        // a chunk needed at this moment was not on the GPU
  prefetch,      // brought ahead of its next use on the copy queue
  eviction,      // made room for a moment whose budget would be exceeded
  optimizer,     // brought to where the optimizer step runs, or written back after it
  zero_gather,   // ZeRO-DP: all-gather (or broadcast) of a chunk group before use
  zero_reduce,   // ZeRO-DP: reduce-scatter (or reduce) of a group's grads after last backward use
  placement,     // initial placement of a chunk (first allocation on its home tier)
};

// Context of a move, passed to the backend with each copy and collective.
struct MoveTag {
  Moment moment = 0;
  int chunk = -1;  // ChunkLayout chunk id; -1 when a move spans several (a collective's first)
  MoveReason reason = MoveReason::access;
  Queue queue = Queue::compute;
};

// CollectiveKind (all_gather, reduce_scatter, broadcast, reduce, all_reduce, ...) is the one enum of
// sim/spec/collective_kind.h, shared with the cost model and the simulator.

// A set of ranks working together. `id` is stable for the run (the executor caches its c10d
// group by it); `ranks` are global ranks in group order; `index` is this rank's position in
// `ranks`; `root` is the group index of the root for broadcast and reduce (else -1).
struct Group {
  int id = 0;
  std::vector<int> ranks;
  int index = 0;
  int root = -1;
  int size() const { return static_cast<int>(ranks.size()); }
  bool operator==(const Group&) const = default;
};

// Buffers of a collective, all of the same bytes and element type `dtype` (reductions sum):
//   all_gather:     inputs = {mine}; outputs = size() buffers, outputs[j] receives rank j's input
//                   (outputs[index] may be the input itself)
//   reduce_scatter: inputs = size() buffers; outputs = {mine}, which receives the sum over ranks
//                   of their inputs[index] (it may alias inputs[index])
//   broadcast:      inputs = outputs = {buf}; the root's buf is sent to every rank's buf
//   reduce:         inputs = outputs = {buf}; the root's buf receives the sum of every rank's buf
//   all_reduce:     inputs = outputs = {buf}; every rank's buf receives the sum
class Backend {
 public:
  virtual ~Backend() = default;

  // Throws std::runtime_error when the tier cannot hold `bytes` more (the runtime keeps within
  // its budgets, so this signals a real out-of-memory, not a policy choice).
  virtual Buffer allocate(Tier tier, int64_t bytes) = 0;
  // The runtime never uses `buffer` again. Work already queued on it (e.g. the copy that
  // evicted it) may still be running: the backend frees the memory once that work is done.
  virtual void release(const Buffer& buffer) = 0;
  // Copies the first `bytes` of src into the first `bytes` of dst.
  virtual Completion copy(const Buffer& src, const Buffer& dst, int64_t bytes, const MoveTag& tag) = 0;
  virtual Completion collective(CollectiveKind kind, const Group& group, const std::vector<Buffer>& inputs,
                                const std::vector<Buffer>& outputs, DType dtype, const MoveTag& tag) = 0;
  // Orders the caller (the compute stream) after `done`.
  virtual void wait(Completion done) = 0;
  virtual double now_s() const = 0;
};

const char* to_string(Queue q);
const char* to_string(MoveReason r);
bool parse_move_reason(const std::string& text, MoveReason& out);  // false when unknown

}  // namespace starfish

#pragma once
// The warm-up iteration records, per moment (operator boundary), what the moment is, the
// non-model (activation, workspace) GPU memory it needs and which chunks it accesses. Later
// iterations must replay the same moment sequence: farthest-next-use eviction, prefetch and
// placement all read the future from this trace, so a divergence throws instead of silently
// deciding on a stale future.
#include <cstdint>
#include <string>
#include <vector>

#include "sim/chunk/backend.h"

namespace starfish {

enum class Phase { forward, backward, optimizer };
const char* to_string(Phase p);

// What a moment is: a forward or backward step of one layer (-1 = embeddings, L = final norm
// and head), or the optimizer step of one param chunk.
struct MomentSignature {
  Phase phase = Phase::forward;
  int index = 0;
  std::string to_string() const;  // "forward layer 3", "optimizer chunk 7"
  bool operator==(const MomentSignature&) const = default;
};

struct TracedMoment {
  MomentSignature signature;
  int64_t non_model_bytes = 0;  // peak non-model GPU memory during the moment
  std::vector<int> chunks;      // chunks accessed, in order of first access, no repeats
};

class MemoryTracer {
 public:
  explicit MemoryTracer(int chunk_count) : uses_(chunk_count) {}

  bool warm() const { return warm_; }   // a complete iteration has been recorded
  int64_t moments() const { return static_cast<int64_t>(moments_.size()); }
  const TracedMoment& moment(Moment t) const { return moments_[t]; }

  // Warm-up: appends moment `t` (must be the next one). Later: checks it against the record and
  // throws std::logic_error naming both when the sequence differs.
  void enter(Moment t, const MomentSignature& signature, int64_t non_model_bytes, int iteration);
  // Raises the recorded non-model peak of moment t (an executor measures it after the fact).
  void report_peak(Moment t, int64_t non_model_bytes);
  // Records (warm-up) or checks (later) that chunk c is accessed at moment t.
  void access(Moment t, int chunk, int iteration);
  // Ends an iteration of `moments` moments: completes the warm-up, or checks the length.
  void end_iteration(Moment moments, int iteration);

  int64_t non_model_bytes(Moment t) const { return moments_[t].non_model_bytes; }
  int64_t peak_non_model_bytes() const;
  // The next moment after t at which chunk c is accessed, wrapping into the next iteration
  // (moment + moments()); kNever when it is never accessed.
  static constexpr Moment kNever = INT64_MAX;
  Moment next_use(int chunk, Moment t) const;
  const std::vector<Moment>& uses(int chunk) const { return uses_[chunk]; }

 private:
  bool warm_ = false;
  std::vector<TracedMoment> moments_;
  std::vector<std::vector<Moment>> uses_;  // per chunk, ascending
  std::vector<size_t> checked_;            // later iterations: accesses seen at the current moment
};

}  // namespace starfish

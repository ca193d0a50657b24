#pragma once
// Which GPU chunk to move out when a moment needs room. Farthest next use (Belady, from the
// warm-up trace) is the default; least recently used is the baseline it must not lose to.
// Before the trace exists (the warm-up iteration) farthest-next-use falls back to LRU.
#include <cstdint>
#include <memory>
#include <vector>

#include "sim/chunk/memory_tracer.h"

namespace starfish {

enum class EvictionKind { farthest_next_use, lru };
const char* to_string(EvictionKind k);

class EvictionPolicy {
 public:
  virtual ~EvictionPolicy() = default;
  // Notes that chunk c was accessed (LRU recency).
  void touched(int chunk) { last_use_[chunk] = ++clock_; }
  // The chunk among `candidates` (non-empty) to evict before moment t. Ties go to the lower id.
  virtual int choose(const std::vector<int>& candidates, Moment t) const = 0;

 protected:
  explicit EvictionPolicy(int chunk_count) : last_use_(chunk_count, 0) {}
  int lru(const std::vector<int>& candidates) const;
  std::vector<int64_t> last_use_;
  int64_t clock_ = 0;
};

std::unique_ptr<EvictionPolicy> make_eviction_policy(EvictionKind kind, const MemoryTracer& tracer, int chunk_count);

}  // namespace starfish

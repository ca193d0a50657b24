#include "sim/chunk/eviction_policy.h"

namespace starfish {
namespace {

class Lru final : public EvictionPolicy {
 public:
  explicit Lru(int n) : EvictionPolicy(n) {}
  int choose(const std::vector<int>& candidates, Moment) const override { return lru(candidates); }
};

class FarthestNextUse final : public EvictionPolicy {
 public:
  FarthestNextUse(const MemoryTracer& tracer, int n) : EvictionPolicy(n), tracer_(&tracer) {}
  int choose(const std::vector<int>& candidates, Moment t) const override {
    if (!tracer_->warm()) return lru(candidates);
    int best = candidates.front();
    Moment far = -1;
    for (int c : candidates) {
      const Moment next = tracer_->next_use(c, t);
      if (next > far || (next == far && c < best)) {
        far = next;
        best = c;
      }
    }
    return best;
  }

 private:
  const MemoryTracer* tracer_;
};

}  // namespace

const char* to_string(EvictionKind k) { return k == EvictionKind::lru ? "lru" : "farthest-next-use"; }

int EvictionPolicy::lru(const std::vector<int>& candidates) const {
  int best = candidates.front();
  for (int c : candidates)
    if (last_use_[c] < last_use_[best] || (last_use_[c] == last_use_[best] && c < best)) best = c;
  return best;
}

std::unique_ptr<EvictionPolicy> make_eviction_policy(EvictionKind kind, const MemoryTracer& tracer, int n) {
  if (kind == EvictionKind::lru) return std::make_unique<Lru>(n);
  return std::make_unique<FarthestNextUse>(tracer, n);
}

}  // namespace starfish

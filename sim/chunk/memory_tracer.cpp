#include "sim/chunk/memory_tracer.h"

#include <algorithm>
#include <stdexcept>

namespace starfish {

const char* to_string(Phase p) {
  switch (p) {
    case Phase::forward: return "forward";
    case Phase::backward: return "backward";
    case Phase::optimizer: return "optimizer";
  }
  return "?";
}

std::string MomentSignature::to_string() const {
  return std::string(starfish::to_string(phase)) + (phase == Phase::optimizer ? " chunk " : " layer ") +
         std::to_string(index);
}

void MemoryTracer::enter(Moment t, const MomentSignature& sig, int64_t non_model_bytes, int iteration) {
  if (!warm_) {
    if (t != moments()) throw std::logic_error("memory tracer: moment " + std::to_string(t) + " entered out of order");
    moments_.push_back(TracedMoment{sig, non_model_bytes, {}});
    return;
  }
  const std::string where = "iteration " + std::to_string(iteration) + " moment " + std::to_string(t);
  if (t >= moments())
    throw std::logic_error("memory tracer: moment sequence differs from the warm-up: " + where + " is '" +
                           sig.to_string() + "' but the warm-up iteration had only " + std::to_string(moments()) +
                           " moments");
  if (!(moments_[t].signature == sig))
    throw std::logic_error("memory tracer: moment sequence differs from the warm-up: " + where + " is '" +
                           sig.to_string() + "' but the warm-up recorded '" + moments_[t].signature.to_string() + "'");
  if (t > 0 && checked_[t - 1] != moments_[t - 1].chunks.size())
    throw std::logic_error("memory tracer: iteration " + std::to_string(iteration) + " moment " + std::to_string(t - 1) +
                           " ('" + moments_[t - 1].signature.to_string() + "') accessed " +
                           std::to_string(checked_[t - 1]) + " chunks but the warm-up recorded " +
                           std::to_string(moments_[t - 1].chunks.size()));
  checked_[t] = 0;
  // Later iterations keep the warm-up's budget unless the caller sees more memory now.
  moments_[t].non_model_bytes = std::max(moments_[t].non_model_bytes, non_model_bytes);
}

void MemoryTracer::report_peak(Moment t, int64_t bytes) {
  moments_[t].non_model_bytes = std::max(moments_[t].non_model_bytes, bytes);
}

void MemoryTracer::access(Moment t, int chunk, int iteration) {
  auto& chunks = moments_[t].chunks;
  if (!warm_) {
    if (std::find(chunks.begin(), chunks.end(), chunk) == chunks.end()) {
      chunks.push_back(chunk);
      uses_[chunk].push_back(t);
    }
    return;
  }
  const auto it = std::find(chunks.begin(), chunks.end(), chunk);
  if (it == chunks.end())
    throw std::logic_error("memory tracer: iteration " + std::to_string(iteration) + " moment " + std::to_string(t) +
                           " ('" + moments_[t].signature.to_string() + "') accesses chunk " + std::to_string(chunk) +
                           ", which the warm-up did not record there");
  // Count each recorded chunk once.
  if (static_cast<size_t>(it - chunks.begin()) >= checked_[t]) {
    if (static_cast<size_t>(it - chunks.begin()) != checked_[t])
      throw std::logic_error("memory tracer: iteration " + std::to_string(iteration) + " moment " +
                             std::to_string(t) + " accesses chunk " + std::to_string(chunk) +
                             " out of the warm-up's order");
    ++checked_[t];
  }
}

void MemoryTracer::end_iteration(Moment n, int iteration) {
  if (!warm_) {
    warm_ = true;
    checked_.assign(moments_.size(), 0);
    return;
  }
  if (n != moments() || (n > 0 && checked_[n - 1] != moments_[n - 1].chunks.size()))
    throw std::logic_error("memory tracer: iteration " + std::to_string(iteration) + " ended after " +
                           std::to_string(n) + " moments but the warm-up had " + std::to_string(moments()) +
                           " (or its last moment accessed other chunks)");
}

int64_t MemoryTracer::peak_non_model_bytes() const {
  int64_t p = 0;
  for (const auto& m : moments_) p = std::max(p, m.non_model_bytes);
  return p;
}

Moment MemoryTracer::next_use(int chunk, Moment t) const {
  const auto& u = uses_[chunk];
  if (u.empty()) return kNever;
  const auto it = std::upper_bound(u.begin(), u.end(), t);
  return it != u.end() ? *it : u.front() + moments();
}

}  // namespace starfish

#include "sim/chunk/reference_backend.h"

#include <stdexcept>
#include <string>

namespace starfish {

ReferenceBackend::ReferenceBackend(int64_t gpu, int64_t cpu, int64_t nvme) : capacity_{gpu, cpu, nvme} {}

Buffer ReferenceBackend::allocate(Tier tier, int64_t bytes) {
  const int i = idx(tier);
  if (bytes <= 0) throw std::runtime_error("reference backend: allocation of " + std::to_string(bytes) + " bytes");
  if (capacity_[i] > 0 && in_use_[i] + bytes > capacity_[i])
    throw std::runtime_error(std::string("reference backend: out of ") + to_string(tier) + " memory: " +
                             std::to_string(in_use_[i]) + " + " + std::to_string(bytes) + " bytes > capacity " +
                             std::to_string(capacity_[i]));
  Buffer b{++next_id_, tier, bytes};
  live_.emplace(b.id, b);
  in_use_[i] += bytes;
  if (in_use_[i] > peak_[i]) peak_[i] = in_use_[i];
  timeline_.push_back({static_cast<int64_t>(++clock_), tier, in_use_[i]});
  return b;
}

void ReferenceBackend::release(const Buffer& b) {
  auto it = live_.find(b.id);
  if (it == live_.end()) throw std::logic_error("reference backend: release of unknown buffer " + std::to_string(b.id));
  in_use_[idx(it->second.tier)] -= it->second.bytes;
  timeline_.push_back({static_cast<int64_t>(++clock_), it->second.tier, in_use_[idx(it->second.tier)]});
  live_.erase(it);
}

Completion ReferenceBackend::copy(const Buffer& src, const Buffer& dst, int64_t bytes, const MoveTag& tag) {
  if (!live_.count(src.id) || !live_.count(dst.id))
    throw std::logic_error("reference backend: copy between buffers that are not live");
  if (bytes > src.bytes || bytes > dst.bytes) throw std::logic_error("reference backend: copy larger than its buffers");
  copied_[idx(src.tier)][idx(dst.tier)] += bytes;
  by_reason_[static_cast<int>(tag.reason)] += bytes;
  return next();
}

int64_t ReferenceBackend::collective_bytes(CollectiveKind kind, const Group& g, const std::vector<Buffer>& in,
                                           const std::vector<Buffer>& out) {
  const int64_t w = g.size();
  int64_t total = 0;
  switch (kind) {
    case CollectiveKind::all_gather:
      for (const Buffer& b : out) total += b.bytes;
      return total * (w - 1) / w;
    case CollectiveKind::reduce_scatter:
      for (const Buffer& b : in) total += b.bytes;
      return total * (w - 1) / w;
    case CollectiveKind::all_reduce: return 2 * in.front().bytes * (w - 1) / w;
    case CollectiveKind::broadcast:
    case CollectiveKind::reduce: return g.index == g.root ? 0 : in.front().bytes;
    case CollectiveKind::all_to_all:
    case CollectiveKind::send_recv: break;
  }
  throw std::logic_error(std::string("reference backend: the chunk runtime issues no ") + to_string(kind));
}

Completion ReferenceBackend::collective(CollectiveKind kind, const Group& g, const std::vector<Buffer>& in,
                                        const std::vector<Buffer>& out, DType, const MoveTag& tag) {
  const size_t w = g.ranks.size();
  if (g.index < 0 || g.index >= g.size()) throw std::logic_error("reference backend: rank index outside its group");
  const bool shape_ok = kind == CollectiveKind::all_gather       ? in.size() == 1 && out.size() == w
                        : kind == CollectiveKind::reduce_scatter ? in.size() == w && out.size() == 1
                                                                 : in.size() == 1 && out.size() == 1;
  if (!shape_ok) throw std::logic_error(std::string("reference backend: bad buffer counts for ") + to_string(kind));
  for (const auto* list : {&in, &out})
    for (const Buffer& b : *list) {
      if (!live_.count(b.id)) throw std::logic_error("reference backend: collective on a buffer that is not live");
      if (b.bytes != in.front().bytes) throw std::logic_error("reference backend: collective buffers differ in size");
    }
  const int64_t bytes = collective_bytes(kind, g, in, out);
  collective_[static_cast<int>(kind)] += bytes;
  by_reason_[static_cast<int>(tag.reason)] += bytes;
  return next();
}

void ReferenceBackend::wait(Completion done) {
  if (done.id > clock_) throw std::logic_error("reference backend: wait on a completion it never issued");
  ++waits_;
}

}  // namespace starfish

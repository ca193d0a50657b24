#pragma once
// A Backend that moves no data and only counts: bytes in use per tier (now, peak, and a
// timeline), bytes copied per direction, collective traffic per kind, and every operation with
// its moment and reason. It is the chunk runtime's test oracle and the fastest backend for a
// search that only needs volumes. Its clock is logical: each operation advances it by one.
//
// Collective traffic is this rank's bytes in one direction under ring algorithms:
//   all-gather     received (W-1)/W of the gathered bytes     reduce-scatter  sent (W-1)/W of its input
//   all-reduce     sent 2(W-1)/W of the buffer                 broadcast       received the buffer (non-root)
//   reduce         sent the buffer (non-root)
#include <array>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "sim/chunk/backend.h"

namespace starfish {

class ReferenceBackend final : public Backend {
 public:
  // Capacities per tier in bytes; allocate throws beyond them (0 = unlimited).
  explicit ReferenceBackend(int64_t gpu_bytes = 0, int64_t cpu_bytes = 0, int64_t nvme_bytes = 0);

  Buffer allocate(Tier tier, int64_t bytes) override;
  void release(const Buffer& buffer) override;
  Completion copy(const Buffer& src, const Buffer& dst, int64_t bytes, const MoveTag& tag) override;
  Completion collective(CollectiveKind kind, const Group& group, const std::vector<Buffer>& inputs,
                        const std::vector<Buffer>& outputs, DType dtype, const MoveTag& tag) override;
  void wait(Completion done) override;
  double now_s() const override { return static_cast<double>(clock_); }

  static int64_t collective_bytes(CollectiveKind kind, const Group& group, const std::vector<Buffer>& inputs,
                                  const std::vector<Buffer>& outputs);

  int64_t in_use(Tier t) const { return in_use_[idx(t)]; }
  int64_t peak(Tier t) const { return peak_[idx(t)]; }
  int64_t copied(Tier from, Tier to) const { return copied_[idx(from)][idx(to)]; }
  int64_t collective_total(CollectiveKind k) const { return collective_[static_cast<int>(k)]; }
  int64_t bytes_for(MoveReason r) const { return by_reason_[static_cast<int>(r)]; }
  int64_t live_buffers() const { return static_cast<int64_t>(live_.size()); }
  int64_t waits() const { return waits_; }

  struct Sample {
    int64_t clock;
    Tier tier;
    int64_t in_use_bytes;
  };
  const std::vector<Sample>& timeline() const { return timeline_; }

 private:
  static int idx(Tier t) { return static_cast<int>(t); }
  Completion next() { return Completion{++clock_}; }
  std::array<int64_t, 3> capacity_{}, in_use_{}, peak_{};
  std::array<std::array<int64_t, 3>, 3> copied_{};
  std::array<int64_t, 7> collective_{};  // by CollectiveKind
  std::array<int64_t, 8> by_reason_{};
  std::unordered_map<uint64_t, Buffer> live_;
  std::vector<Sample> timeline_;
  uint64_t next_id_ = 0;
  uint64_t clock_ = 0;
  int64_t waits_ = 0;
};

}  // namespace starfish

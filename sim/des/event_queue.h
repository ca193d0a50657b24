#pragma once
// The event queue: a 4-ary min-heap on (time, sequence number). The sequence number is the
// order of insertion, so events at one time are handled in the order they were scheduled and a
// run is reproducible. Events are 24-byte values (the kind rides in the low bits of the
// sequence key); a 4-ary heap halves the levels of a binary one, and its four children share a
// cache line or two. Times are never negative, so their IEEE bits order like the times, and
// (time bits, key) compares as one 128-bit integer, without branches. The storage is reused
// between runs.
#include <bit>
#include <cstdint>
#include <vector>

namespace starfish::des {

enum class EventKind : uint8_t {
  TaskEnd,    // a compute or delay task's duration has elapsed (target = task)
  FlowTxEnd,  // a flow's last byte has been sent (target = flow, version must match)
  Delivered,  // a flow's latency has passed after its last byte (target = task)
};

struct Event {
  uint64_t key = 0;        // sequence << 2 | kind (low word: compared second)
  uint64_t time_bits = 0;  // the time's IEEE bits (high word: compared first)
  uint32_t target = 0;
  uint32_t version = 0;
  double time_s() const { return std::bit_cast<double>(time_bits); }
  EventKind kind() const { return static_cast<EventKind>(key & 3); }
};

class EventQueue {
 public:
  void push(double time_s, EventKind kind, uint32_t target, uint32_t version = 0) {
    // + 0.0 turns a -0.0 into +0.0, whose bits order correctly.
    const Event e{(next_seq_++ << 2) | static_cast<uint64_t>(kind), std::bit_cast<uint64_t>(time_s + 0.0), target,
                  version};
    size_t i = heap_.size();
    heap_.push_back(e);
    while (i > 0) {
      const size_t parent = (i - 1) / 4;
      if (!before(e, heap_[parent])) break;
      heap_[i] = heap_[parent];
      i = parent;
    }
    heap_[i] = e;
  }
  bool empty() const { return heap_.empty(); }
  size_t size() const { return heap_.size(); }
  const Event& top() const { return heap_.front(); }
  Event pop() {
    const Event out = heap_.front();
    const Event last = heap_.back();
    heap_.pop_back();
    const size_t n = heap_.size();
    if (n == 0) return out;
    size_t i = 0;
    for (;;) {
      const size_t c = 4 * i + 1;
      if (c >= n) break;
      size_t best = c;
      const size_t end = c + 4 < n ? c + 4 : n;
      for (size_t k = c + 1; k < end; ++k)
        if (before(heap_[k], heap_[best])) best = k;
      if (!before(heap_[best], last)) break;
      heap_[i] = heap_[best];
      i = best;
    }
    heap_[i] = last;
    return out;
  }
  void clear() {
    heap_.clear();
    next_seq_ = 0;
  }
  void reserve(size_t n) { heap_.reserve(n); }

 private:
  __extension__ typedef unsigned __int128 Order;
  static Order order(const Event& e) { return (static_cast<Order>(e.time_bits) << 64) | e.key; }
  static bool before(const Event& a, const Event& b) { return order(a) < order(b); }
  std::vector<Event> heap_;
  uint64_t next_seq_ = 0;
};

}  // namespace starfish::des

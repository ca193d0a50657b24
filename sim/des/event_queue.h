#pragma once
// The event queue: a binary min-heap on (time, sequence number). The sequence number is the
// order of insertion, so events at one time are handled in the order they were scheduled and a
// run is reproducible. Events are small values; the heap's storage is reused between runs.
#include <algorithm>
#include <cstdint>
#include <vector>

namespace starfish::des {

enum class EventKind : uint8_t {
  TaskEnd,    // a compute or delay task's duration has elapsed (target = task)
  FlowTxEnd,  // a flow's last byte has been sent (target = flow, version must match)
  Delivered,  // a flow's latency has passed after its last byte (target = task)
};

struct Event {
  double time_s = 0;
  uint64_t seq = 0;
  uint32_t target = 0;
  uint32_t version = 0;
  EventKind kind = EventKind::TaskEnd;
};

class EventQueue {
 public:
  void push(double time_s, EventKind kind, uint32_t target, uint32_t version = 0) {
    heap_.push_back(Event{time_s, next_seq_++, target, version, kind});
    std::push_heap(heap_.begin(), heap_.end(), Later{});
  }
  bool empty() const { return heap_.empty(); }
  size_t size() const { return heap_.size(); }
  const Event& top() const { return heap_.front(); }
  Event pop() {
    std::pop_heap(heap_.begin(), heap_.end(), Later{});
    Event e = heap_.back();
    heap_.pop_back();
    return e;
  }
  void clear() {
    heap_.clear();
    next_seq_ = 0;
  }
  void reserve(size_t n) { heap_.reserve(n); }

 private:
  struct Later {
    bool operator()(const Event& a, const Event& b) const {
      return a.time_s != b.time_s ? a.time_s > b.time_s : a.seq > b.seq;
    }
  };
  std::vector<Event> heap_;
  uint64_t next_seq_ = 0;
};

}  // namespace starfish::des

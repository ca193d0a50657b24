#include "sim/schedule/sim_backend.h"

#include <algorithm>
#include <string>

namespace starfish::schedule {
SimBackend::SimBackend(des::Engine& engine, int gpu, int node, SimBackendCategories categories)
    : engine_(engine), gpu_(gpu), node_(node), cat_(categories) {}

void SimBackend::append_compute(des::TaskId t) {
  if (last_compute_ != des::kNone) engine_.depends(t, last_compute_);
  for (des::TaskId w : waited_) engine_.depends(t, w);
  waited_.clear();
  previous_compute_ = last_compute_;
  last_compute_ = t;
}

void SimBackend::continue_compute(des::TaskId t) {
  engine_.depends(t, last_compute_);
  last_compute_ = t;
}

Buffer SimBackend::allocate(Tier tier, int64_t bytes) { return Buffer{++next_buffer_, tier, bytes}; }

void SimBackend::release(const Buffer&) {}

Completion SimBackend::issue(des::TaskId first, des::TaskId last, Queue queue) {
  if (queue == Queue::compute) {
    if (last_compute_ != des::kNone) engine_.depends(first, last_compute_);
    waited_.push_back(last);  // the compute stream waits for its own moves
  } else {
    if (previous_compute_ != des::kNone) engine_.depends(first, previous_compute_);
    if (last_copy_queue_ != des::kNone) engine_.depends(first, last_copy_queue_);
    last_copy_queue_ = last;
  }
  completion_task_.push_back(last);
  return Completion{completion_task_.size() - 1};
}

Completion SimBackend::copy(const Buffer& src, const Buffer& dst, int64_t bytes, const MoveTag& tag) {
  moved_[static_cast<int>(src.tier)][static_cast<int>(dst.tier)] += static_cast<double>(bytes);
  if (!recording_ || src.tier == dst.tier) return Completion{};
  const std::string name = std::string(to_string(tag.reason)) + " chunk " + std::to_string(tag.chunk) + " " +
                           to_string(src.tier) + "->" + to_string(dst.tier);
  const des::Label label{cat_.offload, name};
  const double b = static_cast<double>(bytes);
  des::TaskId first = des::kNone, last = des::kNone;
  auto then = [&](des::TaskId t) {
    if (first == des::kNone) first = t;
    else engine_.depends(t, last);
    last = t;
  };
  // GPU <-> NVMe goes through host memory, as the executor stages it.
  if (src.tier == Tier::nvme) then(engine_.nvme_read(node_, b, label));
  if (src.tier == Tier::gpu) then(engine_.copy(gpu_, des::CopyDir::D2H, b, label));
  if (dst.tier == Tier::gpu) then(engine_.copy(gpu_, des::CopyDir::H2D, b, label));
  if (dst.tier == Tier::nvme) then(engine_.nvme_write(node_, b, label));
  return issue(first, last, tag.queue);
}

Completion SimBackend::collective(CollectiveKind kind, const Group& group, const std::vector<Buffer>& inputs,
                                  const std::vector<Buffer>& outputs, DType, const MoveTag& tag) {
  if (!recording_ || group.size() <= 1) return Completion{};
  // The engine's collective bytes are the whole buffer of one GPU: an all-gather's output (every
  // member's chunk), a reduce-scatter's input, the buffer of the others.
  double bytes = 0;
  if (kind == CollectiveKind::all_gather) for (const Buffer& b : outputs) bytes += static_cast<double>(b.bytes);
  else if (kind == CollectiveKind::reduce_scatter) for (const Buffer& b : inputs) bytes += static_cast<double>(b.bytes);
  else bytes = static_cast<double>(outputs.front().bytes);
  std::vector<int> gpus = group.ranks;
  if (group.root > 0) std::rotate(gpus.begin(), gpus.begin() + group.root, gpus.end());  // the engine's root is first
  const std::string name = std::string(to_string(kind)) + " chunk " + std::to_string(tag.chunk);
  const des::TaskId t = engine_.collective(kind, engine_.group(std::move(gpus)), bytes, des::Label{cat_.dp, name});
  return issue(t, t, tag.queue);
}

void SimBackend::wait(Completion done) {
  if (done.id == 0 || done.id >= completion_task_.size()) return;
  waited_.push_back(completion_task_[done.id]);
}

}  // namespace starfish::schedule

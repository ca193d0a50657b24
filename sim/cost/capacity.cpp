#include "sim/cost/capacity.h"

#include "sim/spec/units.h"

namespace starfish {

int64_t usable_gpu_bytes(const NodeSpec& node) { return node.gpu.memory_bytes - node.gpu.reserved_bytes; }

int64_t usable_host_bytes(const NodeSpec& node) { return node.host.memory_bytes - node.host.reserved_bytes; }

TierBytes usable_capacity(const Cluster& c) {
  TierBytes cap;
  cap.gpu = static_cast<double>(usable_gpu_bytes(c.node));
  cap.cpu = static_cast<double>(usable_host_bytes(c.node));
  cap.nvme = c.node.nvme ? static_cast<double>(c.node.nvme->capacity_bytes) : 0;
  return cap;
}

const char* MemoryVerdict::allocator_reserve_note() {
  return "; only the allocator's reserve overflows: it may train while PyTorch's allocator frees its cache and "
         "retries (slower), or fail on fragments";
}

std::string MemoryVerdict::text() const {
  if (fits) return "";
  std::string text = std::string(constraint_name(constraint())) + ": needs " + units::human_bytes(needed_bytes) + " of " +
                     units::human_bytes(capacity_bytes) + (tier == Tier::gpu ? " per GPU" : " per node");
  if (within_allocator_reserve) text += allocator_reserve_note();
  return text;
}

}  // namespace starfish

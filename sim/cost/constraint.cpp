#include "sim/cost/constraint.h"

#include <ostream>

namespace starfish {

const char* constraint_name(Constraint c) {
  switch (c) {
    case Constraint::none: return "";
    case Constraint::gpu_memory: return "GPU memory";
    case Constraint::cpu_memory: return "CPU memory";
    case Constraint::nvme: return "NVMe";
    case Constraint::time: return "time";
    case Constraint::simulator: return "simulator";
    case Constraint::no_valid_plan: return "no valid plan for its shape";
  }
  return "?";
}

Constraint memory_constraint(Tier tier) {
  switch (tier) {
    case Tier::gpu: return Constraint::gpu_memory;
    case Tier::cpu: return Constraint::cpu_memory;
    case Tier::nvme: return Constraint::nvme;
  }
  return Constraint::none;
}

std::ostream& operator<<(std::ostream& os, Constraint c) { return os << '"' << constraint_name(c) << '"'; }

}  // namespace starfish

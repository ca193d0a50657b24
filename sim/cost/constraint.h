#pragma once
// What stops a plan, a model size or a node count: one vocabulary for the search (each plan's
// verdict, its rejected families, its binding constraint), maxsize (what stops the next size),
// size-cluster, the GUI and the JSON output, with one name table (constraint_name) for the text
// every verb prints and writes.
#include <cstdint>
#include <iosfwd>

#include "sim/spec/plan.h"

namespace starfish {

enum class Constraint : uint8_t {
  none,           // "": nothing binds (the plan fits, or nothing was tried)
  gpu_memory,     // "GPU memory"  } the memory tiers in Tier's order, as check_memory checks
  cpu_memory,     // "CPU memory"  } them (sim/cost/capacity.h): the search's rejection
  nvme,           // "NVMe"        } summaries sort their families in this order
  time,           // "time": fits in memory, but its iteration runs over the limit
  simulator,      // "simulator": the discrete-event simulator refused the plan (a SpecError)
  no_valid_plan,  // "no valid plan for its shape": no plan at all is valid for the model (maxsize)
};

// The name every verb prints and writes in its JSON ("GPU memory", "time", ...; "" for none).
const char* constraint_name(Constraint c);
// The constraint a memory tier is: GPU -> "GPU memory", CPU -> "CPU memory", NVMe -> "NVMe".
Constraint memory_constraint(Tier tier);
// Its name, for test diagnostics and logs.
std::ostream& operator<<(std::ostream& os, Constraint c);

}  // namespace starfish

#pragma once
// The what-if computation, Qt-free: the hardware with the sliders' changes, the largest model of
// the current model's family that trains on it (search::max_model_size), the best plan for the
// current model on it, and the chosen plan's analytic estimate there.
#include <atomic>
#include <cstdint>
#include <optional>
#include <string>

#include "sim/cost/estimate.h"
#include "sim/search/budget.h"
#include "sim/search/maxsize.h"

namespace starfish::gui {

struct WhatIfSettings {
  int nodes = 1;
  int gpus_per_node = 1;
  int pcie_generation = 4;
  bool nvlink = false;
  int64_t host_memory_bytes = 0;
  int64_t chunk_elements = int64_t{64} << 20;
  // The largest model is the largest that trains within it (as `starfish maxsize`): by default
  // 20 tokens per parameter within 90 days.
  search::TrainingBudget budget;
};

// The settings a cluster already has (chunk size: the plan's when chunked, else 64Mi).
WhatIfSettings settings_of(const Cluster& c, const std::optional<Plan>& plan);

// `base` changed by the settings. NVLink switched on where the profile has none uses 300 GB/s
// per direction, NVSwitch (A100 NVLink3); a multi-node cluster without NICs gets one 200 Gb/s
// port per node (so the fabric exists and shows as the bottleneck it would be).
Cluster apply_settings(const Cluster& base, const WhatIfSettings& s);

struct WhatIfResult {
  Cluster cluster;
  search::MaxSizeResult max_size;          // largest model of the family
  std::optional<search::Row> best;         // best plan for the current model (none: nothing fits)
  std::string best_why_not;                // when no plan fits: the binding constraint
  std::optional<Estimate> plan_estimate;   // the chosen plan on this hardware
  std::string plan_error;                  // why the chosen plan cannot run here (GPU count, ...)
  bool cancelled = false;
};

// Runs every part; `cancel` (may be null) stops the searches early (cancelled = true).
WhatIfResult evaluate_whatif(const Cluster& base, const Model& model, const Training& training,
                             const std::optional<Plan>& plan, const WhatIfSettings& s, const std::atomic<bool>* cancel);

}  // namespace starfish::gui

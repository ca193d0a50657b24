#pragma once
// Assembles a Job from the CLI's --model / --hw / --plan / --nodes: flags override what the plan
// file names; without a plan, the default plan (pure data parallelism) and a default training
// setup are used and say so.
#include <optional>
#include <string>

#include "sim/spec/job.h"

namespace starfish::cli {

Job load_job(const std::optional<std::string>& model, const std::optional<std::string>& hardware,
             const std::optional<std::string>& plan, const std::optional<std::string>& nodes);

// Training used when no plan file is given: bf16 mixed-precision Adam, global batch = one
// sequence per data-parallel GPU.
Training default_training(const Cluster& cluster);

}  // namespace starfish::cli

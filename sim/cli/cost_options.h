#pragma once
// What training an answer costs, as maxsize and size-cluster read it from their command line:
// --price (dollars per GPU-hour, else the hardware profile's) and the energy assumptions
// (--gpu-utilisation, --pue, --grid; sim/cost/energy.h). One parser for both verbs.
#include "sim/cli/args.h"
#include "sim/cost/energy.h"

namespace starfish::cli {

struct CostOptions {
  double price_per_gpu_hour = 0;
  EnergyAssumptions energy;
};

// Throws UsageError for a value that is not a positive number.
CostOptions parse_cost_options(const Args& args, double profile_price_per_gpu_hour);

}  // namespace starfish::cli

#pragma once
// What training a plan for a number of days costs: GPU-hours, dollars, energy and emissions.
//
//   GPU-hours = GPUs x hours
//   dollars   = GPU-hours x price per GPU-hour (the hwprofile's `price_per_gpu_hour`, or --price)
//   energy    = GPU-hours x (GPU TDP x utilisation + the node's non-GPU share per GPU) x PUE
//   tCO2e     = energy x grid intensity
//
// The node's non-GPU share (CPUs, memory, NICs, switches, fans) is the hwprofile's node
// `power_watts` (the system's maximum, e.g. DGX A100: 6.5 kW) less its GPUs' TDPs, per GPU; a
// profile without it counts the GPUs alone (and says so). The stated parameters and their
// sources:
//  - utilisation 1.0: the GPUs drawn at their TDP, an upper bound (dense training runs near the
//    power limit; --gpu-utilisation lowers it);
//  - PUE 1.1: Google's fleet-wide trailing-twelve-month PUE (~1.10, Patterson et al. 2021,
//    "Carbon Emissions and Large Neural Network Training", sec. 2; the US average datacentre
//    is 1.58 there);
//  - grid intensity 0.429 kgCO2e/kWh: the US average used by Patterson et al. 2021 (Table 4).
#include <string>

#include "sim/spec/hardware.h"

namespace starfish {

struct EnergyAssumptions {
  double gpu_utilisation = 1.0;
  double pue = 1.1;
  double grid_kg_co2e_per_kwh = 0.429;
};

struct TrainingCost {
  double gpu_hours = 0;
  double dollars = 0;           // 0 when no price is known
  double kwh = 0;               // 0 when the GPU's TDP is unknown
  double tonnes_co2e = 0;
  bool host_share_known = false;  // the node's power_watts gave the non-GPU share
};

// `gpus` GPUs of `node` for `days`, at `price_per_gpu_hour` (0: unknown).
TrainingCost training_cost(const NodeSpec& node, int64_t gpus, double days, double price_per_gpu_hour,
                           const EnergyAssumptions& assumptions);

// "1.23 M GPU-hours, $2.21 M, 563 MWh, 242 tCO2e" (parts that are unknown are left out).
std::string describe(const TrainingCost& cost);

}  // namespace starfish

#include "sim/cost/energy.h"

#include <algorithm>
#include <fmt/format.h>

#include "sim/spec/units.h"

namespace starfish {

TrainingCost training_cost(const NodeSpec& node, int64_t gpus, double days, double price_per_gpu_hour,
                           const EnergyAssumptions& a) {
  TrainingCost c;
  c.gpu_hours = static_cast<double>(gpus) * days * 24.0;
  c.dollars = c.gpu_hours * price_per_gpu_hour;
  if (node.gpu.tdp_watts > 0) {
    double host_w = 0;
    if (node.power_watts > 0) {
      host_w = std::max(0.0, node.power_watts / node.gpus - node.gpu.tdp_watts);
      c.host_share_known = true;
    }
    const double watts_per_gpu = node.gpu.tdp_watts * a.gpu_utilisation + host_w;
    c.kwh = c.gpu_hours * watts_per_gpu * a.pue / 1000.0;
    c.tonnes_co2e = c.kwh * a.grid_kg_co2e_per_kwh / 1000.0;
  }
  return c;
}

namespace {
std::string count(double x) {  // human_count without the space it leaves for a missing suffix
  std::string s = units::human_count(x);
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}
}  // namespace

std::string describe(const TrainingCost& c) {
  std::string s = count(c.gpu_hours) + " GPU-hours";
  if (c.dollars > 0) s += ", $" + count(c.dollars);
  if (c.kwh > 0) {
    s += fmt::format(", {} kWh, {:.3g} tCO2e{}", count(c.kwh), c.tonnes_co2e,
                     c.host_share_known ? "" : " (GPUs alone: the profile has no node power_watts)");
  }
  return s;
}

}  // namespace starfish

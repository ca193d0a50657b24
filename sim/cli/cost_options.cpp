#include "sim/cli/cost_options.h"

#include "sim/cli/plan_export.h"

namespace starfish::cli {

CostOptions parse_cost_options(const Args& args, double profile_price_per_gpu_hour) {
  CostOptions c;
  c.price_per_gpu_hour = profile_price_per_gpu_hour;
  if (auto p = args.get("price")) c.price_per_gpu_hour = parse_positive_number("price", *p, "dollars per GPU-hour");
  if (auto u = args.get("gpu-utilisation"))
    c.energy.gpu_utilisation = parse_positive_number("gpu-utilisation", *u, "a fraction of the GPU's TDP");
  if (auto p = args.get("pue")) c.energy.pue = parse_positive_number("pue", *p, "a power usage effectiveness like 1.1");
  if (auto g = args.get("grid"))
    c.energy.grid_kg_co2e_per_kwh = parse_positive_number("grid", *g, "kgCO2e per kWh like 0.429");
  return c;
}

}  // namespace starfish::cli

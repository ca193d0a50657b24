// Cost and energy of training (energy.h) against hand-computed values.
#include <gtest/gtest.h>

#include "sim/cost/energy.h"

namespace starfish {
namespace {

NodeSpec dgx_a100() {
  NodeSpec n;
  n.gpus = 8;
  n.gpu.tdp_watts = 400;
  n.power_watts = 6500;
  return n;
}

TEST(Energy, GpuHoursDollarsEnergyAndEmissionsByHand) {
  // 128 GPUs for 10 days: 30,720 GPU-hours; at $1.8: $55,296. Per GPU 400 W + (6500/8 - 400) =
  // 812.5 W, x PUE 1.1 = 893.75 W: 27,456 kWh; x 0.429 kg/kWh = 11.778624 t.
  const TrainingCost c = training_cost(dgx_a100(), 128, 10, 1.8, EnergyAssumptions{});
  EXPECT_DOUBLE_EQ(c.gpu_hours, 30720);
  EXPECT_DOUBLE_EQ(c.dollars, 55296);
  EXPECT_DOUBLE_EQ(c.kwh, 27456);
  EXPECT_NEAR(c.tonnes_co2e, 11.778624, 1e-9);
  EXPECT_TRUE(c.host_share_known);
}

TEST(Energy, UtilisationPueAndGridAreStatedParameters) {
  EnergyAssumptions a;
  a.gpu_utilisation = 0.5;
  a.pue = 1.0;
  a.grid_kg_co2e_per_kwh = 0.1;
  // 8 GPUs for 1 day = 192 GPU-hours at 200 + 412.5 W = 117.6 kWh, 11.76 kg.
  const TrainingCost c = training_cost(dgx_a100(), 8, 1, 0, a);
  EXPECT_DOUBLE_EQ(c.kwh, 117.6);
  EXPECT_NEAR(c.tonnes_co2e, 0.01176, 1e-12);
  EXPECT_EQ(c.dollars, 0);
}

TEST(Energy, WithoutNodePowerTheGpusAloneAndWithoutTdpNoEnergy) {
  NodeSpec n = dgx_a100();
  n.power_watts = 0;
  const TrainingCost gpus_only = training_cost(n, 1, 1, 0, EnergyAssumptions{});
  EXPECT_DOUBLE_EQ(gpus_only.kwh, 24 * 400 * 1.1 / 1000);
  EXPECT_FALSE(gpus_only.host_share_known);
  EXPECT_NE(describe(gpus_only).find("GPUs alone"), std::string::npos);
  n.gpu.tdp_watts = 0;
  const TrainingCost none = training_cost(n, 1, 1, 2, EnergyAssumptions{});
  EXPECT_EQ(none.kwh, 0);
  EXPECT_EQ(describe(none), "24.0 GPU-hours, $48.0");
}

}  // namespace
}  // namespace starfish

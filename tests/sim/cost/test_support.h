#pragma once
// Clusters built in code for the cost tests (models: tests/support/models.h).
#include "sim/spec/hardware.h"
#include "support/models.h"

namespace starfish::testing {

// A DGX-A100-like node: 8 GPUs on NVSwitch at 300 GB/s, 8 NICs of 25 GB/s.
inline Cluster dgx(int nodes) {
  Cluster c;
  c.name = "dgx-test";
  c.nodes = nodes;
  c.node.gpus = 8;
  c.node.gpu.name = "A100";
  c.node.gpu.memory_bytes = 80LL << 30;
  c.node.gpu.hbm_bandwidth_Bps = 2039e9;
  c.node.gpu.peak_flops[DType::bf16] = 312e12;
  c.node.gpu.peak_flops[DType::fp16] = 312e12;
  c.node.gpu.peak_flops[DType::fp32] = 19.5e12;
  c.node.gpu.matmul_efficiency.points = {{1e9, 0.5}, {1e12, 0.9}};
  c.node.host.memory_bytes = 2LL << 40;
  c.node.host.memory_bandwidth_Bps = 400e9;
  c.node.host.cpu_cores = 128;
  c.node.host.cpu_adam_params_per_s = 2e9;
  c.node.pcie.generation = 4;
  c.node.pcie.lanes = 16;
  c.node.pcie.gpus_per_root = 2;
  c.node.nvlink = NvlinkSpec{300e9, 2e-6, NvlinkTopology::switched};
  c.node.nic = NicSpec{8, 25e9, 5e-6};
  return c;
}

}  // namespace starfish::testing

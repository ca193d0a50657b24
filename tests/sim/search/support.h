#pragma once
// Models and clusters built in code for the search tests (no bundled file needed).
#include "sim/spec/hardware.h"
#include "sim/spec/model.h"
#include "support/models.h"
#include "sim/spec/training.h"

namespace starfish::search_test {

inline Model small_gpt(int layers = 8, int hidden = 512, int heads = 8) {
  return testing::gpt(layers, hidden, heads, 512, 8000, "small-gpt");
}

// Nodes of 4 small GPUs with NVMe, so every tier and every axis is in play.
inline Cluster small_cluster(int nodes = 2, double gpu_gib = 2.0) {
  Cluster c;
  c.name = "small-test";
  c.nodes = nodes;
  c.node.gpus = 4;
  c.node.gpu.name = "test-gpu";
  c.node.gpu.memory_bytes = static_cast<int64_t>(gpu_gib * (1LL << 30));
  c.node.gpu.reserved_bytes = 1LL << 27;
  c.node.gpu.hbm_bandwidth_Bps = 900e9;
  c.node.gpu.peak_flops[DType::fp16] = 100e12;
  c.node.gpu.peak_flops[DType::fp32] = 15e12;
  c.node.gpu.matmul_efficiency.points = {{1e9, 0.4}, {1e12, 0.8}};
  c.node.host.memory_bytes = 8LL << 30;
  c.node.host.reserved_bytes = 1LL << 30;
  c.node.host.memory_bandwidth_Bps = 100e9;
  c.node.host.cpu_adam_params_per_s = 1e9;
  c.node.nvme = NvmeSpec{64LL << 30, 3e9, 2e9, 1e-4};
  c.node.pcie.generation = 3;
  c.node.nvlink = NvlinkSpec{150e9, 2e-6, NvlinkTopology::switched};
  c.node.nic = NicSpec{1, 12.5e9, 5e-6};
  return c;
}

inline Training fp16_training(int64_t global_batch) {
  Training t;
  t.global_batch = global_batch;
  t.dtype = DType::fp16;
  return t;
}

}  // namespace starfish::search_test

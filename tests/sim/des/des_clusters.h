#pragma once
// Clusters for the DES tests: the bundled DGX A100 and MI300X hwprofiles, and small boxes built in code.
#include <string>

#include "sim/spec/hardware.h"
#include "sim/spec/spec_io.h"

namespace starfish::des::testing {

inline Cluster dgx_a100(int nodes = 1) {
  Cluster c = load_cluster(std::string(STARFISH_SOURCE_DIR) + "/hwprofiles/dgx-a100-80gb.yaml");
  c.nodes = nodes;
  return c;
}

// The bundled AMD MI300X profile: 8 GPUs on a full xGMI mesh (nvlink.topology: mesh).
inline Cluster mi300x(int nodes = 1) {
  Cluster c = load_cluster(std::string(STARFISH_SOURCE_DIR) + "/hwprofiles/amd-mi300x.yaml");
  c.nodes = nodes;
  return c;
}

// A workstation without NVLink: 4 GPUs, two behind each PCIe switch, an NVMe drive.
inline Cluster pcie_box(int gpus = 4, int gpus_per_root = 2) {
  Cluster c;
  c.name = "pcie-box";
  c.nodes = 1;
  NodeSpec& n = c.node;
  n.name = "box";
  n.gpus = gpus;
  n.gpu.name = "test-gpu";
  n.gpu.memory_bytes = 24LL << 30;
  n.gpu.copy_engines = 2;
  n.host.memory_bytes = 256LL << 30;
  n.host.memory_bandwidth_Bps = 100e9;
  n.pcie = PcieSpec{4, 16, 0.8, 1e-6, gpus_per_root};
  n.nvme = NvmeSpec{4'000'000'000'000LL, 7e9, 5e9, 80e-6};
  return c;
}

}  // namespace starfish::des::testing

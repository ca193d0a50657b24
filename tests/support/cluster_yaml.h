#pragma once
// A small valid hardware profile as YAML text, shared by the spec tests that edit it into bad
// input (test_spec_errors, test_input_limits) or build on it (test_hardware_base).
#include <string>

namespace starfish::testing {

inline const std::string kCluster = R"(name: box
nodes: 1
node:
  gpus: 8
  gpu:
    name: G
    memory: 80GiB
    hbm_bandwidth: 2TB/s
    peak: {bf16: 312TFLOPS}
    matmul_efficiency: [[1GFLOP, 0.5], [1TFLOP, 0.9]]
  host:
    memory: 1TiB
    memory_bandwidth: 200GB/s
    cpu_cores: 64
    cpu_adam_params_per_s: 1e9
  pcie: {generation: 4, lanes: 16}
  nvlink: {bandwidth: 300GB/s}
)";

}  // namespace starfish::testing

#pragma once
// Small helpers shared by the cost tests: models and clusters built in code, so the cost tests
// depend on no bundled file.
#include "sim/spec/hardware.h"
#include "sim/spec/model.h"

namespace starfish::testing {

inline Model gpt(int layers, int hidden, int heads, int seq, int vocab) {
  Model m;
  m.name = "gpt-test";
  m.layers = layers;
  m.hidden = hidden;
  m.heads = heads;
  m.kv_heads = heads;
  m.ffn_hidden = 4 * hidden;
  m.seq_len = seq;
  m.vocab = vocab;
  return m;
}

inline Model llama2_7b() {
  Model m = gpt(32, 4096, 32, 4096, 32000);
  m.name = "llama-2-7b";
  m.ffn_hidden = 11008;
  m.activation = Activation::swiglu;
  m.norm = Norm::rmsnorm;
  m.position = PositionEmbedding::rope;
  m.tied_embeddings = false;
  m.bias = false;
  return m;
}

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
  c.node.nvlink = NvlinkSpec{300e9, 2e-6, true};
  c.node.nic = NicSpec{8, 25e9, 5e-6};
  return c;
}

}  // namespace starfish::testing

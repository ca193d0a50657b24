#pragma once
// The jobs the simulator's speed is measured on (docs/benchmarks.md, "Simulator speed"), shared
// by bench/simulate_scale_bench and bench/simulate_fingerprint so both time and check the same
// work. Header-only: bench programs are one .cpp each.
#include <cstdint>
#include <string>

#include "sim/spec/job.h"
#include "sim/spec/spec_io.h"

namespace starfish::bench {

inline std::string source_path(const std::string& relative) { return std::string(STARFISH_SOURCE_DIR) + "/" + relative; }

// GPT-3 175B, Megatron-style TP8 PP16 on DGX A100 nodes, DP = gpus / 128, 64 micro-batches of
// one sequence per pipeline, full recompute: the same simulated tasks at every cluster size
// (one lead GPU per stage), only the data-parallel width grows with the cluster.
inline Job gpt3_175b_job(int gpus, int micro_batches = 64) {
  Cluster cluster = load_cluster(source_path("hwprofiles/dgx-a100-80gb.yaml"));
  cluster.nodes = gpus / cluster.node.gpus;
  Plan p;
  p.tp = 8;
  p.pp = 16;
  p.dp = gpus / (p.tp * p.pp);
  p.recompute = Recompute::full;
  Training t;
  t.global_batch = static_cast<int64_t>(micro_batches) * p.dp;
  t.dtype = DType::bf16;
  return make_job(load_model(source_path("configs/models/gpt3-175b.yaml")), cluster, t, p);
}

// The same GPT-3 job on a fabric that breaks the replicas' symmetry at the switches: rail-
// optimised leaves of 32 nodes (one per rail), spines of 512 nodes at 2:1, a core at 4:1. The
// nodes' own links are still planned by shape; every ring pair's switch hops are walked.
inline Job gpt3_175b_fat_tree_job(int gpus) {
  Job job = gpt3_175b_job(gpus);
  job.cluster.fabric.rail_optimized = true;
  job.cluster.fabric.tiers = {FabricTier{32, 1, 0}, FabricTier{512, 2, 0}, FabricTier{8192, 4, 0}};
  return job;
}

// Llama 3 405B as Meta trained it on 16,384 H100s (Llama 3 paper, Table 4: TP8 CP1 PP16 DP128),
// with 512 micro-batches per pipeline. Meta's 126 layers split unevenly over 16 stages (7 on the
// first and last, 8 elsewhere); the simulator's stages are equal, so this is the 128-layer shape
// with 8 layers on every stage: the same tasks per stage as Meta's middle stages.
inline Job llama3_405b_job(int micro_batches = 512) {
  Cluster cluster = load_cluster(source_path("hwprofiles/dgx-h100.yaml"));
  cluster.nodes = 16384 / cluster.node.gpus;
  Model m = load_model(source_path("configs/models/llama3-405b.yaml"));
  m.layers = 128;
  Plan p;
  p.tp = 8;
  p.pp = 16;
  p.dp = 128;
  p.recompute = Recompute::full;
  Training t;
  t.global_batch = static_cast<int64_t>(micro_batches) * p.dp;
  t.dtype = DType::bf16;
  return make_job(m, cluster, t, p);
}

}  // namespace starfish::bench

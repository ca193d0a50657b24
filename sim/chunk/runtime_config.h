#pragma once
// From a Job to the chunk runtime's inputs, one function for every backend: the simulator and
// the executor build the same layout and options for the same plan, so they make the same
// decisions (and their move logs can be diffed).
#include "sim/cost/chunk_layout.h"
#include "sim/chunk/chunk_runtime.h"
#include "sim/spec/job.h"

namespace starfish {

struct ChunkPlan {
  ChunkLayout layout;
  RuntimeOptions options;
  bool tied_embeddings = true;
  // The plan's CPU embedding (sim/cost/cpu_embedding.h): the word and position embeddings are not
  // in the layout; an executor keeps them, fp32, on the host.
  bool cpu_embedding = false;
};

// The layout of the shard a rank holds (pipeline stage 0: chunk plans have no pipeline), and
// the options: budgets are the rank's share of each tier (GPU memory less its reservation; host
// memory less its reservation, divided by the node's GPUs, less a CPU embedding's states; NVMe
// capacity divided by the node's GPUs); the layout leaves a CPU embedding out; ZeRO stage >= 1
// shards chunk groups over DP (PatrickStar's ZeRO-DP), stage 0 replicates them (all-reduce).
// Throws SpecError (naming the plan field) when the plan is not chunked.
ChunkPlan chunk_plan(const Job& job, int dp_index);
// The same with explicit budgets (an executor's --gpu-budget / --cpu-budget / --nvme-budget).
ChunkPlan chunk_plan(const Job& job, int dp_index, const MemoryBudget& budget);

}  // namespace starfish

#include "sim/chunk/runtime_config.h"

#include "sim/cost/capacity.h"

namespace starfish {

ChunkPlan chunk_plan(const Job& job, int dp_index) {
  const Plan& p = job.plan;
  if (!p.chunked()) p.provenance.fail("plan.chunk_size", "the plan does not use the chunk runtime (chunk_size is 0)");
  const int world = job.dp();
  const Shard shard = plan_shard(p, 0);
  ChunkPlan out{ChunkLayout::build(parameter_tensors(job.model, shard), LayoutOptions::of(job.training, p.chunk_elements,
                                                                                           p.zero_stage >= 1 ? world : 1)),
                RuntimeOptions{}, job.model.tied_embeddings};
  const NodeSpec& node = job.cluster.node;
  RuntimeOptions& o = out.options;
  o.budget.gpu_bytes = usable_gpu_bytes(node);
  o.budget.cpu_bytes = usable_host_bytes(node) / node.gpus;
  o.budget.nvme_bytes = node.nvme ? node.nvme->capacity_bytes / node.gpus : 0;
  o.zero = p.zero_stage >= 1 ? ZeroMode::sharded : ZeroMode::replicated;
  o.dp_ranks = job.dp_group_ranks(0, 0);  // the runtime is TP rank 0 of the only stage
  o.dp_index = dp_index;
  return out;
}

ChunkPlan chunk_plan(const Job& job, int dp_index, const MemoryBudget& budget) {
  ChunkPlan out = chunk_plan(job, dp_index);
  out.options.budget = budget;
  return out;
}

}  // namespace starfish

#include "sim/chunk/runtime_config.h"

#include <algorithm>

#include "sim/cost/capacity.h"
#include "sim/cost/cpu_embedding.h"
#include "sim/cost/framework.h"

namespace starfish {

ChunkPlan chunk_plan(const Job& job, int dp_index) {
  const Plan& p = job.plan;
  if (!p.chunked()) p.provenance.fail("plan.chunk_size", "the plan does not use the chunk runtime (chunk_size is 0)");
  ChunkPlan out{plan_chunk_layout(job.model, job.training, p), RuntimeOptions{}, job.model.tied_embeddings, p.cpu_embedding};
  const NodeSpec& node = job.cluster.node;
  RuntimeOptions& o = out.options;
  // NCCL's communicator buffers take their share before the chunks (as the analytic tier's).
  const double nccl_bytes = communicator_buffer_bytes(p, node.gpu, 0, job.model.tied_embeddings);
  o.budget.gpu_bytes = usable_gpu_bytes(node) - static_cast<int64_t>(nccl_bytes);
  // A CPU embedding's fp32 states take their share of the host first (sim/cost/cpu_embedding.h).
  o.budget.cpu_bytes =
      std::max<int64_t>(0, usable_host_bytes(node) / node.gpus - cpu_embedding_host_bytes(job.model, job.training, p));
  o.budget.nvme_bytes = node.nvme && chunks_may_use_nvme(p) ? node.nvme->capacity_bytes / node.gpus : 0;
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

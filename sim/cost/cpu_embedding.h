#pragma once
// PatrickStar's CPU embedding (`use_cpu_embedding`, a plan's `cpu_embedding`): the one home of
// what it moves and costs. PatrickStar keeps every nn.Embedding (a GPT's word and position
// embeddings) out of the chunks, as a torch-managed fp32 parameter on the CPU of every rank
// (patrickstar/core/preprocess.py, _post_init_method: ParamType.TORCH_BASED), and runs it there
// (patrickstar/ops/embedding.py):
//   forward:  the token ids go to the CPU, the lookup runs there in fp32, its output [B, T, H]
//             crosses to the GPU in fp32 (copy_to_gpu) and is cast to fp16 on the GPU;
//   backward: the cast's gradient (fp32 again) crosses back to the CPU (_CopyActToGPU.backward:
//             grad_output.to(cpu).float()), torch's dense embedding backward fills an fp32
//             gradient of the whole table, which the post-backward hook all-reduces over Gloo
//             across the data-parallel ranks and divides by the world (core/hook.py);
//   step:     the fp32 param with its fp32 gradient, stepped by CPU Adam (ops/fp16_cpu_adam.py:
//             TORCH_BASED params "should be on CPU ... and it is fp32").
// Each rank holds its own replica: 4 (param) + 4 (grad) + 8 (Adam's moments) bytes per parameter
// of host memory, not sharded over the ranks.
#include <cstdint>

#include "sim/cost/params.h"
#include "sim/spec/hardware.h"
#include "sim/spec/model.h"
#include "sim/spec/plan.h"
#include "sim/spec/training.h"

namespace starfish {

// Whether the plan's CPU embedding holds this tensor (the word and position embeddings).
bool on_cpu_embedding(const ParamTensor& tensor, const Plan& plan);

// Parameters the plan's CPU embedding holds (0 without one), and their host bytes on each rank.
int64_t cpu_embedding_elements(const Model& model, const Plan& plan);
int64_t cpu_embedding_host_bytes(const Model& model, const Training& training, const Plan& plan);

struct CpuEmbeddingCosts {
  int64_t elements = 0;       // parameters of the CPU embedding (0: the plan has none)
  int64_t host_bytes = 0;     // per rank: fp32 param + fp32 grad (+ fp32 momentum and variance)
  double to_gpu_bytes = 0;    // per rank and iteration: the lookup's fp32 output, host to GPU
  double to_host_bytes = 0;   // ... and its fp32 gradient back
  double lookup_s = 0;        // CPU: gather the rank's tokens' rows
  double backward_s = 0;      // CPU: zero the table's gradient, scatter-add the rows' gradients
  double all_reduce_s = 0;    // Gloo all-reduce of the fp32 gradient over DP, then / world
  double optimizer_s = 0;     // CPU Adam of the replica (every rank of a node at once)
};

// For a plan with cpu_embedding (all zero otherwise); plan.dp must be resolved. Every rank of a
// node runs its lookup, backward, reduction and step at the same time, sharing the host's memory
// bandwidth and CPU Adam throughput.
CpuEmbeddingCosts cpu_embedding_costs(const Model& model, const Cluster& cluster, const Training& training,
                                      const Plan& plan);

}  // namespace starfish

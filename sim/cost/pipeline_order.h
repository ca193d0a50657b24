#pragma once
// The order in which one pipeline stage runs its forward and backward passes, per schedule (the
// simulator chains a stage's ops in it; the estimate walks it for what a stage holds at once):
//   GPipe:        all m forwards, then all m backwards (Huang et al. 2019).
//   1F1B:         p - s - 1 warm-up forwards, then one forward / one backward, then the
//                 remaining backwards (PipeDream-Flush; Narayanan et al. 2021, Fig. 4 top).
//   interleaved:  v virtual stages per stage, micro-batches in groups of p, warm-up of
//                 (p - s - 1) * 2 + (v - 1) * p virtual-stage forwards (Narayanan et al. 2021, Fig. 4
//                 bottom; Megatron-LM's forward_backward_pipelining_with_interleaving).
#include <cstdint>
#include <functional>
#include <vector>

#include "sim/spec/plan.h"

namespace starfish {

struct PipelineOp {
  bool forward = true;
  int micro_batch = 0;
  int virtual_stage = 0;  // 0..v-1 on this stage; its global index is virtual_stage * p + stage
  bool operator==(const PipelineOp&) const = default;
};

// The ops of stage `stage` (0..p-1) of a p-stage pipeline with m micro-batches and v virtual
// stages. Every (micro-batch, virtual stage) appears once forward and once backward, forward first.
std::vector<PipelineOp> stage_order(Schedule schedule, int stages, int stage, int micro_batches, int virtual_stages);

// The most layers whose forward activations stage `stage` holds at once (forwards run, their
// backwards not yet), walking its order with each of its virtual stages' own layer counts
// (`layers_of(virtual_stage)`): where they differ in size (the embedding and loss slots, explicit
// layouts) which virtual stages are held at the peak decides it. After the warm-up the order
// repeats every p v ops of each kind, so one period of the steady state is walked.
double peak_held_layers(Schedule schedule, int stages, int stage, int64_t micro_batches, int virtual_stages,
                        const std::function<int(int)>& layers_of);

}  // namespace starfish

#pragma once
// A chunk-runtime plan's iteration in the event engine: the runtime (sim/chunk) walks the
// iteration through a SimBackend, so every move and ZeRO collective it decides becomes a task,
// in the order and with the overlap the executor would have. Two untimed iterations run first
// (the warm-up, then one that settles the optimizer-state placement); the third is simulated.
//
// PatrickStar has no gradient accumulation (grads overwrite the fp16 param chunks): each moment
// processes the rank's whole batch, i.e. global_batch / DP sequences at once.
#include <cstdint>
#include <vector>

#include "sim/chunk/iteration_driver.h"
#include "sim/des/engine.h"
#include "sim/report/report.h"
#include "sim/schedule/iteration.h"

namespace starfish::schedule {

// The iterations the runtime walks (and its move log covers): warm-up, settle (report.h's
// unsteady iterations), then the simulated one.
inline constexpr int kChunkedIterations = report::unsteady_iterations(true) + 1;

// (make_job guarantees the plan has no pipeline parallelism; iteration_builder_for picks this
// builder for a chunk-runtime plan.) Of the options, only fixed_non_model_bytes applies.
BuiltIteration build_chunked_iteration(const Job& job, des::Engine& engine, const BuildOptions& options = {});

// The non-model GPU bytes the simulator gives the runtime at the start of each step: the hidden
// states, the activations kept so far (the layer's own rebuilt in full under recompute) and the
// output layer's logits at the head.
std::vector<int64_t> chunked_non_model_bytes(const Job& job, const std::vector<Step>& steps);

}  // namespace starfish::schedule

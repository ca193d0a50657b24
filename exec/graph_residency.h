#pragma once
// When `plan.recompute: none` is safe with the chunk runtime. Without recompute a layer's
// autograd graph lives from its forward to its backward, and it holds views of the layer's
// parameter chunks (a linear keeps its weight for the input gradient). A chunk the runtime moves
// off the GPU tier in between (an eviction, or ZeRO dropping its copy of a chunk another rank
// owns after the last forward use) would then stay alive anyway, held by the graph: neither the
// CPU pool nor the CUDA caching allocator frees memory a tensor still references. The values
// would still be right, but the GPU tier would hold more than the runtime's budget, and the
// move would have saved nothing. So every chunk a layer's graph references must keep the very
// buffer it had in that layer's forward until that layer's backward. The embeddings are exempt:
// their segment is always recomputed (a lookup; its graph would save no parameter anyway).
//
// The runtime's decisions depend only on the layout, the options and the non-model bytes
// (sim/chunk/chunk_runtime.h), so running it on the reference backend predicts exactly what the
// executor will do: starfish-run refuses an unsafe plan before it trains, and the ChunkStore
// checks the same rule as it goes.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/chunk/chunk_runtime.h"
#include "sim/chunk/iteration_driver.h"
#include "sim/report/report.h"

namespace starfish::exec {

class GraphResidency {
 public:
  // `layers`: the model's transformer layers (step index L is the head).
  explicit GraphResidency(int layers) : layers_(layers) {}
  // Right after a forward step's access: records the buffers its graph will reference.
  void forward_accessed(const Step& step, const ChunkRuntime& rt);
  // Right after the matching backward step's access: the first chunk whose buffer changed
  // since its forward, as one sentence ("none keeps layer 2's autograd graph ... "), or nothing.
  std::optional<std::string> backward_accessed(const Step& step, const ChunkRuntime& rt) const;
  // Whether a forward step's graph is kept (every layer and the head; not the embeddings).
  static bool keeps_graph(const Step& step) { return step.index >= 0; }

 private:
  struct Held {
    int chunk = 0;
    uint64_t buffer = 0;
  };
  struct Layer {
    std::vector<Held> held;
    size_t moves_before = 0;  // the move log's length at the forward access
    int iteration = 0;
  };
  std::string what(int index) const;
  int layers_;
  std::vector<Layer> by_step_;  // by step index + 1
};

// Runs `iterations` iterations of the runtime on the reference backend (the executor's own
// decisions, move for move) and returns why recompute none would break, or nothing.
std::optional<std::string> predict_graph_residency(const ChunkLayout& layout, const RuntimeOptions& options, bool tied_embeddings,
                                                   int64_t non_model_bytes,
                                                   int iterations = report::unsteady_iterations(true) + 1);

}  // namespace starfish::exec

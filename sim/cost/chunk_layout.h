#pragma once
// Packs a model shard's parameter tensors, in order of first use, into chunks of one size
// (PatrickStar). Param chunks hold the working dtype (fp16/bf16, or fp32 without mixed
// precision); mirror chunks of the same capacity hold the optimizer's fp32 states one to one:
//   mixed precision + Adam: param (2 B, reused for the grads) + master 4 + momentum 4 + variance 4
//                            = 14 B/param;
//   fp32 + Adam:            param 4 + grad 4 (a separate chunk: the params are still needed
//                            after their grads exist) + momentum 4 + variance 4 = 16 B/param;
//   SGD (no moments):       param (+ master in mixed precision, + grad in fp32).
// Chunk ids are dense: param chunks 0..P-1, then one block of P per mirror kind.
#include <cstdint>
#include <string>
#include <vector>

#include "sim/cost/chunk_placement.h"
#include "sim/cost/params.h"
#include "sim/spec/dtype.h"
#include "sim/spec/model.h"
#include "sim/spec/plan.h"
#include "sim/spec/training.h"

namespace starfish {

enum class ChunkKind { param, grad, master, momentum, variance };
const char* to_string(ChunkKind k);

struct TensorPlace {
  int chunk = -1;               // param chunk holding the tensor (its grad/state mirrors share offsets)
  int64_t offset_elements = 0;  // first element within the chunk
  int64_t elements = 0;
};

struct Chunk {
  int id = 0;
  ChunkKind kind = ChunkKind::param;
  int param_chunk = 0;       // the param chunk this one mirrors (== id for param chunks)
  int64_t elements = 0;      // capacity
  int64_t used_elements = 0; // sum of its tensors' elements
  DType dtype = DType::fp16;
  int64_t bytes() const { return elements * bytes_of(dtype); }
};

struct LayoutOptions {
  int64_t chunk_elements = 0;
  DType dtype = DType::bf16;            // the training's compute dtype
  Optimizer optimizer = Optimizer::adam;
  int world = 1;  // ZeRO group size: param chunks padded to a multiple, each group one capacity
  static LayoutOptions of(const Training& t, int64_t chunk_elements, int world = 1) {
    return {chunk_elements, t.dtype, t.optimizer, world};
  }
};

class ChunkLayout {
 public:
  // Throws SpecError on a non-positive chunk size or world, or an empty tensor list.
  static ChunkLayout build(const std::vector<ParamTensor>& tensors, const LayoutOptions& options);

  const LayoutOptions& options() const { return options_; }
  const std::vector<ParamTensor>& tensors() const { return tensors_; }
  const std::vector<Chunk>& chunks() const { return chunks_; }
  const Chunk& chunk(int id) const { return chunks_[id]; }
  const TensorPlace& place(int tensor) const { return places_[tensor]; }
  int param_chunks() const { return param_chunks_; }
  // Tensors of a param chunk, by offset.
  const std::vector<int>& tensors_of(int param_chunk) const { return chunk_tensors_[param_chunk]; }
  // The kinds mirroring each param chunk (grad, master, momentum, variance as the training needs).
  const std::vector<ChunkKind>& mirror_kinds() const { return mirror_kinds_; }
  // The chunk of `kind` mirroring `param_chunk`; -1 when the training has none. For mixed
  // precision the grad chunk IS the param chunk (grads overwrite the fp16 params).
  int mirror(int param_chunk, ChunkKind kind) const;
  int grad_chunk(int param_chunk) const { return mirror(param_chunk, ChunkKind::grad); }
  bool mixed_precision() const { return mixed_; }

  int64_t param_elements() const { return param_elements_; }     // sum of tensor elements
  int64_t padding_elements() const { return padding_elements_; } // unused capacity of param chunks
  int64_t total_bytes() const;                                   // all chunks, all kinds
  int64_t waste_bytes() const;                                   // padding over all kinds
  double bytes_per_param() const;                                // of used elements, no padding
  double waste_fraction() const { return double(padding_elements_) / double(padding_elements_ + param_elements_); }

 private:
  LayoutOptions options_;
  bool mixed_ = true;
  std::vector<ParamTensor> tensors_;
  std::vector<TensorPlace> places_;
  std::vector<Chunk> chunks_;
  std::vector<std::vector<int>> chunk_tensors_;
  std::vector<ChunkKind> mirror_kinds_;
  int param_chunks_ = 0;
  int64_t param_elements_ = 0, padding_elements_ = 0;
};

// The tensors each forward step of an iteration uses, in order (sim/chunk/iteration_driver.h
// walks them forward, then backward in reverse): one step per layer (embeddings -1, the
// transformer layers, final norm + head L) in order of first appearance, the tensors in order of
// first use. A tied output head on the shard that holds the word embedding uses it again in the
// last step. The one home of that grouping: the runtime's steps and the footprint's working set.
struct LayerStep {
  int layer = 0;
  std::vector<int> tensors;
};
std::vector<LayerStep> forward_steps(const ChunkLayout& layout, bool tied_embeddings);

// The optimizer-state units of `param_chunks` (sim/cost/chunk_placement.h): each one's master,
// momentum and variance chunks, and its param chunk with its grad chunk in fp32 training.
std::vector<StateUnit> state_units(const ChunkLayout& layout, const std::vector<int>& param_chunks);

// What a layout puts on one data-parallel rank, by the chunk runtime's rules
// (sim/chunk/chunk_runtime.cpp): the one home of the rule the runtime's warm-up and the analytic
// tier's memory model (model_states) share.
//  - kept_param_elements: the param chunks' capacity the rank keeps between uses, padding
//    included: one chunk of each ZeRO group when `sharded` (every chunk of a group has the
//    group's largest capacity, ChunkLayout::build), every chunk otherwise. Each kept param chunk
//    carries its mirrors (grad in fp32 training, master, momentum, variance).
//  - moment_bytes: the most one moment's chunks take on the GPU: a gathered ZeRO group (world x
//    the largest param chunk, with its grad chunk in fp32 training) or the two largest chunks.
//  - units: the optimizer-state units the rank keeps, in the order the runtime places them
//    (state_units of its kept param chunks; alike on every rank: a ZeRO group's chunks share
//    one capacity).
//  - working_bytes: the ZeRO working set, the most remote chunks one step needs on the GPU
//    beside the rank's own: every chunk of each group a step's tensors touch (the runtime
//    gathers whole groups), and in backward the grad chunks of fp32 training; a layer that
//    straddles two groups gathers both. What the runtime traces in its warm-up iteration
//    (ChunkRuntime::place_states_after_warmup); 0 when not sharded.
//  - step_bytes: the most chunks, own and remote, one step needs on the GPU at once (the
//    runtime's minimum beside the non-model memory).
//  - cpu_embedding_*: the plan's CPU embedding, outside the chunks, on the host of every rank
//    (sim/cost/cpu_embedding.h; set by plan_chunk_footprint).
struct ChunkFootprint {
  int64_t kept_param_elements = 0;
  int64_t moment_bytes = 0;
  std::vector<StateUnit> units;
  int64_t working_bytes = 0;
  int64_t step_bytes = 0;
  int64_t cpu_embedding_elements = 0;
  int64_t cpu_embedding_host_bytes = 0;
};
ChunkFootprint chunk_footprint(const ChunkLayout& layout, bool sharded);

// The footprint's working_bytes and step_bytes, from the layout's steps (forward_steps).
struct ChunkWorkingSet {
  int64_t working_bytes = 0;
  int64_t step_bytes = 0;
};
ChunkWorkingSet chunk_working_set(const ChunkLayout& layout, bool sharded, bool tied_embeddings);

// Whether a chunked plan's chunks may spill to NVMe: only when the plan names NVMe for some
// state (PatrickStar keeps chunks on the GPU and the host alone, patrickstar/core/chunk_list.py;
// NVMe is Starfish's extension, asked for by the plan). Otherwise the plan's tiers do not bind
// the chunks: the runtime places them on the GPU and the host as room allows.
bool chunks_may_use_nvme(const Plan& plan);

// The parameter tensors a chunked plan's chunks hold: its one pipeline stage's shard, less the
// embeddings a CPU embedding keeps (sim/cost/cpu_embedding.h).
std::vector<ParamTensor> chunked_parameter_tensors(const Model& model, const Plan& plan);

// The layout a chunked plan's runtime builds on each rank (chunked_parameter_tensors; ZeRO groups
// of dp chunks when zero_stage >= 1, as the runtime shards then), and its footprint.
ChunkLayout plan_chunk_layout(const Model& model, const Training& training, const Plan& plan);
ChunkFootprint plan_chunk_footprint(const Model& model, const Training& training, const Plan& plan);

// Chunk size search (PatrickStar searches the size that wastes least): the chunk size in
// [min_elements, max_elements] (steps of step_elements) whose layout has the least padding
// among those whose model states fit `total_bytes` (GPU + CPU + NVMe for chunks) and whose two
// largest chunks fit `gpu_bytes` (a moment may span two chunks). Ties go to the larger chunk
// (fewer, larger moves). Throws SpecError naming the smallest need when no size fits.
struct ChunkSizeChoice {
  int64_t chunk_elements = 0;
  int64_t padding_elements = 0;
  int64_t waste_bytes = 0;
  int64_t total_bytes = 0;
  int candidates = 0;  // sizes evaluated
};
ChunkSizeChoice search_chunk_size(const std::vector<ParamTensor>& tensors, const LayoutOptions& base,
                                  int64_t min_elements, int64_t max_elements, int64_t step_elements,
                                  int64_t gpu_bytes, int64_t total_bytes);

}  // namespace starfish

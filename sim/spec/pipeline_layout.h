#pragma once
// The one home of how a plan's transformer layers are spread over its pipeline stages and
// virtual stages (Plan::stage_layers): every tier, the parameter shards and the search ask here.
#include <string>
#include <vector>

#include "sim/spec/plan.h"

namespace starfish {

// Why `layout` cannot spread `layers` over `pp` stages of `virtual_stages` chunks each, as
// "<field>: <reason>" pieces (field first, then the message), or an empty field when it can.
struct LayoutProblem {
  std::string field;    // "plan.stage_layers", "plan.first_stage_layers", ...; empty: no problem
  std::string message;
};
LayoutProblem check_stage_layout(int layers, int pp, int virtual_stages, const StageLayout& layout);

// Transformer layers of pipeline stage `stage` (0..pp-1). The layout must be valid.
int stage_layer_count(int layers, int pp, int virtual_stages, const StageLayout& layout, int stage);

// First layer and layer count of virtual stage `virtual_stage` (0..v-1) of `stage`. Virtual
// stages are numbered in the model's order virtual_stage * pp + stage (Megatron's interleaving);
// each holds its stage's layers / v, but for the first and last under the embedding and loss
// slots (StageLayout::slots). ("Chunk" is the chunk runtime's memory chunk only.)
struct LayerRange {
  int first = 0;
  int count = 0;
};
LayerRange virtual_stage_layer_range(int layers, int pp, int virtual_stages, const StageLayout& layout, int stage, int virtual_stage);
int virtual_stage_layer_count(int layers, int pp, int virtual_stages, const StageLayout& layout, int stage, int virtual_stage);

// Layers of stage `stage` (over its virtual stages) for which `counts(layer)` holds: its MoE
// layers, its sliding-window layers.
template <class Predicate>
int stage_layers_where(int layers, int pp, int virtual_stages, const StageLayout& layout, int stage, Predicate counts) {
  int n = 0;
  for (int v = 0; v < virtual_stages; ++v) {
    const LayerRange r = virtual_stage_layer_range(layers, pp, virtual_stages, layout, stage, v);
    for (int l = r.first; l < r.first + r.count; ++l) n += counts(l) ? 1 : 0;
  }
  return n;
}

// Layers of stage `stage` that run the plan's recomputation (Plan::recomputes_layer: under block
// recomputation the first recompute_layers of each virtual stage) and for which `counts(layer)` holds.
template <class Predicate>
int stage_recomputing_layers_where(int layers, const Plan& plan, int stage, Predicate counts) {
  int n = 0;
  for (int v = 0; v < plan.virtual_stages; ++v) {
    const LayerRange r = virtual_stage_layer_range(layers, plan.pp, plan.virtual_stages, plan.stage_layers, stage, v);
    for (int l = r.first; l < r.first + r.count; ++l) n += plan.recomputes_layer(l - r.first) && counts(l) ? 1 : 0;
  }
  return n;
}

// For each of the model's `layers`, whether it runs the plan's recomputation (in model order).
std::vector<bool> recomputing_layers(int layers, const Plan& plan);

// Layers of the most loaded stage, and of the most loaded virtual stage.
int max_stage_layers(int layers, int pp, int virtual_stages, const StageLayout& layout);
int max_virtual_stage_layers(int layers, int pp, int virtual_stages, const StageLayout& layout);

// Megatron-core's embedding and loss slots (StageLayout::slots) when they let pp x v virtual
// stages share the layers (126 layers over PP8 x VP8: 128 slots, 2 each); an even() layout when
// they do not.
StageLayout slot_stage_layout(int layers, int pp, int virtual_stages);

// The split the search proposes when pp does not divide the layers: Megatron-core's first/last
// layout with ceil(layers / pp) layers on each middle stage and the rest shared by the first and
// last stage (the lighter ends also carry the embedding and the LM head). Llama 3 405B: 126
// layers, PP16 -> 7 + 14 x 8 + 7. Even (no uneven layout) when pp divides the layers; an even()
// layout is also returned when no such split exists (a first or last stage would get no layer).
StageLayout balanced_stage_layout(int layers, int pp);

// "7/8x14/7": the layout as read in a summary ("" when even).
std::string stage_layout_text(int layers, int pp, int virtual_stages, const StageLayout& layout);

}  // namespace starfish

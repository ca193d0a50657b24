#include "sim/spec/pipeline_layout.h"

#include <algorithm>
#include <cstdint>
#include <utility>

namespace starfish {

namespace {

// Megatron-core's embedding and loss slots (get_num_layers_to_build): layers + slots over the
// pp x v virtual stages, one layer fewer in the first (last) one. Megatron lets that virtual
// stage hold no layer at all (a standalone embedding stage); Starfish's stages each run layers.
LayoutProblem check_slot_layout(int layers, int pp, int v, const StageLayout& s) {
  const char* field = s.embedding_slot ? "plan.embedding_in_pipeline_split" : "plan.loss_in_pipeline_split";
  if (s.first != 0 || s.last != 0 || !s.per_stage.empty())
    return {field, "Megatron-core counts the embedding and the loss as layers only for even stages; drop "
                   "first_stage_layers / last_stage_layers / stage_layers"};
  const int64_t slots = int64_t{layers} + s.embedding_slot + s.loss_slot;
  const int64_t virtual_stages = int64_t{pp} * v;
  if (slots % virtual_stages != 0)
    return {field, std::to_string(layers) + " layers + " + std::to_string(slots - layers) +
                       (slots - layers == 1 ? " slot" : " slots") + " (embedding, loss) = " + std::to_string(slots) +
                       " do not divide over pipeline_parallel " + std::to_string(pp) + " x virtual_stages " +
                       std::to_string(v)};
  if (slots / virtual_stages < 2)
    return {field, "the first or last virtual stage would hold no layer (" + std::to_string(slots) + " slots over " +
                       std::to_string(virtual_stages) + " virtual stages); Starfish's stages each run at least one"};
  return {};
}

// Layers of virtual stage `vs` of stage `stage` under the embedding and loss slots.
int slot_virtual_stage_layers(int layers, int pp, int v, const StageLayout& s, int stage, int vs) {
  const int per = (layers + s.embedding_slot + s.loss_slot) / (pp * v);
  return per - (s.embedding_slot && stage == 0 && vs == 0 ? 1 : 0) -
         (s.loss_slot && stage == pp - 1 && vs == v - 1 ? 1 : 0);
}

}  // namespace

LayoutProblem check_stage_layout(int layers, int pp, int v, const StageLayout& s) {
  if (s.slots()) return check_slot_layout(layers, pp, v, s);
  if (s.even()) {
    if (layers % (int64_t{pp} * v) != 0)
      return {v > 1 ? "plan.virtual_stages" : "plan.pipeline_parallel",
              "pipeline_parallel " + std::to_string(pp) + " x virtual_stages " + std::to_string(v) + " does not divide the " +
                  std::to_string(layers) + " layers"};
    return {};
  }
  auto divisible = [&](int count, const std::string& field) -> LayoutProblem {
    if (count % v != 0)
      return {field, std::to_string(count) + " layers on a stage do not divide over its " + std::to_string(v) +
                         " virtual stages"};
    return {};
  };
  if (!s.per_stage.empty()) {
    if (s.first != 0 || s.last != 0)
      return {"plan.stage_layers", "give either stage_layers or first_stage_layers / last_stage_layers, not both"};
    if (static_cast<int64_t>(s.per_stage.size()) != pp)
      return {"plan.stage_layers", "lists " + std::to_string(s.per_stage.size()) + " stages but pipeline_parallel is " +
                                       std::to_string(pp)};
    int64_t sum = 0;
    for (int n : s.per_stage) {
      if (n < 1) return {"plan.stage_layers", "every stage needs at least one layer, got " + std::to_string(n)};
      if (LayoutProblem d = divisible(n, "plan.stage_layers"); !d.field.empty()) return d;
      sum += n;
    }
    if (sum != layers)
      return {"plan.stage_layers", "the stages hold " + std::to_string(sum) + " layers in all, not the model's " +
                                       std::to_string(layers)};
    return {};
  }
  if (pp < 2)
    return {s.first ? "plan.first_stage_layers" : "plan.last_stage_layers",
            "uneven stages need pipeline_parallel >= 2"};
  int64_t rest = layers, stages_left = pp;
  for (const auto& [count, field] : {std::pair{s.first, "plan.first_stage_layers"}, std::pair{s.last, "plan.last_stage_layers"}}) {
    if (count == 0) continue;
    if (LayoutProblem d = divisible(count, field); !d.field.empty()) return d;
    rest -= count;
    --stages_left;
  }
  const char* field = s.first ? "plan.first_stage_layers" : "plan.last_stage_layers";
  if (rest < stages_left || (stages_left == 0 && rest != 0))
    return {field, "leaves " + std::to_string(rest) + " of the " + std::to_string(layers) + " layers for the other " + std::to_string(stages_left) +
                       " stages, which need at least one each"};
  if (stages_left > 0 && rest % stages_left != 0)
    return {field, "leaves " + std::to_string(rest) + " of the " + std::to_string(layers) + " layers, which do not divide evenly over the other " +
                       std::to_string(stages_left) + " stages"};
  if (stages_left > 0) return divisible(static_cast<int>(rest / stages_left), field);
  return {};
}

int stage_layer_count(int layers, int pp, int /*virtual_stages*/, const StageLayout& s, int stage) {
  if (s.slots())
    return (layers + s.embedding_slot + s.loss_slot) / pp - (s.embedding_slot && stage == 0 ? 1 : 0) -
           (s.loss_slot && stage == pp - 1 ? 1 : 0);
  if (!s.per_stage.empty()) return s.per_stage[static_cast<size_t>(stage)];
  if (s.first != 0 && stage == 0) return s.first;
  if (s.last != 0 && stage == pp - 1) return s.last;
  if (s.even()) return layers / pp;
  const int ends = (s.first != 0) + (s.last != 0);
  return (layers - s.first - s.last) / (pp - ends);
}

int virtual_stage_layer_count(int layers, int pp, int v, const StageLayout& s, int stage, int virtual_stage) {
  if (s.slots()) return slot_virtual_stage_layers(layers, pp, v, s, stage, virtual_stage);
  return stage_layer_count(layers, pp, v, s, stage) / v;
}

LayerRange virtual_stage_layer_range(int layers, int pp, int v, const StageLayout& s, int stage, int virtual_stage) {
  const int count = virtual_stage_layer_count(layers, pp, v, s, stage, virtual_stage);
  if (s.slots()) {
    // Every virtual stage holds `per` but the model's first (one fewer under the embedding's
    // slot) and last, which has none after it.
    const int per = (layers + s.embedding_slot + s.loss_slot) / (pp * v);
    const int before = virtual_stage * pp + stage;  // virtual stages before this one in model order
    return {per * before - (s.embedding_slot && before > 0 ? 1 : 0), count};
  }
  // Virtual stages before this one in model order: every stage's first `virtual_stage`, and
  // this one's round on the stages before `stage`.
  int first = 0;
  for (int st = 0; st < pp; ++st) {
    const int per_virtual_stage = stage_layer_count(layers, pp, v, s, st) / v;
    first += per_virtual_stage * virtual_stage + (st < stage ? per_virtual_stage : 0);
  }
  return {first, count};
}

std::vector<bool> recomputing_layers(int layers, const Plan& plan) {
  std::vector<bool> out(static_cast<size_t>(layers), false);
  for (int stage = 0; stage < plan.pp; ++stage)
    for (int v = 0; v < plan.virtual_stages; ++v) {
      const LayerRange r = virtual_stage_layer_range(layers, plan.pp, plan.virtual_stages, plan.stage_layers, stage, v);
      for (int l = r.first; l < r.first + r.count; ++l) out[static_cast<size_t>(l)] = plan.recomputes_layer(l - r.first);
    }
  return out;
}

int max_stage_layers(int layers, int pp, int v, const StageLayout& s) {
  int most = 0;
  for (int st = 0; st < pp; ++st) most = std::max(most, stage_layer_count(layers, pp, v, s, st));
  return most;
}

int max_virtual_stage_layers(int layers, int pp, int v, const StageLayout& s) {
  int most = 0;
  for (int st = 0; st < pp; ++st)
    for (int vs = 0; vs < v; ++vs) most = std::max(most, virtual_stage_layer_count(layers, pp, v, s, st, vs));
  return most;
}

StageLayout slot_stage_layout(int layers, int pp, int v) {
  StageLayout out;
  out.embedding_slot = out.loss_slot = true;
  if (pp < 2 || !check_stage_layout(layers, pp, v, out).field.empty()) return {};
  return out;
}

StageLayout balanced_stage_layout(int layers, int pp) {
  StageLayout out;
  if (pp < 2 || layers % pp == 0) return out;
  const int middle = (layers + pp - 1) / pp;
  const int ends = layers - (pp - 2) * middle;
  if (ends < 2) return out;
  out.first = ends / 2;
  out.last = ends - out.first;
  return out;
}

std::string stage_layout_text(int layers, int pp, int v, const StageLayout& s) {
  if (s.even()) return "";
  std::string text;
  int prev = -1, run = 0;
  auto flush = [&] {
    if (run == 0) return;
    text += (text.empty() ? "" : "/") + std::to_string(prev) + (run > 1 ? "x" + std::to_string(run) : "");
  };
  for (int st = 0; st < pp; ++st) {
    const int n = stage_layer_count(layers, pp, v, s, st);
    if (n == prev) {
      ++run;
      continue;
    }
    flush();
    prev = n;
    run = 1;
  }
  flush();
  return text;
}

}  // namespace starfish

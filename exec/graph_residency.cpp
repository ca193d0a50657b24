#include "exec/graph_residency.h"

#include <algorithm>

#include "sim/chunk/reference_backend.h"

namespace starfish::exec {

std::string GraphResidency::what(int index) const {
  return index >= layers_ ? std::string("the head's") : "layer " + std::to_string(index) + "'s";
}

void GraphResidency::forward_accessed(const Step& step, const ChunkRuntime& rt) {
  if (!keeps_graph(step)) return;
  const size_t slot = static_cast<size_t>(step.index + 1);
  if (by_step_.size() <= slot) by_step_.resize(slot + 1);
  Layer& l = by_step_[slot];
  l.held.clear();
  for (int t : step.tensors) {
    const int c = rt.where(t).chunk;
    if (std::none_of(l.held.begin(), l.held.end(), [&](const Held& h) { return h.chunk == c; }))
      l.held.push_back(Held{c, rt.buffer(c).id});
  }
  l.moves_before = rt.moves().size();
  l.iteration = rt.iteration();
}

std::optional<std::string> GraphResidency::backward_accessed(const Step& step, const ChunkRuntime& rt) const {
  if (!keeps_graph(step)) return std::nullopt;
  const size_t slot = static_cast<size_t>(step.index + 1);
  if (slot >= by_step_.size()) return std::nullopt;
  const Layer& l = by_step_[slot];
  for (const Held& h : l.held) {
    if (rt.buffer(h.chunk).id == h.buffer) continue;
    const std::string head = "none keeps " + what(step.index) + " autograd graph, which holds views of parameter chunk " +
                             std::to_string(h.chunk) + ", from its forward to its backward, but ";
    const std::string it = " (iteration " + std::to_string(l.iteration);
    const std::vector<Move>& moves = rt.moves();
    for (size_t i = l.moves_before; i < moves.size(); ++i) {
      const Move& m = moves[i];
      if (m.chunk == h.chunk && m.op == "copy" && m.from == Tier::gpu && m.to != Tier::gpu)
        return head + "the chunk runtime moves that chunk to the " + to_string(m.to) + " tier in between" + it + ", moment " +
               std::to_string(m.moment) + ", " + to_string(m.reason) +
               "): the GPU budget does not hold every chunk; use recompute: full, or a GPU budget that holds every chunk";
    }
    if (!rt.zero().keeps(h.chunk))
      return head + "ZeRO drops this rank's copy of it (rank " + std::to_string(rt.zero().owner(h.chunk)) +
             " of the data-parallel group owns it) after its last forward use" + it +
             "); use recompute: full, or zero_stage: 0";
    return head + "the chunk runtime moves that chunk off the GPU tier in between" + it + "); use recompute: full";
  }
  return std::nullopt;
}

namespace {

class ResidencyHooks final : public StepHooks {
 public:
  ResidencyHooks(int layers, int64_t non_model) : residency_(layers), non_model_(non_model) {}
  int64_t non_model_bytes(const Step&, int) override { return non_model_; }
  void compute(const Step& s, const ChunkRuntime& rt) override {
    if (broken_) return;
    if (s.phase == Phase::forward) residency_.forward_accessed(s, rt);
    else if (s.phase == Phase::backward) broken_ = residency_.backward_accessed(s, rt);
  }
  const std::optional<std::string>& broken() const { return broken_; }

 private:
  GraphResidency residency_;
  int64_t non_model_;
  std::optional<std::string> broken_;
};

}  // namespace

std::optional<std::string> predict_graph_residency(const ChunkLayout& layout, const RuntimeOptions& options, bool tied_embeddings,
                                                   int64_t non_model_bytes, int iterations) {
  int layers = 0;
  for (const ParamTensor& t : layout.tensors()) layers = std::max(layers, t.layer);  // the head's tensors are at layer L
  RuntimeOptions o = options;
  o.record_moves = true;  // the explanation names the move
  ReferenceBackend backend;
  ChunkRuntime rt(layout, o, backend);
  IterationDriver driver(rt, tied_embeddings);
  ResidencyHooks hooks(layers, non_model_bytes);
  // Warm-up, settle and steady (report::unsteady_iterations): later iterations repeat the first
  // steady one (the runtime decides from the warm-up's trace).
  for (int i = 0; i < iterations && !hooks.broken(); ++i) driver.run_iteration(hooks);
  return hooks.broken();
}

}  // namespace starfish::exec

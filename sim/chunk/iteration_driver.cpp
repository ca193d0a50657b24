#include "sim/chunk/iteration_driver.h"

namespace starfish {
namespace {

// Sets each tensor's release state: `last` at its final use within `steps`, HOLD before.
void mark_last_uses(std::vector<Step>& steps, size_t begin, size_t end, TensorState last, size_t tensor_count) {
  std::vector<long> final_step(tensor_count, -1);
  for (size_t s = begin; s < end; ++s)
    for (int t : steps[s].tensors) final_step[t] = static_cast<long>(s);
  for (size_t s = begin; s < end; ++s) {
    steps[s].release_to.clear();
    for (int t : steps[s].tensors)
      steps[s].release_to.push_back(final_step[t] == static_cast<long>(s) ? last : TensorState::hold);
  }
}

}  // namespace

std::vector<Step> iteration_steps(const ChunkLayout& layout, bool tied, const std::vector<int>& optimizer_chunks) {
  const auto& tensors = layout.tensors();
  const std::vector<LayerStep> forward = forward_steps(layout, tied);
  std::vector<Step> steps;
  for (const LayerStep& f : forward) steps.push_back(Step{Phase::forward, f.layer, f.tensors, {}});
  const size_t forward_end = steps.size();
  for (auto it = forward.rbegin(); it != forward.rend(); ++it) {
    std::vector<int> reversed(it->tensors.rbegin(), it->tensors.rend());  // backward meets a layer's tensors last-first
    steps.push_back(Step{Phase::backward, it->layer, reversed, {}});
  }
  const size_t backward_end = steps.size();
  mark_last_uses(steps, 0, forward_end, TensorState::hold_after_fwd, tensors.size());
  mark_last_uses(steps, forward_end, backward_end, TensorState::hold_after_bwd, tensors.size());
  for (int c : optimizer_chunks)
    if (!layout.tensors_of(c).empty()) steps.push_back(Step{Phase::optimizer, c, {}, {}});
  return steps;
}

IterationDriver::IterationDriver(ChunkRuntime& runtime, bool tied)
    : runtime_(&runtime), steps_(iteration_steps(runtime.layout(), tied, runtime.optimizer_chunks())) {}

void IterationDriver::run_iteration(StepHooks& hooks) {
  ChunkRuntime& rt = *runtime_;
  rt.begin_iteration();
  for (size_t i = 0; i < steps_.size(); ++i) {
    const Step& s = steps_[i];
    rt.enter_moment(s.signature(), hooks.non_model_bytes(s, static_cast<int>(i)));
    if (s.phase == Phase::optimizer) {
      const OptimizerWork work = rt.begin_optimizer(s.index);
      hooks.optimizer_step(s, work);
      hooks.after(s, rt);
      rt.end_optimizer(s.index);
    } else {
      rt.access(s.tensors);
      hooks.compute(s, rt);
      hooks.after(s, rt);
      // Tensors used again later in this pass go back to HOLD first, then the rest end.
      std::vector<int> again, done;
      for (size_t k = 0; k < s.tensors.size(); ++k)
        (s.release_to[k] == TensorState::hold ? again : done).push_back(s.tensors[k]);
      if (!again.empty()) rt.release(again, TensorState::hold);
      if (!done.empty()) rt.release(done, s.phase == Phase::forward ? TensorState::hold_after_fwd : TensorState::hold_after_bwd);
    }
    rt.end_moment();
  }
  rt.end_iteration();
}

}  // namespace starfish

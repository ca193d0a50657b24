#include "sim/schedule/chunked_iteration.h"

#include <algorithm>
#include <string>
#include <vector>

#include "sim/chunk/iteration_driver.h"
#include "sim/chunk/runtime_config.h"
#include "sim/cost/cpu_embedding.h"
#include "sim/cost/framework.h"
#include "sim/cost/memory.h"
#include "sim/schedule/layer_costs.h"
#include "sim/schedule/sim_backend.h"

namespace starfish::schedule {
namespace {

// The whole per-rank batch in one pass (see the header).
Job whole_batch(const Job& job) {
  Job whole = job;
  whole.plan.micro_batch = static_cast<int>(job.training.global_batch / job.dp());
  return whole;
}

LayerCosts whole_batch_costs(const Job& job) { return layer_costs(whole_batch(job)); }

ChunkedStepActivations whole_batch_steps(const Job& job) {
  const Job whole = whole_batch(job);
  const int64_t act_bytes = bytes_of(job.training.dtype);
  return chunked_step_activations(whole.model, whole.plan, act_bytes, plan_layer_activations(whole.model, whole.plan, act_bytes));
}

int64_t step_non_model_bytes(const ChunkedStepActivations& a, const Step& s) {
  if (s.phase == Phase::optimizer) return static_cast<int64_t>(a.boundary_bytes);
  return static_cast<int64_t>(chunked_step_non_model_bytes(a, s.phase == Phase::forward, s.index));
}

class SimHooks final : public StepHooks {
 public:
  SimHooks(const Job& job, des::Engine& eng, SimBackend& backend, BuiltIteration& out, const LayerCosts& costs,
           int64_t fixed_non_model)
      : job_(job), eng_(eng), backend_(backend), out_(out), c_(costs), steps_(whole_batch_steps(job)),
        stage_(out.stages.front()), fixed_(fixed_non_model) {
    tp_group_ = eng_.group(stage_.tp_group);
    embedding_ = cpu_embedding_costs(job.model, job.cluster, job.training, job.plan);
  }
  void set_first_optimizer_chunk(const std::vector<Step>& steps) {
    for (const Step& s : steps)
      if (s.phase == Phase::optimizer) { first_optimizer_chunk_ = s.index; return; }
  }

  int64_t non_model_bytes(const Step& s, int) override {
    non_model_ = fixed_ >= 0 ? fixed_ : step_non_model_bytes(steps_, s);
    return non_model_;
  }

  void compute(const Step& s, const ChunkRuntime& rt) override {
    const bool fwd = s.phase == Phase::forward;
    const double grads_s = fwd ? 0 : grads_into_chunks_s(s, rt.layout());  // tracked while not recording too
    if (fwd) grad_written_.assign(rt.layout().tensors().size(), 0);
    if (!backend_.recording()) return;
    const int L = job_.model.layers, lead = stage_.lead_gpu;
    double duration = grads_s;
    if (s.index >= L) duration += fwd ? output_forward_s(c_.output_s) : output_backward_s(c_.output_s);
    else if (s.index >= 0) duration += fwd ? c_.layer.forward_s : c_.layer.backward_s;
    const std::string name = std::string(fwd ? "F" : "B") + " L" + std::to_string(s.index);
    // A recomputed layer's forward runs again first, as its own task (the report's recompute).
    // The executor recomputes the output layer too (exec/segment_function.cpp: with recompute
    // full every segment but the embedding lookup keeps only its input), and its forward is a
    // third of output_s (the split above).
    double recompute_s = 0;
    if (!fwd && s.index >= 0 && s.index < L) recompute_s = c_.layer.recompute_s;
    else if (!fwd && s.index >= L && job_.plan.recompute == Recompute::full) recompute_s = output_forward_s(c_.output_s);
    const bool recompute = recompute_s > 0;
    if (recompute)
      backend_.append_compute(eng_.compute(lead, recompute_s, des::Label{out_.recompute, "R L" + std::to_string(s.index)}));
    const des::TaskId t = eng_.compute(lead, duration, des::Label{fwd ? out_.fwd : out_.bwd, name});
    if (fwd && s.index == first_layer(rt.layout())) cpu_embedding_forward();
    if (recompute) backend_.continue_compute(t);
    else backend_.append_compute(t);
    if (stage_.first_task == des::kNone) stage_.first_task = t;
    if (!fwd) stage_.last_backward = t;
    last_task_ = t;
    if (job_.plan.tp > 1 && s.index >= 0 && s.index < L) {
      const double bytes = c_.tp_bytes * (!fwd && job_.plan.recompute == Recompute::full ? 2 : 1);
      last_task_ = eng_.collective(CollectiveKind::all_reduce, tp_group_, bytes, des::Label{out_.tp, "tp " + name});
      backend_.append_compute(last_task_);
      if (!fwd) stage_.last_backward = last_task_;
    }
    if (!fwd && s.index == first_layer(rt.layout())) cpu_embedding_backward();
  }

  void optimizer_step(const Step& s, const OptimizerWork& w) override {
    if (!backend_.recording()) return;
    if (s.index == first_optimizer_chunk_ && embedding_.elements > 0) {  // the replica's CPU Adam, first
      backend_.append_compute(eng_.delay(embedding_.optimizer_s, des::Label{out_.optimizer, "cpu embedding adam"}, cpu_stream()));
    }
    const double params = static_cast<double>(w.param.bytes) / c_.act_bytes;
    const std::string name = "adam chunk " + std::to_string(s.index);
    des::TaskId t;
    if (w.tier == Tier::gpu) {
      t = eng_.compute(stage_.lead_gpu, gpu_optimizer_step_time_s(job_.cluster.node.gpu, job_.training, job_.plan, params),
                       des::Label{out_.optimizer, name});
    } else {
      // CPU Adam; the node's GPUs all step at once, sharing the host's throughput.
      t = eng_.delay(cpu_adam_time_s(job_.cluster.node.host, params * job_.cluster.node.gpus), des::Label{out_.optimizer, name},
                     cpu_stream());
    }
    backend_.append_compute(t);
    last_task_ = t;
  }

  void after(const Step&, ChunkRuntime& rt) override {
    if (!backend_.recording()) return;
    const double level = static_cast<double>(rt.in_use(Tier::gpu) + non_model_);
    stage_.memory.push_back({last_task_, level - level_});
    level_ = level;
    cpu_peak_ = std::max(cpu_peak_, static_cast<double>(rt.in_use(Tier::cpu)));
    nvme_peak_ = std::max(nvme_peak_, static_cast<double>(rt.in_use(Tier::nvme)));
  }

  double cpu_peak() const { return cpu_peak_; }
  double nvme_peak() const { return nvme_peak_; }

 private:
  des::ResourceId cpu_stream() {
    if (cpu_stream_ == des::kNone) cpu_stream_ = eng_.add_stream("cpu adam n0", 0);
    return cpu_stream_;
  }
  int first_layer(const ChunkLayout& layout) {
    if (first_layer_ == INT32_MAX)
      for (const ParamTensor& t : layout.tensors()) first_layer_ = std::min(first_layer_, t.layer);
    return first_layer_;
  }
  // PatrickStar's CPU embedding (sim/cost/cpu_embedding.h), serial with the GPU's stream as its
  // autograd functions are: the lookup on the host and its output's copy to the GPU before the
  // first layer; after the first layer's backward, the gradient's copy back, the dense backward
  // and Gloo's all-reduce on the host (the post-backward hook waits for it: async_op=False). Like
  // the CPU Adam steps after them: host work the GPU waits for, not part of the backward window.
  void cpu_embedding_forward() {
    if (embedding_.elements == 0) return;
    backend_.append_compute(eng_.delay(embedding_.lookup_s, des::Label{out_.fwd, "F cpu embedding"}, cpu_stream()));
    backend_.append_compute(eng_.copy(stage_.lead_gpu, des::CopyDir::H2D, embedding_.to_gpu_bytes,
                                      des::Label{out_.offload, "cpu embedding output"}));
  }
  void cpu_embedding_backward() {
    if (embedding_.elements == 0) return;
    backend_.append_compute(eng_.copy(stage_.lead_gpu, des::CopyDir::D2H, embedding_.to_host_bytes,
                                      des::Label{out_.offload, "cpu embedding grad"}));
    backend_.append_compute(eng_.delay(embedding_.backward_s, des::Label{out_.bwd, "B cpu embedding"}, cpu_stream()));
    last_task_ = eng_.delay(embedding_.all_reduce_s, des::Label{out_.dp, "cpu embedding all-reduce (gloo)"}, cpu_stream());
    backend_.append_compute(last_task_);
  }

  // A backward step's gradients go into their grad chunks as the executor's chunk store puts
  // them (exec/chunk_store.cpp, accumulate_grad): the first gradient of a tensor in an
  // iteration is copied (read, write), a later one (the tied embedding's second use) added
  // (read two, write one). A memory-bound pass over the step's parameters, inside backward.
  double grads_into_chunks_s(const Step& s, const ChunkLayout& layout) {
    if (grad_written_.size() != layout.tensors().size()) grad_written_.assign(layout.tensors().size(), 0);
    double bytes = 0;
    for (int t : s.tensors) {
      const double grad_bytes = static_cast<double>(layout.tensors()[static_cast<size_t>(t)].elements) * c_.act_bytes;
      bytes += (grad_written_[static_cast<size_t>(t)] ? 3 : 2) * grad_bytes;
      grad_written_[static_cast<size_t>(t)] = 1;
    }
    return memory_bound_time_s(job_.cluster.node.gpu, bytes);
  }

  const Job& job_;
  des::Engine& eng_;
  SimBackend& backend_;
  BuiltIteration& out_;
  const LayerCosts& c_;
  const ChunkedStepActivations steps_;
  StageInfo& stage_;
  des::GroupId tp_group_ = 0;
  des::ResourceId cpu_stream_ = des::kNone;
  CpuEmbeddingCosts embedding_;
  int first_layer_ = INT32_MAX;
  int first_optimizer_chunk_ = -1;
  des::TaskId last_task_ = des::kNone;
  int64_t fixed_ = -1;
  int64_t non_model_ = 0;
  double level_ = 0, cpu_peak_ = 0, nvme_peak_ = 0;
  std::vector<char> grad_written_;  // per layout tensor: its gradient is in its grad chunk this iteration
};

}  // namespace

BuiltIteration build_chunked_iteration(const Job& job, des::Engine& eng, const BuildOptions& options) {
  BuiltIteration out;
  intern_categories(eng, out);
  StageInfo stage;
  stage.lead_gpu = 0;
  for (int t = 0; t < job.plan.tp; ++t) stage.tp_group.push_back(t);
  out.stages.push_back(stage);

  const LayerCosts costs = whole_batch_costs(job);

  const ChunkPlan cp = chunk_plan(job, 0);
  SimBackend backend(eng, 0, 0, SimBackendCategories{out.offload, out.dp});
  ChunkRuntime runtime(cp.layout, cp.options, backend);
  IterationDriver driver(runtime, cp.tied_embeddings);
  SimHooks hooks(job, eng, backend, out, costs, options.fixed_non_model_bytes);
  hooks.set_first_optimizer_chunk(driver.steps());
  // The warm-up records the trace and then places the optimizer states; the iteration after it
  // still pays for that placement (chunks left where the warm-up's optimizer step ran). The
  // third iteration is the steady state, and the one simulated.
  for (int i = 1; i < kChunkedIterations; ++i) driver.run_iteration(hooks);
  backend.start_recording();
  driver.run_iteration(hooks);
  out.moves = runtime.moves();
  // Each rank's CPU embedding (fp32 tables, gradients, moments) beside its chunks on the host.
  out.cpu_bytes_per_node =
      (hooks.cpu_peak() + static_cast<double>(cpu_embedding_host_bytes(job.model, job.training, job.plan))) * job.cluster.node.gpus;
  out.nvme_bytes_per_node = hooks.nvme_peak() * job.cluster.node.gpus;
  return out;
}

std::vector<int64_t> chunked_non_model_bytes(const Job& job, const std::vector<Step>& steps) {
  const ChunkedStepActivations a = whole_batch_steps(job);
  std::vector<int64_t> out;
  for (const Step& s : steps) out.push_back(step_non_model_bytes(a, s));
  return out;
}

}  // namespace starfish::schedule

#pragma once
// Parameters, gradients and optimizer states in the chunk runtime's chunks (sim/chunk), moved
// by the Torch Backend. The GPT's accesses and releases are the iteration driver's steps, in
// order: forward per layer, backward per layer in reverse (each SegmentNode's backward), then
// one optimizer moment per param chunk this rank keeps, run where its states live. Every move
// and every ZeRO collective is the runtime's decision, so the move log equals the reference
// backend's for the same plan, budget and non-model bytes. One micro-batch per rank per
// iteration (the runtime's moments are one forward and one backward pass).
// A plan's CPU embedding (sim/cost/cpu_embedding.h, PatrickStar's use_cpu_embedding) keeps the
// word and position embeddings out of the layout: fp32 tables with fp32 gradients and Adam
// moments in host memory, replicated on every rank, looked up on the CPU, their gradients summed
// over the ranks in reduce_gradients (Gloo) and stepped before the chunks' optimizer moments;
// the runtime sees no moment for them, as in the simulator.
#include <memory>
#include <vector>

#include "exec/gpt_model.h"
#include "exec/graph_residency.h"
#include "exec/torch_backend.h"
#include "exec/trainable_store.h"
#include "sim/chunk/chunk_runtime.h"
#include "sim/chunk/iteration_driver.h"
#include "sim/chunk/runtime_config.h"

namespace starfish::exec {

struct ChunkStoreOptions {
  int64_t chunk_elements = 0;
  RuntimeOptions runtime;          // budget, eviction, prefetch, ZeRO mode and DP group
  int64_t non_model_bytes = 0;     // per moment, the same for every moment (see report)
};

class ChunkStore : public TrainableStore {
 public:
  // Builds the layout from the GPT's tensors and the training (dtype, optimizer), makes the
  // runtime and writes the initial values into the chunks this rank keeps.
  ChunkStore(const Gpt& gpt, const Training& training, ChunkStoreOptions options, TorchBackend& backend, uint64_t seed);
  // From the layout and options sim/chunk/runtime_config.h's chunk_plan() makes for a Job: the
  // very inputs the simulator's runtime gets for the same plan and budget.
  ChunkStore(const Gpt& gpt, ChunkPlan plan, int64_t non_model_bytes, TorchBackend& backend, uint64_t seed);
  ~ChunkStore() override;

  void access(const std::vector<std::string>& names, Pass pass) override;
  at::Tensor param(const std::string& name) override;
  void accumulate_grad(const std::string& name, const at::Tensor& grad) override;
  void release(const std::vector<std::string>& names, Pass pass) override;
  at::Device device() const override { return backend_.compute_device(); }
  // recompute none: checks, at each backward access, that the runtime kept every chunk the
  // layer's graph references in the buffer it had in forward (exec/graph_residency.h); throws
  // SpecError naming plan.recompute at the first that moved. starfish-run predicts this before
  // it trains (predict_graph_residency), so there this is a guard.
  void hold_graphs(bool on) override;

  // The runtime reduces each chunk at its last backward use; this sums the CPU embedding's.
  void reduce_gradients(Comm& comm) override;
  bool sharded() const override { return runtime_->zero().sharded(); }
  double grad_square_sum() override;
  void optimizer_step(const OptimizerConfig& config, int64_t step, double clip) override;
  void skip_optimizer_step() override;
  void zero_grad() override {}  // a gradient's first write of an iteration overwrites
  std::vector<std::pair<std::string, at::Tensor>> gather_values(Comm& comm) override;
  std::vector<std::pair<std::string, at::Tensor>> save_state() override;
  void load_state(const std::vector<std::pair<std::string, at::Tensor>>& state) override;

  const ChunkLayout& layout() const { return *layout_; }
  const ChunkRuntime& runtime() const { return *runtime_; }

 private:
  struct HostTensor {  // a CPU embedding's table, fp32, with its gradient and Adam moments
    at::Tensor value, grad, exp_avg, exp_avg_sq;
    bool grad_written = false;
  };
  void step_host_tensors(const OptimizerConfig& config, int64_t step, double clip);
  const GptParam& gpt_param(int tensor) const { return gpt_.params()[gpt_index_[tensor]]; }
  void run_optimizer_phase(const OptimizerConfig* config, int64_t step, double clip);  // config null: skip
  int tensor_index(const std::string& name) const;
  at::Tensor view(int chunk, int64_t offset_elements, int64_t elements) const;  // typed, GPU/CPU tier
  at::ScalarType chunk_type(int chunk) const;
  void begin_if_needed();
  void init(uint64_t seed);  // after layout_ and options_ are set

  const Gpt& gpt_;
  ChunkStoreOptions options_;
  TorchBackend& backend_;
  std::unique_ptr<ChunkLayout> layout_;
  std::unique_ptr<ChunkRuntime> runtime_;
  std::vector<Step> steps_;
  std::map<std::string, int> index_;
  std::vector<int> gpt_index_;                 // layout tensor -> the GPT's parameter
  bool cpu_embedding_ = false;
  std::map<std::string, HostTensor> host_;     // the CPU embedding's tensors, by name
  bool host_access_ = false;                   // the current access is of host tensors alone
  std::vector<char> grad_written_;
  size_t cursor_ = 0;
  bool in_iteration_ = false;
  std::unique_ptr<GraphResidency> residency_;  // set while graphs are held
};

}  // namespace starfish::exec

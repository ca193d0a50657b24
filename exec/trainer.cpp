#include "exec/trainer.h"

#include <time.h>

#include <chrono>
#include <cmath>

#include <torch/torch.h>

#include "exec/dist.h"
#include "exec/segment_function.h"
#include "sim/spec/error.h"

namespace starfish::exec {
namespace {

double thread_cpu_seconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Selective recompute (Korthikanti et al.: only the attention core) is a cost-model choice the
// executor does not implement; running it as full or none would train something else than the
// plan says.
void check_recompute(const Plan& p) {
  if (p.recompute == Recompute::selective)
    throw SpecError("plan.recompute: starfish-run recomputes whole layers (full) or nothing (none), not selective");
}

// recompute: full in plain LibTorch, the way torch.utils.checkpoint does it: forward without a
// graph, backward recomputes the segment with one over its leaf parameters, whose gradients
// autograd then accumulates into their .grad as usual.
struct CheckpointedSegment : torch::autograd::Function<CheckpointedSegment> {
  static torch::autograd::Variable forward(torch::autograd::AutogradContext* ctx, const Gpt* gpt, int64_t segment,
                                           const at::Tensor& input, const at::Tensor& targets, at::TensorList params) {
    ctx->saved_data["gpt"] = reinterpret_cast<int64_t>(gpt);
    ctx->saved_data["segment"] = segment;
    std::vector<at::Tensor> all{input, targets};
    all.insert(all.end(), params.begin(), params.end());
    ctx->save_for_backward(all);
    return gpt->forward_segment(static_cast<int>(segment), input, params.vec(), targets);
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx, torch::autograd::variable_list grad_out) {
    const auto* gpt = reinterpret_cast<const Gpt*>(ctx->saved_data["gpt"].toInt());
    const int segment = static_cast<int>(ctx->saved_data["segment"].toInt());
    const torch::autograd::variable_list saved = ctx->get_saved_variables();
    const bool input_has_grad = saved[0].is_floating_point();
    torch::autograd::variable_list wrt, params;
    for (size_t i = 2; i < saved.size(); ++i) params.push_back(saved[i].detach().requires_grad_(true));
    const at::Tensor x = input_has_grad ? saved[0].detach().requires_grad_(true) : saved[0];
    torch::autograd::variable_list grads;
    {
      at::AutoGradMode enable(true);
      const at::Tensor out = gpt->forward_segment(segment, x, params, saved[1]);
      wrt = params;
      if (input_has_grad) wrt.push_back(x);
      grads = torch::autograd::grad({out}, wrt, {grad_out[0]}, false, false, /*allow_unused=*/true);
    }
    // One gradient per forward input: gpt and segment (none), input, targets (none), params.
    torch::autograd::variable_list result{at::Tensor(), at::Tensor(), input_has_grad ? grads.back() : at::Tensor(), at::Tensor()};
    result.insert(result.end(), grads.begin(), grads.begin() + static_cast<std::ptrdiff_t>(params.size()));
    return result;
  }
};

}  // namespace

BatchSplit BatchSplit::make(const Training& t, const Plan& p, int rank, int world_size) {
  BatchSplit s;
  if (t.global_batch % world_size != 0)
    throw SpecError("training.global_batch " + std::to_string(t.global_batch) + " does not divide over " +
                    std::to_string(world_size) + " data-parallel ranks");
  s.per_rank = t.global_batch / world_size;
  s.micro_batch = p.micro_batch;
  if (s.micro_batch <= 0 || s.per_rank % s.micro_batch != 0)
    throw SpecError("plan.micro_batch " + std::to_string(p.micro_batch) + " does not divide the " +
                    std::to_string(s.per_rank) + " sequences of each rank");
  s.micro_batches = s.per_rank / s.micro_batch;
  s.first = int64_t{rank} * s.per_rank;
  return s;
}

StoreTrainer::StoreTrainer(const Gpt& gpt, const ByteCorpus& data, Training training, Plan plan, Comm& comm,
                           std::unique_ptr<TrainableStore> store)
    : gpt_(gpt), data_(data), training_(std::move(training)), plan_(std::move(plan)), comm_(comm), store_(std::move(store)),
      split_(BatchSplit::make(training_, plan_, comm.rank(), comm.world_size())),
      anchor_(torch::zeros({}, torch::requires_grad())) {
  check_recompute(plan_);
  store_->hold_graphs(plan_.recompute == Recompute::none);
  if (training_.dtype == DType::fp16) enable_loss_scaling();
}

StepResult StoreTrainer::step() {
  using report::PhaseId;
  const auto t0 = std::chrono::steady_clock::now();
  const double cpu0 = thread_cpu_seconds();
  clock_.start();
  set_active_phase_clock(&clock_);
  struct Inactive {
    ~Inactive() { set_active_phase_clock(nullptr); }
  } inactive;  // also when the step throws
  const int64_t it = steps_;
  StepResult r;
  r.loss_scale = scaler_ ? scaler_->scale() : 1.0;
  // Each micro-batch's mean loss is scaled so that the summed gradients are those of the mean
  // over the whole global batch; the sum over ranks happens in reduce_gradients. With loss
  // scaling the factor also carries the loss scale (a power of two: exact in any float format).
  const double scale = r.loss_scale / double(split_.micro_batches * comm_.world_size());
  double loss_sum = 0;
  const bool recompute = plan_.recompute == Recompute::full;
  store_->zero_grad();
  for (int64_t m = 0; m < split_.micro_batches; ++m) {
    Batch b = data_.batch(training_.seed, it, split_.first + m * split_.micro_batch, split_.micro_batch, gpt_.model().seq_len);
    b.tokens = b.tokens.to(store_->device());
    b.targets = b.targets.to(store_->device());
    at::Tensor h = b.tokens;
    {
      const PhaseScope timed(PhaseId::forward);
      for (int s = 0; s < gpt_.segments(); ++s) h = run_segment(gpt_, *store_, s, h, b.targets, anchor_, recompute);
      loss_sum += h.item<double>();
    }
    const PhaseScope timed(PhaseId::backward);
    (h * scale).backward();
  }
  // Collectives are timed where there are any: on one rank they are the identity.
  const bool distributed = comm_.world_size() > 1;
  {
    std::optional<PhaseScope> timed;
    if (distributed) timed.emplace(PhaseId::collectives);
    store_->reduce_gradients(comm_);
  }
  double sq = 0;
  {
    const PhaseScope timed(PhaseId::optimizer);  // clipping's norm: part of the optimizer step
    sq = store_->grad_square_sum();
  }
  at::Tensor stats = torch::tensor({sq, loss_sum}, torch::kDouble);
  {
    std::optional<PhaseScope> timed;
    if (distributed) timed.emplace(PhaseId::collectives);
    if (store_->sharded()) {
      comm_.all_reduce_sum(stats);
    } else {
      at::Tensor loss_only = stats.narrow(0, 1, 1);
      comm_.all_reduce_sum(loss_only);
    }
  }
  // The global norm is the same number on every rank (reduced gradients, or a summed square
  // sum), so every rank takes the same skip-or-step decision without another collective: any
  // inf or NaN in any rank's gradients makes it non-finite.
  const double scaled_norm = std::sqrt(stats[0].item<double>());
  r.grad_norm = scaled_norm / r.loss_scale;
  r.loss = stats[1].item<double>() / double(split_.micro_batches * comm_.world_size());
  const bool apply = scaler_ ? scaler_->update(scaled_norm) : true;
  const PhaseScope timed(PhaseId::optimizer);
  if (apply) {
    // Unscaling folds into the clip factor: the gradients are multiplied once, by clip / scale.
    // The optimizer's step number stays the iteration's (a skipped step still counts), so a
    // checkpoint, which stores only the iteration, resumes it exactly.
    const double clip = clip_coefficient(r.grad_norm, training_.grad_clip) / r.loss_scale;
    store_->optimizer_step(OptimizerConfig::from(training_), it + 1, clip);
  } else {
    store_->skip_optimizer_step();
    r.skipped = true;
  }
  ++steps_;
  r.seconds = seconds_since(t0);
  r.phases = clock_.stop(r.seconds);
  r.thread_cpu_s = thread_cpu_seconds() - cpu0;
  r.cpu_phases = clock_.cpu_split(r.thread_cpu_s);
  return r;
}

struct ReferenceTrainer::Impl {
  const Gpt& gpt;
  const ByteCorpus& data;
  Training training;
  Plan plan;
  BatchSplit split;
  std::map<std::string, torch::Tensor> params;
  std::vector<torch::Tensor> ordered;
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  int64_t steps = 0;
  at::Device device = at::kCPU;
};

ReferenceTrainer::ReferenceTrainer(const Gpt& gpt, const ByteCorpus& data, Training training, Plan plan, at::Device device)
    : impl_(std::make_unique<Impl>(Impl{gpt, data, training, plan, BatchSplit::make(training, plan, 0, 1), {}, {}, {}, 0, device})) {
  check_recompute(plan);
  for (const GptParam& p : gpt.params()) {
    torch::Tensor t = gpt.initial_value(p, training.seed).to(device).set_requires_grad(true);
    impl_->params[p.name] = t;
    impl_->ordered.push_back(t);
  }
  switch (training.optimizer) {
    case Optimizer::adam:
      impl_->optimizer = std::make_unique<torch::optim::Adam>(
          impl_->ordered, torch::optim::AdamOptions(training.learning_rate).weight_decay(training.weight_decay));
      break;
    case Optimizer::adamw:
      impl_->optimizer = std::make_unique<torch::optim::AdamW>(
          impl_->ordered, torch::optim::AdamWOptions(training.learning_rate).weight_decay(training.weight_decay));
      break;
    case Optimizer::sgd:
      impl_->optimizer = std::make_unique<torch::optim::SGD>(
          impl_->ordered, torch::optim::SGDOptions(training.learning_rate).weight_decay(training.weight_decay));
      break;
  }
}

ReferenceTrainer::~ReferenceTrainer() = default;

StepResult ReferenceTrainer::step() {
  Impl& m = *impl_;
  const auto t0 = std::chrono::steady_clock::now();
  const double scale = 1.0 / double(m.split.micro_batches);
  const bool recompute = m.plan.recompute == Recompute::full;
  double loss_sum = 0;
  m.optimizer->zero_grad();
  for (int64_t k = 0; k < m.split.micro_batches; ++k) {
    Batch b = m.data.batch(m.training.seed, m.steps, k * m.split.micro_batch, m.split.micro_batch, m.gpt.model().seq_len);
    b.tokens = b.tokens.to(m.device);
    b.targets = b.targets.to(m.device);
    torch::Tensor h = b.tokens;
    for (int s = 0; s < m.gpt.segments(); ++s) {
      std::vector<at::Tensor> p;
      for (const std::string& n : m.gpt.segment_params(s)) p.push_back(m.params.at(n));
      h = recompute ? CheckpointedSegment::apply(&m.gpt, static_cast<int64_t>(s), h, b.targets, at::TensorList(p))
                    : m.gpt.forward_segment(s, h, p, b.targets);
    }
    loss_sum += h.item<double>();
    (h * scale).backward();
  }
  StepResult r;
  r.loss = loss_sum / double(m.split.micro_batches);
  if (m.training.grad_clip > 0)
    r.grad_norm = torch::nn::utils::clip_grad_norm_(m.ordered, m.training.grad_clip);
  m.optimizer->step();
  ++m.steps;
  r.seconds = seconds_since(t0);
  return r;
}

at::Tensor ReferenceTrainer::value(const std::string& name) const {
  const at::Tensor& t = impl_->params.at(name);
  return t.is_cpu() ? t.detach().clone() : t.detach().cpu();
}

double evaluate_loss(const Gpt& gpt, TrainableStore& store, const ByteCorpus& data, const Training& t, int64_t iteration,
                     int64_t sequences) {
  at::NoGradGuard no_grad;
  Batch b = data.batch(t.seed, iteration, 0, sequences, gpt.model().seq_len);
  at::Tensor h = b.tokens;
  for (int s = 0; s < gpt.segments(); ++s) {
    const std::vector<std::string>& names = gpt.segment_params(s);
    store.access(names, Pass::forward);
    std::vector<at::Tensor> p;
    for (const std::string& n : names) p.push_back(store.param(n));
    h = gpt.forward_segment(s, h, p, b.targets);
    p.clear();
    store.release(names, Pass::forward);
  }
  return h.item<double>();
}

}  // namespace starfish::exec

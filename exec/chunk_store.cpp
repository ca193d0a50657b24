#include "exec/chunk_store.h"

#include <algorithm>
#include <stdexcept>

#include <ATen/ATen.h>

#include "exec/dist.h"
#include "exec/optimizer.h"
#include "sim/spec/error.h"

namespace starfish::exec {

ChunkStore::ChunkStore(const Gpt& gpt, const Training& training, ChunkStoreOptions options, TorchBackend& backend, uint64_t seed)
    : gpt_(gpt), options_(std::move(options)), backend_(backend) {
  const RuntimeOptions& ro = options_.runtime;
  const int zero_world = ro.zero == ZeroMode::replicated ? 1 : static_cast<int>(ro.dp_ranks.size());
  layout_ = std::make_unique<ChunkLayout>(ChunkLayout::build(
      parameter_tensors(gpt.model()), LayoutOptions::of(training, options_.chunk_elements, zero_world)));
  init(seed);
}

ChunkStore::ChunkStore(const Gpt& gpt, ChunkPlan plan, int64_t non_model_bytes, TorchBackend& backend, uint64_t seed)
    : gpt_(gpt), options_{plan.layout.options().chunk_elements, std::move(plan.options), non_model_bytes}, backend_(backend) {
  if (plan.tied_embeddings != gpt.model().tied_embeddings)
    throw std::logic_error("chunk store: the chunk plan's tied_embeddings differs from the model's");
  layout_ = std::make_unique<ChunkLayout>(std::move(plan.layout));
  cpu_embedding_ = plan.cpu_embedding;
  init(seed);
}

void ChunkStore::init(uint64_t seed) {
  const Gpt& gpt = gpt_;
  const RuntimeOptions& ro = options_.runtime;
  // The layout holds the GPT's parameters in order, less a CPU embedding's.
  const bool adam = layout_->mirror(0, ChunkKind::momentum) >= 0;
  for (size_t i = 0; i < gpt.params().size(); ++i) {
    const GptParam& p = gpt.params()[i];
    if (cpu_embedding_ && (p.role == ParamRole::word_embedding || p.role == ParamRole::position_embedding)) {
      HostTensor& h = host_[p.name];
      h.value = gpt.initial_value(p, seed);
      h.grad = at::zeros_like(h.value);
      if (adam) {
        h.exp_avg = at::zeros_like(h.value);
        h.exp_avg_sq = at::zeros_like(h.value);
      }
      continue;
    }
    const size_t t = gpt_index_.size();
    if (t >= layout_->tensors().size() || layout_->tensors()[t].name != p.name)
      throw std::logic_error("chunk store: the model's " + p.name + " is not layout tensor " + std::to_string(t));
    index_[p.name] = static_cast<int>(t);
    gpt_index_.push_back(static_cast<int>(i));
  }
  if (gpt_index_.size() != layout_->tensors().size())
    throw std::logic_error("chunk store: the layout holds tensors the model has not");
  runtime_ = std::make_unique<ChunkRuntime>(*layout_, ro, backend_);
  steps_ = iteration_steps(*layout_, gpt.model().tied_embeddings, runtime_->optimizer_chunks());
  grad_written_.assign(layout_->tensors().size(), 0);
  // Initial values into the chunks this rank keeps (the others arrive by all-gather).
  for (int c : runtime_->optimizer_chunks()) {
    const int master = layout_->mirror(c, ChunkKind::master);
    for (int t : layout_->tensors_of(c)) {
      const TensorPlace& p = layout_->place(t);
      const at::Tensor v = gpt.initial_value(gpt_param(t), seed).reshape({-1});
      backend_.write_host(runtime_->buffer(c), p.offset_elements * bytes_of(layout_->chunk(c).dtype), v.to(chunk_type(c)));
      if (master >= 0) backend_.write_host(runtime_->buffer(master), p.offset_elements * 4, v);
    }
    for (ChunkKind k : {ChunkKind::momentum, ChunkKind::variance}) {
      const int m = layout_->mirror(c, k);
      if (m >= 0) backend_.write_host(runtime_->buffer(m), 0, at::zeros({layout_->chunk(m).elements}, at::kFloat));
    }
  }
}

ChunkStore::~ChunkStore() = default;

at::ScalarType ChunkStore::chunk_type(int chunk) const { return torch_scalar_type(layout_->chunk(chunk).dtype); }

int ChunkStore::tensor_index(const std::string& name) const {
  auto it = index_.find(name);
  if (it == index_.end()) throw std::out_of_range("chunk store: no tensor named " + name);
  return it->second;
}

at::Tensor ChunkStore::view(int chunk, int64_t offset, int64_t elements) const {
  const Buffer b = runtime_->buffer(chunk);
  if (!b.valid() || b.tier == Tier::nvme)
    throw std::logic_error("chunk store: chunk " + std::to_string(chunk) + " is not in memory at moment " +
                           std::to_string(runtime_->moment()));
  return backend_.bytes(b).view(chunk_type(chunk)).narrow(0, offset, elements);
}

void ChunkStore::begin_if_needed() {
  if (in_iteration_) return;
  runtime_->begin_iteration();
  in_iteration_ = true;
  cursor_ = 0;
  std::fill(grad_written_.begin(), grad_written_.end(), 0);
  for (auto& [name, h] : host_) h.grad_written = false;
}

void ChunkStore::access(const std::vector<std::string>& names, Pass pass) {
  begin_if_needed();
  // The CPU embedding's segment: no chunk, no runtime moment (the simulator has none either).
  const auto on_host = [&](const std::string& n) { return host_.count(n) > 0; };
  host_access_ = !names.empty() && std::all_of(names.begin(), names.end(), on_host);
  if (host_access_) return;
  if (std::any_of(names.begin(), names.end(), on_host))
    throw std::logic_error("chunk store: a segment uses both the CPU embedding and chunked tensors");
  const Phase want = pass == Pass::forward ? Phase::forward : Phase::backward;
  if (cursor_ >= steps_.size() || steps_[cursor_].phase != want || steps_[cursor_].tensors.size() != names.size())
    throw std::logic_error("chunk store: the model's " + std::string(pass == Pass::forward ? "forward" : "backward") +
                           " access of " + std::to_string(names.size()) + " tensors does not follow the iteration's step " +
                           std::to_string(cursor_) + " (one micro-batch per iteration, every segment in order)");
  const Step& s = steps_[cursor_];
  for (const std::string& n : names)
    if (std::find(s.tensors.begin(), s.tensors.end(), tensor_index(n)) == s.tensors.end())
      throw std::logic_error("chunk store: tensor " + n + " is not in step " + std::to_string(cursor_));
  runtime_->enter_moment(s.signature(), options_.non_model_bytes);
  runtime_->access(s.tensors);
  if (!residency_) return;
  if (pass == Pass::forward) {
    residency_->forward_accessed(s, *runtime_);
  } else if (const std::optional<std::string> broken = residency_->backward_accessed(s, *runtime_)) {
    throw SpecError("field 'plan.recompute': " + *broken);
  }
}

void ChunkStore::hold_graphs(bool on) {
  if (in_iteration_) throw std::logic_error("chunk store: hold_graphs changed within an iteration");
  residency_ = on ? std::make_unique<GraphResidency>(gpt_.model().layers) : nullptr;
}

at::Tensor ChunkStore::param(const std::string& name) {
  if (host_access_) return host_.at(name).value;  // fp32: the GPT casts the lookup's output
  const int t = tensor_index(name);
  const TensorPlace& p = layout_->place(t);
  if (!runtime_->on(p.chunk, Tier::gpu)) throw std::logic_error("chunk store: " + name + " is used while its chunk is off the GPU tier");
  return view(p.chunk, p.offset_elements, p.elements).view(gpt_param(t).shape);
}

void ChunkStore::accumulate_grad(const std::string& name, const at::Tensor& grad) {
  if (host_access_) {
    HostTensor& h = host_.at(name);
    if (!h.grad_written) h.grad.copy_(grad);
    else h.grad.add_(grad.to(h.grad.device(), at::kFloat));
    h.grad_written = true;
    return;
  }
  const int t = tensor_index(name);
  const TensorPlace& p = layout_->place(t);
  at::Tensor g = view(layout_->grad_chunk(p.chunk), p.offset_elements, p.elements).view(gpt_param(t).shape);
  if (!grad_written_[t]) {
    g.copy_(grad);  // mixed precision: the grad replaces the bf16 param, whose master is fp32
    grad_written_[t] = 1;
  } else {
    g.add_(grad);
  }
}

void ChunkStore::release(const std::vector<std::string>&, Pass) {
  if (host_access_) {
    host_access_ = false;
    return;
  }
  const Step& s = steps_.at(cursor_);
  std::vector<int> again, done;
  for (size_t k = 0; k < s.tensors.size(); ++k) (s.release_to[k] == TensorState::hold ? again : done).push_back(s.tensors[k]);
  if (!again.empty()) runtime_->release(again, TensorState::hold);
  if (!done.empty()) runtime_->release(done, s.phase == Phase::forward ? TensorState::hold_after_fwd : TensorState::hold_after_bwd);
  runtime_->end_moment();
  ++cursor_;
}

// The CPU embedding's gradients, summed over the data-parallel ranks as PatrickStar's
// post-backward hook all-reduces them (over Gloo, core/hook.py); the chunks' were reduced at
// their last backward use.
void ChunkStore::reduce_gradients(Comm& comm) {
  if (options_.runtime.dp_ranks.size() < 2) return;
  for (auto& [name, h] : host_) comm.all_reduce_sum(h.grad);
}

double ChunkStore::grad_square_sum() {
  double sq = 0;
  // A replicated table counts once in a norm the ranks sum (sharded chunks): on the first rank.
  if (!sharded() || options_.runtime.dp_index == 0)
    for (auto& [name, h] : host_) sq += exec::grad_square_sum(h.grad);
  for (int c : runtime_->optimizer_chunks()) {
    if (layout_->tensors_of(c).empty()) continue;
    const int gc = layout_->grad_chunk(c);
    const int64_t used = layout_->chunk(c).used_elements;
    const Buffer b = runtime_->buffer(gc);
    at::Tensor g;
    if (b.tier == Tier::nvme) {
      g = at::empty({used}, at::TensorOptions().dtype(chunk_type(gc)));
      backend_.read_host(b, 0, g);
    } else {
      g = view(gc, 0, used);
    }
    sq += exec::grad_square_sum(g);
  }
  return sq;
}

void ChunkStore::optimizer_step(const OptimizerConfig& config, int64_t step, double clip) { run_optimizer_phase(&config, step, clip); }

void ChunkStore::skip_optimizer_step() { run_optimizer_phase(nullptr, 0, 1.0); }

// The optimizer phase walks every optimizer chunk through the runtime either way, so the
// runtime's moves and the ZeRO collectives stay those of its schedule on every rank. Skipping
// (config == nullptr) still restores a mixed-precision param chunk from its master: its
// gradient was written over it during backward.
void ChunkStore::run_optimizer_phase(const OptimizerConfig* config, int64_t step, double clip) {
  if (config) step_host_tensors(*config, step, clip);  // first, as the simulator orders it
  for (; cursor_ < steps_.size(); ++cursor_) {
    const Step& s = steps_[cursor_];
    if (s.phase != Phase::optimizer) throw std::logic_error("chunk store: optimizer step before the backward pass ended");
    runtime_->enter_moment(s.signature(), options_.non_model_bytes);
    const OptimizerWork w = runtime_->begin_optimizer(s.index);
    const int64_t used = layout_->chunk(s.index).used_elements;
    auto typed = [&](const Buffer& b, at::ScalarType st) { return backend_.bytes(b).view(st).narrow(0, 0, used); };
    const at::ScalarType pt = chunk_type(s.index);
    OptimizerSlice slice;
    slice.grad = typed(w.grad, w.grad == w.param ? pt : at::kFloat);
    if (w.master.valid()) {
      slice.master = typed(w.master, at::kFloat);
      slice.param = typed(w.param, pt);
    } else {
      slice.master = typed(w.param, pt);
    }
    if (w.momentum.valid()) slice.exp_avg = typed(w.momentum, at::kFloat);
    if (w.variance.valid()) slice.exp_avg_sq = typed(w.variance, at::kFloat);
    if (config) {
      if (clip < 1.0) slice.grad.mul_(clip);
      optimizer_update(*config, step, slice);
    } else if (slice.param.defined() && w.grad == w.param) {
      slice.param.copy_(slice.master);
    }
    runtime_->end_optimizer(s.index);
    runtime_->end_moment();
  }
  runtime_->end_iteration();
  in_iteration_ = false;
}

// CPU Adam of the CPU embedding's fp32 tables (PatrickStar's fp16_cpu_adam.py steps its
// TORCH_BASED params in fp32 on the CPU): the chunks' update, on the replica.
void ChunkStore::step_host_tensors(const OptimizerConfig& config, int64_t step, double clip) {
  for (auto& [name, h] : host_) {
    OptimizerSlice slice;
    slice.master = h.value;
    slice.grad = h.grad;
    slice.exp_avg = h.exp_avg;
    slice.exp_avg_sq = h.exp_avg_sq;
    if (clip < 1.0) slice.grad.mul_(clip);
    optimizer_update(config, step, slice);
  }
}

std::vector<std::pair<std::string, at::Tensor>> ChunkStore::gather_values(Comm& comm) {
  std::vector<std::pair<std::string, at::Tensor>> out(gpt_.params().size());
  for (size_t i = 0; i < gpt_.params().size(); ++i)
    if (host_.count(gpt_.params()[i].name)) out[i] = {gpt_.params()[i].name, host_.at(gpt_.params()[i].name).value.clone()};
  for (int c = 0; c < layout_->param_chunks(); ++c) {
    if (layout_->tensors_of(c).empty()) continue;
    const int64_t used = layout_->chunk(c).used_elements;
    at::Tensor v = at::zeros({used}, at::kFloat);
    if (runtime_->zero().keeps(c)) {
      const int master = layout_->mirror(c, ChunkKind::master);
      if (master >= 0) {
        backend_.read_host(runtime_->buffer(master), 0, v);
      } else {
        at::Tensor p = at::empty({used}, at::TensorOptions().dtype(chunk_type(c)));
        backend_.read_host(runtime_->buffer(c), 0, p);
        v.copy_(p);
      }
    }
    if (runtime_->zero().sharded()) comm.broadcast(v, runtime_->zero().owner(c));
    for (int t : layout_->tensors_of(c)) {
      const TensorPlace& p = layout_->place(t);
      out[gpt_index_[t]] = {gpt_param(t).name, v.narrow(0, p.offset_elements, p.elements).view(gpt_param(t).shape).clone()};
    }
  }
  return out;
}

std::vector<std::pair<std::string, at::Tensor>> ChunkStore::save_state() {
  std::vector<std::pair<std::string, at::Tensor>> out;
  for (int c : runtime_->optimizer_chunks()) {
    const int64_t used = layout_->chunk(c).used_elements;
    if (used == 0) continue;
    auto add = [&](int chunk, const char* what) {
      if (chunk < 0) return;
      at::Tensor t = at::empty({used}, at::TensorOptions().dtype(chunk_type(chunk)));
      backend_.read_host(runtime_->buffer(chunk), 0, t);
      out.emplace_back("chunk" + std::to_string(c) + "." + what, t);
    };
    add(c, "param");
    add(layout_->mirror(c, ChunkKind::master), "master");
    add(layout_->mirror(c, ChunkKind::momentum), "momentum");
    add(layout_->mirror(c, ChunkKind::variance), "variance");
  }
  for (auto& [name, h] : host_)  // the CPU embedding: every rank saves its replica
    for (const auto& [what, t] : {std::pair<const char*, at::Tensor>{"value", h.value}, {"momentum", h.exp_avg}, {"variance", h.exp_avg_sq}})
      if (t.defined()) out.emplace_back(name + "." + what, t.clone());
  return out;
}

void ChunkStore::load_state(const std::vector<std::pair<std::string, at::Tensor>>& state) {
  size_t i = 0;
  for (int c : runtime_->optimizer_chunks()) {
    if (layout_->chunk(c).used_elements == 0) continue;
    for (int chunk : {c, layout_->mirror(c, ChunkKind::master), layout_->mirror(c, ChunkKind::momentum),
                      layout_->mirror(c, ChunkKind::variance)})
      if (chunk >= 0) backend_.write_host(runtime_->buffer(chunk), 0, state.at(i++).second);
  }
  for (auto& [name, h] : host_)
    for (at::Tensor* t : {&h.value, &h.exp_avg, &h.exp_avg_sq})
      if (t->defined()) t->copy_(state.at(i++).second);
  if (i != state.size()) throw std::invalid_argument("chunk store: the state holds " + std::to_string(state.size()) + " tensors, not " + std::to_string(i));
}

}  // namespace starfish::exec

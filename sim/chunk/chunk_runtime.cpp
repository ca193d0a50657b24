#include "sim/chunk/chunk_runtime.h"

#include <algorithm>
#include <stdexcept>

#include "sim/spec/error.h"

namespace starfish {
namespace {

int tier_index(Tier t) { return static_cast<int>(t); }

}  // namespace

ChunkRuntime::ChunkRuntime(const ChunkLayout& layout, RuntimeOptions options, Backend& backend)
    : layout_(&layout),
      options_(std::move(options)),
      backend_(&backend),
      zero_(layout.param_chunks(), options_.dp_ranks, options_.dp_index, options_.zero),
      states_(layout),
      tracer_(static_cast<int>(layout.chunks().size())),
      policy_(make_eviction_policy(options_.eviction, tracer_, static_cast<int>(layout.chunks().size()))),
      slot_(layout.chunks().size()),
      gpu_pos_(layout.chunks().size(), -1) {
  const int P = layout.param_chunks();
  int64_t largest = 0, second = 0;
  for (int c = 0; c < P; ++c) {
    const int64_t b = bytes(c) + (layout.grad_chunk(c) != c ? bytes(layout.grad_chunk(c)) : 0);
    if (b > largest) { second = largest; largest = b; } else if (b > second) second = b;
  }
  if (P > 1 && options_.budget.gpu_bytes < largest + second)
    throw SpecError("chunk runtime: the GPU budget of " + std::to_string(options_.budget.gpu_bytes) +
                    " bytes cannot hold two chunks (" + std::to_string(largest) + " + " + std::to_string(second) +
                    " bytes); the minimum is " + std::to_string(largest + second) + " bytes");
  gathered_.assign(zero_.mode() == ZeroMode::sharded_memory_saving ? P : P / std::max(1, zero_.world()) + 1, 0);
  for (int c = 0; c < P; ++c)
    if (zero_.keeps(c)) kept_.push_back(c);
  // Start like PatrickStar's warm-up: nothing on the GPU until a moment needs it but what the
  // host cannot hold. Kept param chunks start on the CPU, optimizer states on the CPU, else NVMe,
  // else the GPU (see place_optimizer_states_for_warmup), which keeps room for one moment's
  // chunks: a gathered ZeRO group, or the two largest chunks (chunk_footprint, the rule the
  // analytic tier's memory model shares).
  const int64_t moment_chunks_bytes = chunk_footprint(layout, zero_.sharded()).moment_bytes;
  PlacementInput in;
  in.units = kept_;
  placement_ = place_optimizer_states_for_warmup(
      layout, MemoryBudget{options_.budget.gpu_bytes - moment_chunks_bytes, options_.budget.cpu_bytes, options_.budget.nvme_bytes},
      in);
  for (int c : kept_) allocate(c, spill_tier(c));
  for (int c : kept_)
    for (ChunkKind k : layout.mirror_kinds())
      if (k != ChunkKind::grad) allocate(layout.mirror(c, k), placement_.tier[c]);
}

ChunkRuntime::~ChunkRuntime() {
  for (Slot& s : slot_)
    if (s.buffer.valid()) backend_->release(s.buffer);
}

int ChunkRuntime::rank() const { return options_.dp_ranks[options_.dp_index]; }

ChunkState ChunkRuntime::chunk_state(int c) const { return states_.chunk_state(c, slot_[c].buffer.valid()); }

int64_t ChunkRuntime::gpu_budget(Moment t) const { return options_.budget.gpu_bytes - tracer_.non_model_bytes(t); }

void ChunkRuntime::log(int chunk, const char* op, Tier from, Tier to, int64_t b, MoveReason reason) {
  ++moves_decided_;
  reason_bytes_[static_cast<int>(reason)] += b;
  if (options_.record_moves) moves_.push_back(Move{rank(), moment_, chunk, op, from, to, b, reason});
}

void ChunkRuntime::track(int c, bool gpu) {
  if (gpu && gpu_pos_[c] < 0) {
    gpu_pos_[c] = static_cast<int>(on_gpu_.size());
    on_gpu_.push_back(c);
  } else if (!gpu && gpu_pos_[c] >= 0) {
    const int last = on_gpu_.back();
    on_gpu_[gpu_pos_[c]] = last;
    gpu_pos_[last] = gpu_pos_[c];
    on_gpu_.pop_back();
    gpu_pos_[c] = -1;
  }
}

void ChunkRuntime::allocate(int c, Tier t) {
  track(c, t == Tier::gpu);
  slot_[c].buffer = backend_->allocate(t, bytes(c));
  slot_[c].pending = {};
  used_[tier_index(t)] += bytes(c);
}

void ChunkRuntime::drop(int c) {
  Slot& s = slot_[c];
  if (!s.buffer.valid()) return;
  used_[tier_index(s.buffer.tier)] -= bytes(c);
  backend_->release(s.buffer);
  track(c, false);
  s.buffer = {};
  s.pending = {};
  s.dirty = false;
}

Tier ChunkRuntime::spill_tier(int c) const {
  if (used_[tier_index(Tier::cpu)] + bytes(c) <= options_.budget.cpu_bytes) return Tier::cpu;
  if (used_[tier_index(Tier::nvme)] + bytes(c) <= options_.budget.nvme_bytes) return Tier::nvme;
  throw SpecError("chunk runtime: no room for chunk " + std::to_string(c) + " (" + std::to_string(bytes(c)) +
                  " bytes) off the GPU: the CPU holds " + std::to_string(used_[tier_index(Tier::cpu)]) + " of " +
                  std::to_string(options_.budget.cpu_bytes) + " bytes and NVMe " +
                  std::to_string(used_[tier_index(Tier::nvme)]) + " of " + std::to_string(options_.budget.nvme_bytes));
}

void ChunkRuntime::move(int c, Tier to, MoveReason reason, Queue queue) {
  Slot& s = slot_[c];
  const Buffer src = s.buffer;
  if (src.tier == to) return;
  const Buffer dst = backend_->allocate(to, bytes(c));
  used_[tier_index(to)] += bytes(c);
  if (s.pending.id != 0 && queue == Queue::compute) backend_->wait(s.pending);
  const Completion done = backend_->copy(src, dst, bytes(c), MoveTag{moment_, c, reason, queue});
  backend_->release(src);
  used_[tier_index(src.tier)] -= bytes(c);
  s.buffer = dst;
  s.pending = done;
  track(c, to == Tier::gpu);
  log(c, "copy", src.tier, to, bytes(c), reason);
}

void ChunkRuntime::pin(int c) {
  if (slot_[c].pins++ == 0) pinned_.push_back(c);
}

void ChunkRuntime::too_small(int64_t need) const {
  const int64_t nm = tracer_.non_model_bytes(moment_);
  throw SpecError("chunk runtime: GPU budget too small at moment " + std::to_string(moment_) + " ('" +
                  tracer_.moment(moment_).signature.to_string() + "'): its chunks need " + std::to_string(need) +
                  " bytes and the non-model memory " + std::to_string(nm) + " bytes, but the GPU budget is " +
                  std::to_string(options_.budget.gpu_bytes) + " bytes; the minimum is " + std::to_string(need + nm) +
                  " bytes");
}

// Evicts unpinned GPU chunks until `need` more bytes fit the budget of `budget_moment`.
// Param and grad chunks go first; optimizer states only when nothing else is left.
void ChunkRuntime::make_room(int64_t need, Moment budget_moment, MoveReason reason, Queue queue, bool for_access) {
  const int64_t budget = gpu_budget(budget_moment);
  std::vector<int> candidates;
  while (used_[tier_index(Tier::gpu)] + need > budget) {
    candidates.clear();
    for (int pass = 0; pass < 2 && candidates.empty(); ++pass)
      for (int c : on_gpu_)
        if (slot_[c].pins == 0 && is_state(c) == (pass == 1)) candidates.push_back(c);
    if (candidates.empty()) {
      if (!for_access) return;  // pre-emptive: the access itself will report it
      int64_t pinned = 0;
      for (int c : pinned_) pinned += bytes(c);
      too_small(pinned);
    }
    // Remote ZeRO copies are moved too, never dropped: whether a group is gathered must not
    // depend on this rank's memory, or ranks would disagree on the collectives.
    const int victim = policy_->choose(candidates, budget_moment);
    move(victim, spill_tier(victim), reason, queue);
  }
}

void ChunkRuntime::bring_to_gpu(int c, MoveReason reason) {
  if (on(c, Tier::gpu)) return;
  make_room(bytes(c), moment_, MoveReason::eviction, Queue::compute, true);
  if (slot_[c].buffer.valid())
    move(c, Tier::gpu, reason, Queue::compute);
  else
    allocate(c, Tier::gpu);  // a grad chunk's first write (zeros, not a move)
}

void ChunkRuntime::begin_iteration() {
  if (in_iteration_) throw std::logic_error("chunk runtime: begin_iteration inside an iteration");
  ++iteration_;
  moment_ = -1;
  in_iteration_ = true;
  states_.reset(TensorState::hold);
  peaks_.clear();
}

Moment ChunkRuntime::enter_moment(const MomentSignature& sig, int64_t non_model_bytes) {
  if (!in_iteration_) throw std::logic_error("chunk runtime: enter_moment outside an iteration");
  ++moment_;
  tracer_.enter(moment_, sig, non_model_bytes, iteration_);
  peaks_.push_back({});
  record_peak();
  return moment_;
}

void ChunkRuntime::report_non_model_peak(int64_t b) { tracer_.report_peak(moment_, b); }

void ChunkRuntime::record_peak() {
  MomentTierBytes& p = peaks_.back();
  p.gpu = std::max(p.gpu, used_[0]);
  p.cpu = std::max(p.cpu, used_[1]);
  p.nvme = std::max(p.nvme, used_[2]);
}

void ChunkRuntime::access(const std::vector<int>& tensors) {
  const bool backward = tracer_.moment(moment_).signature.phase == Phase::backward;
  std::vector<int> needed;
  for (int t : tensors) {
    const int c = layout_->place(t).chunk;
    states_.set(t, TensorState::compute);
    for (int x : {c, backward ? layout_->grad_chunk(c) : c})
      if (std::find(needed.begin(), needed.end(), x) == needed.end()) needed.push_back(x);
  }
  for (int c : needed) {
    tracer_.access(moment_, c, iteration_);
    policy_->touched(c);
    pin(c);
  }
  // ZeRO: gather what this rank does not keep (whole groups, or single chunks when saving memory).
  if (zero_.sharded())
    for (int c : needed)
      if (c < layout_->param_chunks()) gather(c);
  for (int c : needed) bring_to_gpu(c, MoveReason::access);
  for (int c : needed)
    if (slot_[c].pending.id != 0) {
      backend_->wait(slot_[c].pending);
      slot_[c].pending = {};
    }
  record_peak();
}

void ChunkRuntime::gather(int c) {
  const bool saving = zero_.mode() == ZeroMode::sharded_memory_saving;
  const int key = saving ? c : zero_.group_of(c);
  if (gathered_[key]) return;
  gathered_[key] = 1;
  const Group whole = zero_.group();
  std::vector<int> members;
  if (saving)
    members.push_back(c);
  else
    for (int i = 0; i < zero_.world(); ++i) members.push_back(zero_.first_chunk(key) + i);
  for (int m : members) pin(m);
  // The kept member must be on the GPU to be sent; remote members get fresh GPU buffers.
  for (int m : members) bring_to_gpu(m, MoveReason::access);
  for (int m : members)
    if (slot_[m].pending.id != 0) backend_->wait(slot_[m].pending);
  const MoveTag tag{moment_, members.front(), MoveReason::zero_gather, Queue::compute};
  const DType dt = layout_->chunk(c).dtype;
  Completion done;
  int64_t b = 0;
  if (saving) {
    const Group g = zero_.group(c);
    done = backend_->collective(CollectiveKind::broadcast, g, {slot_[c].buffer}, {slot_[c].buffer}, dt, tag);
    b = g.index == g.root ? 0 : bytes(c);
    log(c, "broadcast", Tier::gpu, Tier::gpu, b, MoveReason::zero_gather);
  } else {
    std::vector<Buffer> out;
    for (int m : members) {
      out.push_back(slot_[m].buffer);
      b += bytes(m);
    }
    done = backend_->collective(CollectiveKind::all_gather, whole, {slot_[members[whole.index]].buffer}, out, dt, tag);
    b = b * (zero_.world() - 1) / zero_.world();
    log(members.front(), "all-gather", Tier::gpu, Tier::gpu, b, MoveReason::zero_gather);
  }
  for (int m : members) slot_[m].pending = done;
}

void ChunkRuntime::release(const std::vector<int>& tensors, TensorState to) {
  if (to == TensorState::compute) throw std::logic_error("chunk runtime: release to COMPUTE");
  std::vector<int> touched;
  for (int t : tensors) {
    states_.set(t, to);
    const int c = layout_->place(t).chunk;
    if (tracer_.moment(moment_).signature.phase == Phase::backward) slot_[layout_->grad_chunk(c)].dirty = true;
    if (std::find(touched.begin(), touched.end(), c) == touched.end()) touched.push_back(c);
  }
  for (int c : touched) {
    if (zero_.sharded()) {
      const bool saving = zero_.mode() == ZeroMode::sharded_memory_saving;
      std::vector<int> members;
      if (saving)
        members.push_back(c);
      else
        for (int i = 0; i < zero_.world(); ++i) members.push_back(zero_.first_chunk(zero_.group_of(c)) + i);
      const int key = saving ? c : zero_.group_of(c);
      auto all = [&](TensorState s) {
        for (int m : members)
          if (!layout_->tensors_of(m).empty() && !states_.all_in(m, s)) return false;
        return true;
      };
      if (!gathered_[key]) continue;
      if (to == TensorState::hold_after_fwd && all(TensorState::hold_after_fwd)) {
        for (int m : members)
          if (!zero_.keeps(m)) drop(m);
        gathered_[key] = 0;
      } else if (to == TensorState::hold_after_bwd && all(TensorState::hold_after_bwd)) {
        reduce(c);
        gathered_[key] = 0;
      }
    } else if (zero_.world() > 1 && to == TensorState::hold_after_bwd && states_.all_in(c, TensorState::hold_after_bwd)) {
      reduce(c);
    }
  }
  record_peak();
}

// Grads after their last backward use: reduce-scatter (or reduce) to the owners and drop the
// remote copies; without ZeRO, all-reduce so every rank steps the same grads.
void ChunkRuntime::reduce(int c) {
  std::vector<int> members;
  if (zero_.mode() == ZeroMode::sharded && zero_.sharded())
    for (int i = 0; i < zero_.world(); ++i) members.push_back(layout_->grad_chunk(zero_.first_chunk(zero_.group_of(c)) + i));
  else
    members.push_back(layout_->grad_chunk(c));
  for (int m : members) pin(m);
  for (int m : members) bring_to_gpu(m, MoveReason::zero_reduce);
  for (int m : members)
    if (slot_[m].pending.id != 0) backend_->wait(slot_[m].pending);
  const MoveTag tag{moment_, members.front(), MoveReason::zero_reduce, Queue::compute};
  const DType dt = layout_->chunk(members.front()).dtype;
  Completion done;
  int64_t b = 0;
  const char* op;
  if (!zero_.sharded()) {
    done = backend_->collective(CollectiveKind::all_reduce, zero_.group(), {slot_[members[0]].buffer},
                                {slot_[members[0]].buffer}, dt, tag);
    b = 2 * bytes(members[0]) * (zero_.world() - 1) / zero_.world();
    op = "all-reduce";
  } else if (members.size() == 1) {
    const Group g = zero_.group(c);
    done = backend_->collective(CollectiveKind::reduce, g, {slot_[members[0]].buffer}, {slot_[members[0]].buffer}, dt, tag);
    b = g.index == g.root ? 0 : bytes(members[0]);
    op = "reduce";
  } else {
    std::vector<Buffer> in;
    for (int m : members) {
      in.push_back(slot_[m].buffer);
      b += bytes(m);
    }
    done = backend_->collective(CollectiveKind::reduce_scatter, zero_.group(), in, {in[zero_.index()]}, dt, tag);
    b = b * (zero_.world() - 1) / zero_.world();
    op = "reduce-scatter";
  }
  log(members.front(), op, Tier::gpu, Tier::gpu, b, MoveReason::zero_reduce);
  for (int m : members) {
    const int p = layout_->chunk(m).param_chunk;
    slot_[m].pending = done;
    if (!zero_.keeps(p)) {
      drop(m);
      drop(p);
    }
  }
}

OptimizerWork ChunkRuntime::begin_optimizer(int c) {
  if (!zero_.keeps(c)) throw std::logic_error("chunk runtime: optimizer step of a chunk this rank does not own");
  const Tier home = placement_.tier[c];
  const Tier run = home == Tier::gpu ? Tier::gpu : Tier::cpu;
  std::vector<int> parts{c};
  if (layout_->grad_chunk(c) != c) parts.push_back(layout_->grad_chunk(c));
  for (ChunkKind k : layout_->mirror_kinds())
    if (k != ChunkKind::grad) parts.push_back(layout_->mirror(c, k));
  for (int p : parts) {
    tracer_.access(moment_, p, iteration_);
    policy_->touched(p);
    pin(p);
  }
  for (int p : parts) {
    if (run == Tier::gpu) {
      bring_to_gpu(p, MoveReason::optimizer);
    } else if (!on(p, Tier::cpu)) {
      if (used_[tier_index(Tier::cpu)] + bytes(p) > options_.budget.cpu_bytes)
        throw SpecError("chunk runtime: the optimizer step of chunk " + std::to_string(c) + " runs on the CPU but " +
                        std::to_string(options_.budget.cpu_bytes - used_[tier_index(Tier::cpu)]) +
                        " bytes are left there for its " + std::to_string(bytes(p)) + "-byte chunk " + std::to_string(p));
      move(p, Tier::cpu, MoveReason::optimizer, Queue::compute);
    }
  }
  for (int p : parts)
    if (slot_[p].pending.id != 0) {
      backend_->wait(slot_[p].pending);
      slot_[p].pending = {};
    }
  record_peak();
  auto buf = [&](ChunkKind k) { const int m = layout_->mirror(c, k); return m < 0 ? Buffer{} : slot_[m].buffer; };
  return OptimizerWork{c, run, slot_[c].buffer, buf(ChunkKind::grad), buf(ChunkKind::master), buf(ChunkKind::momentum),
                       buf(ChunkKind::variance)};
}

void ChunkRuntime::end_optimizer(int c) {
  // fp32 training: the grads are consumed. States homed on NVMe go back there.
  if (layout_->grad_chunk(c) != c) drop(layout_->grad_chunk(c));
  slot_[c].dirty = false;
  if (placement_.tier[c] == Tier::nvme)
    for (ChunkKind k : layout_->mirror_kinds())
      if (k != ChunkKind::grad) move(layout_->mirror(c, k), Tier::nvme, MoveReason::optimizer, Queue::copy);
  record_peak();
}

std::vector<int> ChunkRuntime::gpu_need(Moment t) const {
  const TracedMoment& m = tracer_.moment(t);
  std::vector<int> need;
  if (m.signature.phase == Phase::optimizer) {
    if (m.chunks.empty() || placement_.tier[m.signature.index] != Tier::gpu) return need;
    return m.chunks;
  }
  for (int c : m.chunks) {
    const int p = layout_->chunk(c).param_chunk;
    if (zero_.sharded() && zero_.mode() == ZeroMode::sharded && c == p)
      for (int i = 0; i < zero_.world(); ++i) need.push_back(zero_.first_chunk(zero_.group_of(c)) + i);
    else
      need.push_back(c);
  }
  std::sort(need.begin(), need.end());
  need.erase(std::unique(need.begin(), need.end()), need.end());
  return need;
}

void ChunkRuntime::end_moment() {
  for (int c : pinned_) slot_[c].pins = 0;
  pinned_.clear();
  const Moment next = moment_ + 1;
  if (!tracer_.warm() || next >= tracer_.moments()) return;
  // Pre-emptive eviction: the next moment's chunks plus what stays must fit its budget.
  const std::vector<int> need = gpu_need(next);
  int64_t missing = 0;
  for (int c : need) {
    pin(c);
    if (!on(c, Tier::gpu)) missing += bytes(c);
  }
  make_room(missing, next, MoveReason::eviction, Queue::copy, false);
  // Prefetch, within both this moment's and the next one's budget. Chunks with no payload here
  // (remote ZeRO chunks, unwritten grads) come at access by gathering or allocation.
  if (options_.prefetch) {
    const int64_t budget = std::min(gpu_budget(moment_), gpu_budget(next));
    for (int c : need)
      if (slot_[c].buffer.valid() && !on(c, Tier::gpu) && used_[tier_index(Tier::gpu)] + bytes(c) <= budget)
        move(c, Tier::gpu, MoveReason::prefetch, Queue::copy);
  }
  for (int c : pinned_) slot_[c].pins = 0;
  pinned_.clear();
  record_peak();
}

void ChunkRuntime::end_iteration() {
  if (!in_iteration_) throw std::logic_error("chunk runtime: end_iteration outside an iteration");
  tracer_.end_iteration(moment_ + 1, iteration_);
  in_iteration_ = false;
  if (!placed_) place_states_after_warmup();
}

void ChunkRuntime::place_states_after_warmup() {
  placed_ = true;
  PlacementInput in;
  in.peak_non_model_bytes = tracer_.peak_non_model_bytes();
  in.units = kept_;
  if (zero_.sharded())
    for (Moment t = 0; t < tracer_.moments(); ++t) {
      int64_t remote = 0;
      for (int c : gpu_need(t))
        if (!zero_.keeps(layout_->chunk(c).param_chunk)) remote += bytes(c);
      in.working_bytes = std::max(in.working_bytes, remote);
    }
  placement_ = place_optimizer_states(*layout_, options_.budget, in);
  moment_ = tracer_.moments();  // moves between iterations are logged after the last moment
  // GPU units first and NVMe ones next free CPU room for those that come back to the CPU.
  for (Tier target : {Tier::gpu, Tier::nvme, Tier::cpu})
    for (int c : kept_)
      if (placement_.tier[c] == target)
        for (ChunkKind k : layout_->mirror_kinds())
          if (k != ChunkKind::grad) move(layout_->mirror(c, k), target, MoveReason::placement, Queue::copy);
  moment_ = -1;
}

int64_t ChunkRuntime::minimum_gpu_bytes() const {
  int64_t worst = 0;
  for (Moment t = 0; t < tracer_.moments(); ++t) {
    int64_t b = tracer_.non_model_bytes(t);
    for (int c : gpu_need(t)) b += bytes(c);
    worst = std::max(worst, b);
  }
  return worst;
}

}  // namespace starfish

#include "sim/cost/chunk_layout.h"

#include <algorithm>
#include <map>

#include "sim/cost/cpu_embedding.h"
#include "sim/spec/error.h"

namespace starfish {

const char* to_string(ChunkKind k) {
  switch (k) {
    case ChunkKind::param: return "param";
    case ChunkKind::grad: return "grad";
    case ChunkKind::master: return "master";
    case ChunkKind::momentum: return "momentum";
    case ChunkKind::variance: return "variance";
  }
  return "?";
}

ChunkLayout ChunkLayout::build(const std::vector<ParamTensor>& tensors, const LayoutOptions& o) {
  if (o.chunk_elements <= 0)
    throw SpecError("chunk layout: chunk size must be positive, got " + std::to_string(o.chunk_elements) + " elements");
  if (o.world <= 0) throw SpecError("chunk layout: world size must be positive, got " + std::to_string(o.world));
  if (tensors.empty()) throw SpecError("chunk layout: the model shard has no parameter tensors");

  ChunkLayout l;
  l.options_ = o;
  l.mixed_ = o.dtype != DType::fp32 && o.dtype != DType::tf32;
  l.tensors_ = tensors;
  l.places_.resize(tensors.size());

  // Best fit: each tensor, in order of first use, goes to the open chunk with the least room
  // that still holds it; a tensor larger than a chunk gets a dedicated chunk of its own size.
  std::vector<int64_t> capacity, used;
  std::multimap<int64_t, int> room;  // remaining elements -> chunk
  for (size_t t = 0; t < tensors.size(); ++t) {
    const int64_t n = tensors[t].elements;
    if (n <= 0) throw SpecError("chunk layout: tensor '" + tensors[t].name + "' has no elements");
    int c = -1;
    if (n > o.chunk_elements) {
      c = static_cast<int>(capacity.size());
      capacity.push_back(n);
      used.push_back(0);
    } else {
      auto it = room.lower_bound(n);
      if (it != room.end()) {
        c = it->second;
        room.erase(it);
      } else {
        c = static_cast<int>(capacity.size());
        capacity.push_back(o.chunk_elements);
        used.push_back(0);
      }
    }
    l.places_[t] = TensorPlace{c, used[c], n};
    used[c] += n;
    if (capacity[c] - used[c] > 0 && n <= o.chunk_elements) room.emplace(capacity[c] - used[c], c);
  }
  // ZeRO: a collective moves one group of `world` chunks of one size.
  while (capacity.size() % o.world != 0) {
    capacity.push_back(o.chunk_elements);
    used.push_back(0);
  }
  for (size_t g = 0; g < capacity.size(); g += o.world) {
    const int64_t cap = *std::max_element(capacity.begin() + g, capacity.begin() + g + o.world);
    std::fill(capacity.begin() + g, capacity.begin() + g + o.world, cap);
  }

  const int P = static_cast<int>(capacity.size());
  l.param_chunks_ = P;
  if (!l.mixed_) l.mirror_kinds_.push_back(ChunkKind::grad);
  if (l.mixed_) l.mirror_kinds_.push_back(ChunkKind::master);
  if (o.optimizer != Optimizer::sgd) {
    l.mirror_kinds_.push_back(ChunkKind::momentum);
    l.mirror_kinds_.push_back(ChunkKind::variance);
  }
  l.chunks_.reserve(P * (1 + l.mirror_kinds_.size()));
  for (int c = 0; c < P; ++c)
    l.chunks_.push_back(Chunk{c, ChunkKind::param, c, capacity[c], used[c], o.dtype == DType::tf32 ? DType::fp32 : o.dtype});
  for (size_t k = 0; k < l.mirror_kinds_.size(); ++k)
    for (int c = 0; c < P; ++c)
      l.chunks_.push_back(Chunk{static_cast<int>(l.chunks_.size()), l.mirror_kinds_[k], c, capacity[c], used[c], DType::fp32});

  l.chunk_tensors_.resize(P);
  for (size_t t = 0; t < tensors.size(); ++t) l.chunk_tensors_[l.places_[t].chunk].push_back(static_cast<int>(t));
  for (int c = 0; c < P; ++c) {
    l.param_elements_ += used[c];
    l.padding_elements_ += capacity[c] - used[c];
  }
  return l;
}

int ChunkLayout::mirror(int param_chunk, ChunkKind kind) const {
  if (kind == ChunkKind::param || (kind == ChunkKind::grad && mixed_)) return param_chunk;
  for (size_t k = 0; k < mirror_kinds_.size(); ++k)
    if (mirror_kinds_[k] == kind) return static_cast<int>((k + 1) * param_chunks_) + param_chunk;
  return -1;
}

int64_t ChunkLayout::total_bytes() const {
  int64_t b = 0;
  for (const Chunk& c : chunks_) b += c.bytes();
  return b;
}

int64_t ChunkLayout::waste_bytes() const {
  int64_t b = 0;
  for (const Chunk& c : chunks_) b += (c.elements - c.used_elements) * bytes_of(c.dtype);
  return b;
}

double ChunkLayout::bytes_per_param() const {
  double b = double(bytes_of(chunks_[0].dtype));
  for (ChunkKind k : mirror_kinds_) b += k == ChunkKind::param ? 0 : 4;
  return b;
}

std::vector<LayerStep> forward_steps(const ChunkLayout& layout, bool tied) {
  const auto& tensors = layout.tensors();
  std::vector<LayerStep> steps;
  std::map<int, size_t> step_of;  // layer -> its step
  int word_embedding = -1, last_layer = INT32_MIN;
  for (size_t t = 0; t < tensors.size(); ++t) {
    const int l = tensors[t].layer;
    auto [it, fresh] = step_of.emplace(l, steps.size());
    if (fresh) steps.push_back(LayerStep{l, {}});
    steps[it->second].tensors.push_back(static_cast<int>(t));
    if (tensors[t].role == ParamRole::word_embedding) word_embedding = static_cast<int>(t);
    if (tensors[t].role == ParamRole::output_head) tied = false;  // the shard has its own head matrix
    last_layer = std::max(last_layer, l);
  }
  // A tied head on the stage that holds the embedding reuses it after the final norm.
  if (tied && word_embedding >= 0 && last_layer > tensors[word_embedding].layer) {
    LayerStep& last = steps[step_of[last_layer]];
    if (tensors[last.tensors.front()].role == ParamRole::norm) last.tensors.push_back(word_embedding);
  }
  return steps;
}

std::vector<StateUnit> state_units(const ChunkLayout& l, const std::vector<int>& param_chunks) {
  std::vector<StateUnit> units;
  units.reserve(param_chunks.size());
  for (int c : param_chunks) {
    StateUnit u;
    for (ChunkKind k : l.mirror_kinds())
      if (k != ChunkKind::grad) u.state_bytes += l.chunk(l.mirror(c, k)).bytes();
    const int g = l.grad_chunk(c);
    u.param_bytes = l.chunk(c).bytes() + (g != c ? l.chunk(g).bytes() : 0);
    units.push_back(u);
  }
  return units;
}

ChunkWorkingSet chunk_working_set(const ChunkLayout& l, bool sharded, bool tied) {
  const int world = sharded ? l.options().world : 1;
  ChunkWorkingSet w;
  for (const LayerStep& step : forward_steps(l, tied)) {
    for (bool backward : {false, true}) {
      // The param chunks the step touches, as whole ZeRO groups (ChunkRuntime::gpu_need).
      std::vector<int> params, grads;
      for (int t : step.tensors) {
        const int c = l.place(t).chunk;
        for (int m = c / world * world; m < (c / world + 1) * world; ++m) params.push_back(m);
        if (backward && l.grad_chunk(c) != c) grads.push_back(l.grad_chunk(c));
      }
      for (auto* v : {&params, &grads}) {
        std::sort(v->begin(), v->end());
        v->erase(std::unique(v->begin(), v->end()), v->end());
      }
      int64_t all = 0, remote = 0;
      for (int c : params) all += l.chunk(c).bytes();
      for (int c : grads) all += l.chunk(c).bytes();
      // Each group has one chunk of the rank's own; in backward, the rank whose own chunks the
      // step does not touch holds every touched grad chunk remotely.
      if (world > 1) {
        int64_t own = 0;
        for (size_t i = 0; i < params.size(); i += world) own += l.chunk(params[i]).bytes();
        remote = all - own;
      }
      w.working_bytes = std::max(w.working_bytes, remote);
      w.step_bytes = std::max(w.step_bytes, all);
    }
  }
  return w;
}

ChunkFootprint chunk_footprint(const ChunkLayout& l, bool sharded) {
  const int P = l.param_chunks(), world = sharded ? l.options().world : 1;
  ChunkFootprint f;
  int64_t largest = 0, second = 0;
  for (int c = 0; c < P; ++c) {
    const int g = l.grad_chunk(c);
    const int64_t b = l.chunk(c).bytes() + (g != c ? l.chunk(g).bytes() : 0);
    if (b > largest) { second = largest; largest = b; } else if (b > second) second = b;
    if (c % world == 0) f.kept_param_elements += l.chunk(c).elements;
  }
  f.moment_bytes = std::max(P > 1 ? largest + second : largest, world > 1 ? world * largest : 0);
  std::vector<int> kept;
  for (int c = 0; c < P; c += world) kept.push_back(c);  // rank 0's: every rank's are alike
  f.units = state_units(l, kept);
  return f;
}

bool chunks_may_use_nvme(const Plan& p) {
  return p.offload.params == Tier::nvme || p.offload.grads == Tier::nvme || p.offload.optimizer == Tier::nvme;
}

std::vector<ParamTensor> chunked_parameter_tensors(const Model& m, const Plan& p) {
  std::vector<ParamTensor> out = parameter_tensors(m, plan_shard(p, 0));
  std::erase_if(out, [&](const ParamTensor& t) { return on_cpu_embedding(t, p); });
  return out;
}

ChunkLayout plan_chunk_layout(const Model& m, const Training& t, const Plan& p) {
  return ChunkLayout::build(chunked_parameter_tensors(m, p), LayoutOptions::of(t, p.chunk_elements, p.zero_stage >= 1 ? p.dp : 1));
}

ChunkFootprint plan_chunk_footprint(const Model& m, const Training& t, const Plan& p) {
  const ChunkLayout layout = plan_chunk_layout(m, t, p);
  const bool sharded = p.zero_stage >= 1 && p.dp > 1;
  ChunkFootprint f = chunk_footprint(layout, sharded);
  const ChunkWorkingSet w = chunk_working_set(layout, sharded, m.tied_embeddings);
  f.working_bytes = w.working_bytes;
  f.step_bytes = w.step_bytes;
  f.cpu_embedding_elements = cpu_embedding_elements(m, p);
  f.cpu_embedding_host_bytes = cpu_embedding_host_bytes(m, t, p);
  return f;
}

ChunkSizeChoice search_chunk_size(const std::vector<ParamTensor>& tensors, const LayoutOptions& base,
                                  int64_t min_elements, int64_t max_elements, int64_t step_elements,
                                  int64_t gpu_bytes, int64_t total_bytes) {
  if (min_elements <= 0 || step_elements <= 0 || max_elements < min_elements)
    throw SpecError("chunk size search: need 0 < min <= max and a positive step, got min " +
                    std::to_string(min_elements) + ", max " + std::to_string(max_elements) + ", step " +
                    std::to_string(step_elements));
  ChunkSizeChoice best;
  int64_t least_need = -1;
  int candidates = 0;
  for (int64_t size = min_elements; size <= max_elements; size += step_elements) {
    LayoutOptions o = base;
    o.chunk_elements = size;
    const ChunkLayout l = ChunkLayout::build(tensors, o);
    ++candidates;
    // The two largest param chunks must be on the GPU together.
    int64_t a = 0, b = 0;
    for (int c = 0; c < l.param_chunks(); ++c) {
      const int64_t x = l.chunk(c).bytes();
      if (x > a) { b = a; a = x; } else if (x > b) b = x;
    }
    const bool fits = l.total_bytes() <= total_bytes && a + b <= gpu_bytes;
    if (!fits) {
      const int64_t need = std::max(l.total_bytes() - total_bytes, a + b - gpu_bytes);
      if (least_need < 0 || need < least_need) least_need = need;
      continue;
    }
    if (best.chunk_elements == 0 || l.padding_elements() <= best.padding_elements)
      best = ChunkSizeChoice{size, l.padding_elements(), l.waste_bytes(), l.total_bytes(), 0};
  }
  if (best.chunk_elements == 0)
    throw SpecError("chunk size search: no chunk size in [" + std::to_string(min_elements) + ", " +
                    std::to_string(max_elements) + "] elements fits the memory budget (GPU " +
                    std::to_string(gpu_bytes) + " bytes, total " + std::to_string(total_bytes) +
                    " bytes); the closest size is " + std::to_string(least_need) + " bytes short");
  best.candidates = candidates;
  return best;
}

}  // namespace starfish

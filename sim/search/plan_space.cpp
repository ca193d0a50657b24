#include "sim/search/plan_space.h"

#include <algorithm>

#include "sim/spec/error.h"
#include "sim/spec/job.h"
#include "sim/spec/limits.h"
#include "sim/spec/pipeline_layout.h"

namespace starfish::search {
namespace {

std::vector<int> divisors(int64_t n) {
  std::vector<int> out;
  for (int64_t d = 1; d <= n; ++d)
    if (n % d == 0) out.push_back(static_cast<int>(d));
  return out;
}

template <typename T>
bool contains(const std::vector<T>& v, const T& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

int tier_rank(Tier t) { return t == Tier::gpu ? 0 : t == Tier::cpu ? 1 : 2; }

// By default TP stays on NVLink: a node's GPUs, or an NVLink domain's (GB200 NVL72: TP 8 over two
// trays talks over NVLink as a DGX's does).
int max_tp_of(const Cluster& c, const SearchSpace& s) { return s.max_tp > 0 ? s.max_tp : c.local_gpus(); }

bool tier_usable(Tier t, const std::vector<Tier>& allowed, const Cluster& c) {
  return contains(allowed, t) && (t != Tier::nvme || c.node.nvme.has_value());
}

std::vector<int> zero_stages_ascending(const SearchSpace& s) {
  std::vector<int> out = s.zero_stages;
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// The offload triples (params, grads, optimizer) the rules admit, in a fixed order, each with
// the framework that runs it under its ZeRO stage: the space's where it can, else the one that
// does (job.h placement_framework); a triple no framework runs is left out.
struct Placement {
  Tier params, grads, optimizer;
  bool chunked;
  Framework framework = Framework::megatron_lm;
  // A bit per (params, grads, optimizer, chunked): which placements a DP-1 shape has emitted.
  uint64_t bit() const {
    return uint64_t{1} << ((chunked ? 27 : 0) + static_cast<int>(params) * 9 + static_cast<int>(grads) * 3 +
                           static_cast<int>(optimizer));
  }
};
std::optional<Framework> framework_of(const Placement& pl, int zero_stage, Framework preferred) {
  Plan p;
  p.chunk_elements = pl.chunked ? 1 : 0;
  p.zero_stage = zero_stage;
  p.offload = Offload{pl.params, pl.grads, pl.optimizer};
  return placement_framework(p, preferred);
}
std::vector<Placement> placements(const Cluster& c, const SearchSpace& s, int zero_stage) {
  std::vector<Placement> out;
  const Tier all[] = {Tier::gpu, Tier::cpu, Tier::nvme};
  for (bool chunked : {false, true}) {
    for (Tier o : all) {
      if (!tier_usable(o, s.optimizer_tiers, c)) continue;
      for (Tier p : all) {
        if (!tier_usable(p, s.param_tiers, c) || tier_rank(p) > tier_rank(o)) continue;
        if (!chunked && p != Tier::gpu && zero_stage != 3) continue;
        for (Tier g : all) {
          if (!tier_usable(g, s.grad_tiers, c) || tier_rank(g) < tier_rank(p) || tier_rank(g) > tier_rank(o)) continue;
          if (chunked && g != p) continue;
          Placement pl{p, g, o, chunked};
          const std::optional<Framework> f = framework_of(pl, zero_stage, s.framework);
          if (!f) continue;
          pl.framework = *f;
          out.push_back(pl);
        }
      }
    }
  }
  return out;
}

// The fp8 formats the space tries on this cluster: none only, unless make_job admits fp8 (a
// Megatron-core space on a GPU with an fp8 peak; the training dtype is checked by the caller).
std::vector<Fp8> fp8_formats(const Cluster& c, const SearchSpace& s) {
  std::vector<Fp8> out;
  for (Fp8 f : s.fp8)
    if (f == Fp8::none || (s.framework == Framework::megatron_core && c.node.gpu.peak_flops.count(DType::fp8))) out.push_back(f);
  if (out.empty()) out.push_back(Fp8::none);
  return out;
}

// The search's fp8 plans keep their GEMM weights in fp8 where the distributed optimizer gathers
// them (plan.fp8_params), as Megatron-Bridge's fp8 recipes set fp8_param_gather: fewer bytes
// held and gathered, the same fp32 master weights.
bool searched_fp8_params(const Plan& p) {
  return p.fp8 != Fp8::none && (p.zero_stage == 1 || p.zero_stage == 2) && p.offload.params == Tier::gpu && !p.chunked();
}

// Megatron-core plans reduce their gradients overlapped with the backward and, under the
// distributed optimizer, gather the updated params under the next forward, as Megatron-Bridge's
// recipes run it (ddp.overlap_grad_reduce, overlap_param_gather): its buckets are views of the
// gradient buffer, no memory more. FSDP's SHARD_GRAD_OP (ZeRO-2) has no other way: each unit's
// reduce-scatter runs on its post-backward stream (zero2_bucket_params). Elsewhere as the
// frameworks' defaults (off: DeepSpeed's overlap_comm for ZeRO-1/2).
bool searched_overlap_grad_reduce(const Plan& p) {
  if (p.chunked()) return false;
  return (p.framework == Framework::megatron_core && p.zero_stage <= 1) || (p.framework == Framework::fsdp && p.zero_stage == 2);
}

}  // namespace

Plan Candidate::to_plan() const {
  Plan p;
  fill(p);
  return p;
}

void Candidate::fill(Plan& p) const {
  p.tp = tp;
  p.pp = pp;
  p.dp = dp;
  p.virtual_stages = virtual_stages;
  p.stage_layers = StageLayout{first_stage_layers, last_stage_layers, {}, embedding_slot, loss_slot};
  p.ep = ep;
  p.etp = etp;
  p.cp = cp;
  p.micro_batch = micro_batch;
  p.sequence_parallel = sequence_parallel;
  p.schedule = schedule;
  p.zero_stage = zero_stage;
  p.offload = Offload{params, grads, optimizer};
  p.chunk_elements = chunk_elements;
  p.recompute = recompute;
  p.recompute_layers = recompute_layers;
  p.recompute_modules = recompute_modules;
  p.fp8 = fp8;
  p.fp8_recipe = Fp8Recipe::delayed;
  p.cpu_embedding = cpu_embedding;
  p.framework = framework;
  p.fp8_params = searched_fp8_params(p);
  p.overlap_grad_reduce = searched_overlap_grad_reduce(p);
}

Candidate to_candidate(const Plan& p) {
  Candidate c;
  c.tp = static_cast<int32_t>(p.tp);
  c.pp = static_cast<int32_t>(p.pp);
  c.virtual_stages = static_cast<int32_t>(p.virtual_stages);
  c.first_stage_layers = p.stage_layers.first;
  c.last_stage_layers = p.stage_layers.last;
  c.embedding_slot = p.stage_layers.embedding_slot;
  c.loss_slot = p.stage_layers.loss_slot;
  c.ep = p.ep;
  c.etp = p.etp;
  c.cp = p.cp;
  c.dp = p.dp;
  c.micro_batch = p.micro_batch;
  c.chunk_elements = p.chunk_elements;
  c.zero_stage = static_cast<uint8_t>(p.zero_stage);
  c.schedule = p.schedule;
  c.recompute = p.recompute;
  c.recompute_modules = p.recompute_modules;
  c.recompute_layers = p.recompute_layers;
  c.sequence_parallel = p.sequence_parallel;
  c.params = p.offload.params;
  c.grads = p.offload.grads;
  c.optimizer = p.offload.optimizer;
  c.fp8 = p.fp8;
  c.cpu_embedding = p.cpu_embedding;
  c.framework = p.framework;
  return c;
}

// make_job's check_experts, as a reason (plan.dp may be 0: `dp` is resolved and counts the CP ranks).
static const char* expert_invalid_reason(const Model& m, const Plan& p, int64_t dp) {
  if (!m.is_moe()) return p.ep != 1 ? "expert parallelism without experts" : nullptr;
  const int etp = p.expert_tp();
  if (p.ep < 1 || m.moe.experts % p.ep) return "EP does not divide the experts";
  if (m.moe.expert_ffn_hidden % etp) return "expert TP does not divide the expert FFN";
  if ((int64_t{p.tp} * dp) % (int64_t{p.ep} * etp)) return "EP x expert TP does not divide TP x CP x DP";
  if (m.moe.shared_experts > 0 && (int64_t{m.moe.shared_experts} * m.moe.expert_ffn_hidden) % p.tp)
    return "TP does not divide the shared experts";
  if (p.tp > 1 && !p.sequence_parallel) return "MoE with TP needs sequence parallelism";
  if (p.zero_stage >= 3) return "ZeRO-3 of expert layers is not modelled";
  if (p.chunked()) return "the chunk runtime has no MoE layers";
  return nullptr;
}

// make_job's check_context_parallel, as a reason.
static const char* context_invalid_reason(const Model& m, const Plan& p) {
  if (p.cp < 1) return "non-positive degree";
  if (p.cp == 1) return nullptr;
  if (m.seq_len % (2 * p.cp)) return "2 x CP does not divide the sequence";
  if (p.sequence_parallel && (m.seq_len / p.cp) % p.tp) return "TP does not divide a CP rank's tokens";
  if (p.framework != Framework::megatron_core) return "context parallelism is modelled under Megatron-core only";
  if (p.attention == Attention::unfused) return "context parallelism needs fused attention";
  if (p.chunked()) return "the chunk runtime does not split sequences";
  return nullptr;
}

const char* plan_invalid_reason(const Model& m, const Cluster& c, const Training& t, const Plan& p) {
  if (p.tp < 1 || p.pp < 1 || p.virtual_stages < 1 || p.micro_batch < 1 || p.dp < 0) return "non-positive degree";
  if (m.heads % p.tp != 0) return "TP does not divide the heads";
  if (m.kv_heads % p.tp != 0) return "TP does not divide the key/value heads";
  if (m.ffn_hidden % p.tp != 0) return "TP does not divide ffn_hidden";
  if (!tp_aligned_to_nodes(p.tp, c.node.gpus)) return "TP groups would straddle nodes";
  if (!check_stage_layout(m.layers, p.pp, p.virtual_stages, p.stage_layers).field.empty())
    return p.stage_layers.even() ? "PP x virtual stages does not divide the layers" : "the stage layout does not fit the layers";
  const int64_t gpus = c.total_gpus();
  if (const char* why = context_invalid_reason(m, p)) return why;
  int64_t dp = p.dp;
  const int64_t tp_cp_pp = int64_t{p.tp} * p.cp * p.pp;
  if (dp == 0) {
    if (gpus % tp_cp_pp != 0) return "TP x CP x PP does not divide the GPUs";
    dp = gpus / tp_cp_pp;
  } else if (tp_cp_pp * dp != gpus) {
    return "TP x CP x PP x DP is not the GPU count";
  }
  const int64_t per_step = int64_t{p.micro_batch} * dp;
  if (t.global_batch % per_step != 0) return "global batch is not a multiple of micro-batch x DP";
  const int64_t micro_batches = t.global_batch / per_step;
  if (!limits::within_pass_limit(micro_batches, m.layers)) return "more micro-batches x layers than Starfish's limit";
  if (p.schedule == Schedule::interleaved) {
    if (p.virtual_stages < 2) return "interleaving needs virtual stages >= 2";
    if (micro_batches % p.pp != 0) return "interleaving needs micro-batches divisible by PP";
  } else if (p.virtual_stages != 1) {
    return "virtual stages need the interleaved schedule";
  }
  if (p.sequence_parallel && p.tp == 1) return "sequence parallelism needs TP > 1";
  if (const char* why = expert_invalid_reason(m, p, dp * p.cp)) return why;
  const Offload& o = p.offload;
  if ((o.params == Tier::nvme || o.grads == Tier::nvme || o.optimizer == Tier::nvme) && !c.node.nvme)
    return "offload to NVMe without an NVMe";
  if (p.chunked() && p.pp > 1) return "the chunk runtime has no pipeline parallelism";
  if (p.chunked() && p.chunk_elements < 1024) return "chunk under 1Ki elements";
  if (p.chunked() && micro_batches > 1) return "a chunked plan runs one micro-batch per rank (no gradient accumulation)";
  if (p.chunk_elements < 0) return "negative chunk size";
  if (p.cpu_embedding) {  // make_job's check_cpu_embedding
    if (!p.chunked()) return "the CPU embedding needs the chunk runtime";
    if (m.tied_embeddings) return "the CPU embedding cannot serve a tied output head";
  }
  if (!c.node.gpu.peak_flops.count(t.dtype)) return "GPU has no peak for the dtype";
  if ((p.quantized_gemms() || p.bf16_layers.any()) && !quantized_gemm_problem(c.node.gpu, t, p).why.empty())
    return "quantized GEMMs cannot run";
  if (p.bf16_layers.first + p.bf16_layers.last > m.layers) return "more bf16 layers than the model has";
  if (!recompute_layers_problem(p).empty()) return "block recomputation cannot run";
  if (!placement_problem(p).why.empty()) return "the framework cannot hold the states where the plan puts them";
  if (framework_schedule_problem(p).why) return "the framework cannot run the schedule, ZeRO stage or sequence parallelism";
  if (p.framework == Framework::starfish && executor_problem(p).why) return "Starfish's executor cannot run it";
  return nullptr;
}

bool is_enumerated_shape(const Plan& p, const Cluster& c, const SearchSpace& s) {
  if (s.tp.empty() ? p.tp > max_tp_of(c, s) : !contains(s.tp, p.tp)) return false;
  if (!s.pp.empty() && !contains(s.pp, p.pp)) return false;
  if (p.virtual_stages > std::max(1, s.max_virtual_stages)) return false;
  if (!s.micro_batches.empty() && !contains(s.micro_batches, p.micro_batch)) return false;
  if (p.cp != 1 && !contains(s.cp, p.cp) && !s.cp.empty()) return false;
  if (!contains(s.schedules, p.schedule) || !contains(s.recompute, p.recompute)) return false;
  if (p.pp == 1 && p.schedule != Schedule::one_f_one_b) return false;
  if (!contains(s.sequence_parallel, p.sequence_parallel)) return false;
  if (p.tp == 1 && p.sequence_parallel) return false;
  if (!contains(s.zero_stages, p.zero_stage)) return false;
  if (!contains(s.chunk_elements, p.chunk_elements)) return false;
  if (!contains(s.cpu_embedding, p.cpu_embedding)) return false;
  if (!contains(fp8_formats(c, s), p.fp8)) return false;
  // The space tries Megatron's default delayed scaling only and no fp4; it recomputes every layer,
  // none, or (on its best rows, search.h) the first N of each virtual stage where Megatron can.
  if (p.fp8_recipe != Fp8Recipe::delayed || p.fp4 != Fp4::none || p.bf16_layers.any()) return false;
  if (p.recompute_layers != 0 && !recompute_layers_problem(p).empty()) return false;
  if (p.fp8_params != searched_fp8_params(p)) return false;
  if (p.overlap_grad_reduce != searched_overlap_grad_reduce(p)) return false;
  auto holds = [&](int zero_stage) {
    for (const Placement& pl : placements(c, s, zero_stage))
      if (pl.chunked == p.chunked() && pl.params == p.offload.params && pl.grads == p.offload.grads &&
          pl.optimizer == p.offload.optimizer)
        return pl.framework == p.framework;
    return false;
  };
  // One rank holds the states: the space tries each placement under its lowest stage only.
  if (p.dp_cp() == 1)
    for (int z : zero_stages_ascending(s)) {
      if (z >= p.zero_stage) break;
      if (holds(z)) return false;
    }
  return holds(p.zero_stage);
}

// The (EP, ETP) pairs a stage of TP x DP ranks can hold: {(1, 0)} for a dense model.
static std::vector<std::pair<int, int>> expert_layouts(const Model& m, const SearchSpace& s, int tp, int dp) {
  if (!m.is_moe()) return {{1, 0}};
  std::vector<int> etps = s.etp;
  if (etps.empty()) etps = tp > 1 ? std::vector<int>{1, tp} : std::vector<int>{1};
  std::vector<std::pair<int, int>> out;
  for (int ep : s.ep.empty() ? divisors(m.moe.experts) : s.ep)
    for (int etp : etps) {
      if (ep < 1 || etp < 1 || m.moe.experts % ep || m.moe.expert_ffn_hidden % etp) continue;
      if ((int64_t{tp} * dp) % (int64_t{ep} * etp)) continue;
      out.push_back({ep, etp});
    }
  return out;
}

namespace {

// The TP degrees the search tries: dividing the heads, the KV heads, the FFN and the GPUs, and
// aligned to the nodes (or the space's own list).
std::vector<int> tensor_parallel_degrees(const Model& m, const Cluster& c, const SearchSpace& s, int gpus) {
  std::vector<int> tps;
  for (int tp : s.tp.empty() ? divisors(m.heads) : s.tp) {
    if (tp < 1 || (s.tp.empty() && tp > max_tp_of(c, s))) continue;
    if (m.heads % tp || m.kv_heads % tp || m.ffn_hidden % tp || gpus % tp || !tp_aligned_to_nodes(tp, c.node.gpus))
      continue;
    tps.push_back(tp);
  }
  return tps;
}

// Micro-batch sizes that divide a pipeline's share of the batch.
std::vector<int> micro_batch_sizes(const SearchSpace& s, int64_t per_pipeline) {
  if (s.micro_batches.empty()) return divisors(per_pipeline);
  std::vector<int> mbs;
  for (int b : s.micro_batches)
    if (b >= 1 && per_pipeline % b == 0) mbs.push_back(b);
  return mbs;
}

// A schedule with its virtual stages and the stage layout they take.
struct ScheduleShape {
  Schedule schedule = Schedule::one_f_one_b;
  int virtual_stages = 1;
  StageLayout layout;
};

// The schedules for this PP and micro-batch count, each with the stage layout it runs: the PP's
// own (`layout`), or for interleaving that it does not divide, Megatron-core's embedding and loss
// slots where they do (the lighter first/last stages are whole stages, which v chunks must divide).
std::vector<ScheduleShape> schedule_shapes(const Model& m, const SearchSpace& s, int pp, int64_t micro_batches,
                                           const StageLayout& layout) {
  std::vector<ScheduleShape> shapes;
  for (Schedule sc : s.schedules) {
    if (pp == 1 && sc != Schedule::one_f_one_b) continue;
    if (sc != Schedule::interleaved) {
      shapes.push_back({sc, 1, layout});
      continue;
    }
    if (micro_batches % pp) continue;
    for (int v = 2; v <= s.max_virtual_stages; ++v) {
      if (check_stage_layout(m.layers, pp, v, layout).field.empty()) {
        shapes.push_back({sc, v, layout});
      } else if (s.framework == Framework::megatron_core) {
        const StageLayout slots = slot_stage_layout(m.layers, pp, v);
        if (slots.slots()) shapes.push_back({sc, v, slots});
      }
    }
  }
  return shapes;
}

// One (TP, CP, PP, micro-batch, schedule) point of the space, which the placements, recompute,
// SP, expert layouts, fp8 and the CPU embedding then multiply.
struct Shape {
  int tp = 1, cp = 1, pp = 1, dp = 1, micro_batch = 1, virtual_stages = 1;
  int64_t micro_batches = 1;
  Schedule schedule = Schedule::one_f_one_b;
  StageLayout layout;
};

// The recompute modules tried under `rc`: the attention core; for selective recomputation of
// an MoE model under Megatron-core also with the experts' activation and the pre-MLP norm
// (recompute_modules_problem admits both there).
std::vector<uint8_t> recompute_module_choices(const Model& m, Recompute rc, Framework framework) {
  namespace rm = recompute_module;
  if (rc == Recompute::selective && framework == Framework::megatron_core && m.is_moe())
    return {rm::core_attn, rm::core_attn | rm::moe_act | rm::layernorm};
  return {rm::core_attn};
}

// Whether Starfish's executor, which runs every chunked plan, refuses the shape (job.h executor_problem).
bool executor_refuses(const Shape& sh, Recompute rc) {
  Plan p;
  p.tp = sh.tp;
  p.pp = sh.pp;
  p.cp = sh.cp;
  p.recompute = rc;
  return executor_problem(p).why != nullptr;
}

// Every candidate of `shape` under ZeRO stage `z`, placement `pl` and chunk size `chunk`.
void append_candidates(const Model& m, const SearchSpace& s, const Shape& sh, int z, const Placement& pl, int64_t chunk,
                       const std::vector<std::pair<int, int>>& experts, const std::vector<Fp8>& fp8s,
                       std::vector<Candidate>& out) {
  Plan probe;  // what the framework rules need to know of the candidate (sim/spec/job.h)
  probe.framework = pl.framework;
  probe.pp = sh.pp;
  probe.schedule = sh.schedule;
  probe.zero_stage = z;
  for (Recompute rc : s.recompute) {
    if (pl.framework == Framework::starfish && executor_refuses(sh, rc)) continue;
    for (bool sp : s.sequence_parallel) {
      if (sp && sh.tp == 1) continue;
      probe.sequence_parallel = sp;
      if (framework_schedule_problem(probe).why) continue;
      if (sh.cp > 1 && (chunk > 0 || (sp && (m.seq_len / sh.cp) % sh.tp))) continue;
      if (m.is_moe() && sh.tp > 1 && !sp) continue;
      for (const auto& [ep, etp] : experts)
        for (Fp8 fp8 : fp8s) {
          if (fp8 != Fp8::none && (chunk > 0 || pl.framework != Framework::megatron_core)) continue;
          Candidate k;
          k.fp8 = fp8;
          k.ep = ep;
          k.etp = etp;
          k.cp = sh.cp;
          k.tp = static_cast<int32_t>(sh.tp);
          k.pp = static_cast<int32_t>(sh.pp);
          k.virtual_stages = static_cast<int32_t>(sh.virtual_stages);
          k.first_stage_layers = sh.layout.first;
          k.last_stage_layers = sh.layout.last;
          k.embedding_slot = sh.layout.embedding_slot;
          k.loss_slot = sh.layout.loss_slot;
          k.dp = sh.dp;
          k.micro_batch = sh.micro_batch;
          k.chunk_elements = chunk;
          k.zero_stage = static_cast<uint8_t>(z);
          k.schedule = sh.schedule;
          k.recompute = rc;
          k.sequence_parallel = sp;
          k.params = pl.params;
          k.grads = pl.grads;
          k.optimizer = pl.optimizer;
          k.framework = pl.framework;
          for (bool cpu_embedding : s.cpu_embedding) {
            if (cpu_embedding && (chunk == 0 || m.tied_embeddings)) continue;
            k.cpu_embedding = cpu_embedding;
            for (uint8_t modules : recompute_module_choices(m, rc, pl.framework)) {
              k.recompute_modules = modules;
              out.push_back(k);
            }
          }
        }
    }
  }
}

// The placements (ZeRO stage, where the states live, chunk size) of one shape.
void append_placements(const Model& m, const SearchSpace& s, const Shape& sh,
                       const std::vector<std::vector<Placement>>& placement_of,
                       const std::vector<std::pair<int, int>>& experts, const std::vector<Fp8>& fp8s,
                       int64_t* chunked_accumulation_left_out, std::vector<Candidate>& out) {
  // One rank holds the states (DP x CP = 1): every ZeRO stage is the same memory, so each
  // placement is tried once, under the lowest stage its framework runs it with (ZeRO-0 for
  // what stays on the GPU, DeepSpeed's ZeRO-Offload at 1, ZeRO-Infinity at 3).
  const bool one_rank = sh.dp * sh.cp == 1;
  uint64_t emitted = 0;
  Plan scratch;
  scratch.pp = sh.pp;
  scratch.schedule = sh.schedule;
  for (int z : zero_stages_ascending(s)) {
    if (z < 0 || z > 3) continue;
    for (const Placement& pl : placement_of[z]) {
      if (one_rank && (emitted & pl.bit())) continue;
      // Context parallelism is Megatron-core's; DeepSpeed's pipeline engine runs 1F1B under ZeRO-0/1.
      if (sh.cp > 1 && pl.framework != Framework::megatron_core) continue;
      scratch.framework = pl.framework;
      scratch.zero_stage = z;
      if (framework_schedule_problem(scratch).why) continue;
      if (one_rank) emitted |= pl.bit();
      for (int64_t chunk : s.chunk_elements) {
        if (pl.chunked != (chunk > 0)) continue;
        if (chunk > 0 && (chunk < 1024 || sh.pp > 1)) continue;  // chunk plans: no pipeline
        if (chunk > 0 && sh.micro_batches > 1) {  // ... and no gradient accumulation (make_job)
          if (chunked_accumulation_left_out)
            for (Recompute rc : s.recompute)
              *chunked_accumulation_left_out += executor_refuses(sh, rc) ? 0 : 1;
          continue;
        }
        if (m.is_moe() && (z >= 3 || chunk > 0)) continue;
        append_candidates(m, s, sh, z, pl, chunk, experts, fp8s, out);
      }
    }
  }
}

}  // namespace

std::vector<Candidate> enumerate_plans(const Model& m, const Cluster& c, const Training& t, const SearchSpace& s,
                                       int64_t* chunked_accumulation_left_out) {
  if (t.global_batch < 1) throw SpecError("search: the global batch must be at least 1 sequence");
  if (!c.node.gpu.peak_flops.count(t.dtype))
    throw SpecError("search: GPU " + c.node.gpu.name + " has no peak FLOP/s for " + to_string(t.dtype));
  const int gpus = c.total_gpus();
  std::vector<Fp8> fp8s = fp8_formats(c, s);
  if (t.dtype != DType::bf16 && t.dtype != DType::fp16) fp8s = {Fp8::none};
  // The static/chunked placements per ZeRO stage do not depend on the rest: compute them once.
  std::vector<std::vector<Placement>> placement_of(4);
  for (int z = 0; z < 4; ++z) placement_of[z] = placements(c, s, z);

  const std::vector<int> cps = context_parallel_degrees(m, s);
  std::vector<Candidate> out;
  for (int tp : tensor_parallel_degrees(m, c, s, gpus)) {
    for (int cp : cps) {
      if (cp < 1 || gpus % (int64_t{tp} * cp)) continue;
      for (int pp : s.pp.empty() ? divisors(gpus / (tp * cp)) : s.pp) {
        if (pp < 1 || pp > m.layers || gpus % (int64_t{tp} * cp * pp)) continue;
        Shape sh;
        sh.tp = tp;
        sh.cp = cp;
        sh.pp = pp;
        // PP that does not divide the layers: Megatron-core's lighter first and last stages.
        sh.layout = balanced_stage_layout(m.layers, pp);
        if (m.layers % pp && sh.layout.even()) continue;
        sh.dp = gpus / (tp * cp * pp);
        if (t.global_batch % sh.dp) continue;
        const std::vector<std::pair<int, int>> experts = expert_layouts(m, s, tp, sh.dp * cp);
        const int64_t per_pipeline = t.global_batch / sh.dp;
        for (int b : micro_batch_sizes(s, per_pipeline)) {
          sh.micro_batch = b;
          sh.micro_batches = per_pipeline / b;
          const StageLayout pp_layout = sh.layout;
          for (const ScheduleShape& shape : schedule_shapes(m, s, pp, sh.micro_batches, pp_layout)) {
            sh.schedule = shape.schedule;
            sh.virtual_stages = shape.virtual_stages;
            sh.layout = shape.layout;
            append_placements(m, s, sh, placement_of, experts, fp8s, chunked_accumulation_left_out, out);
          }
          sh.layout = pp_layout;
        }
      }
    }
  }
  return out;
}

std::vector<int> context_parallel_degrees(const Model& m, const SearchSpace& s) {
  if (!s.cp.empty()) return s.cp;
  std::vector<int> out{1};
  if (s.framework != Framework::megatron_core) return out;
  for (int cp = 2; m.seq_len % (2 * cp) == 0 && m.seq_len / cp >= kMinCpRankTokens; cp *= 2) out.push_back(cp);
  return out;
}

std::string family_label(const Candidate& c) {
  std::string s = "TP" + std::to_string(c.tp) + " PP" + std::to_string(c.pp) + " ZeRO-" + std::to_string(c.zero_stage);
  if (c.ep > 1) s += " EP" + std::to_string(c.ep);
  if (c.cp > 1) s += " CP" + std::to_string(c.cp);
  if (c.fp8 != Fp8::none) s += " fp8";
  if (c.params != Tier::gpu || c.grads != Tier::gpu || c.optimizer != Tier::gpu)
    s += std::string(" offload ") + to_string(c.params) + "/" + to_string(c.grads) + "/" + to_string(c.optimizer);
  s += c.chunk_elements > 0 ? " chunked" : " static";
  if (c.cpu_embedding) s += " cpu-embedding";
  if (c.framework == Framework::deepspeed) s += " (DeepSpeed)";
  if (c.framework == Framework::fsdp) s += " (FSDP)";
  return s;
}

std::string short_label(const Candidate& c) {
  std::string s = "TP" + std::to_string(c.tp) + (c.cp > 1 ? " CP" + std::to_string(c.cp) : "") + " PP" +
                  std::to_string(c.pp) + " DP" + std::to_string(c.dp);
  if (c.pp > 1) s += std::string(" ") + to_string(c.schedule);
  if (c.virtual_stages > 1) s += " v" + std::to_string(c.virtual_stages);
  if (c.first_stage_layers || c.last_stage_layers)
    s += " first" + std::to_string(c.first_stage_layers) + " last" + std::to_string(c.last_stage_layers);
  if (c.embedding_slot || c.loss_slot)
    s += std::string(" slots:") + (c.embedding_slot ? "emb" : "") + (c.embedding_slot && c.loss_slot ? "+" : "") +
         (c.loss_slot ? "loss" : "");
  if (c.sequence_parallel) s += " SP";
  if (c.ep > 1) s += " EP" + std::to_string(c.ep);
  if (c.etp > 1) s += " ETP" + std::to_string(c.etp);
  s += " mb" + std::to_string(c.micro_batch) + " ZeRO-" + std::to_string(c.zero_stage);
  if (c.recompute != Recompute::none) s += std::string(" rc-") + to_string(c.recompute);
  if (c.recompute_layers > 0) s += "/" + std::to_string(c.recompute_layers);
  if (c.recompute == Recompute::selective && c.recompute_modules != recompute_module::core_attn)
    s += "(" + recompute_modules_text(c.recompute_modules, ",") + ")";
  if (c.params != Tier::gpu || c.grads != Tier::gpu || c.optimizer != Tier::gpu)
    s += std::string(" off:") + to_string(c.params) + "/" + to_string(c.grads) + "/" + to_string(c.optimizer);
  if (c.fp8 != Fp8::none) s += std::string(" fp8-") + to_string(c.fp8);
  if (c.chunk_elements > 0) {
    int shift = 0;
    while ((int64_t{1} << shift) < c.chunk_elements) ++shift;
    s += (int64_t{1} << shift) == c.chunk_elements ? " chunk 2^" + std::to_string(shift)
                                                   : " chunk " + std::to_string(c.chunk_elements);
  }
  if (c.cpu_embedding) s += " cpu-emb";
  // Offloaded plans Megatron cannot run go to the framework that does (chunked ones to
  // Starfish's chunk runtime, which "chunk" already says).
  if (c.framework == Framework::deepspeed) s += " ds";
  if (c.framework == Framework::fsdp) s += " fsdp";
  return s;
}

}  // namespace starfish::search

#pragma once
// The space of plans the search enumerates for one model, cluster and training, and the cheap
// validity pre-check that keeps exceptions off the hot path.
//
// Axes: TP (divisors of heads, kv_heads and ffn_hidden, aligned to the nodes as make_job requires,
// up to GPUs per node by default), PP (TP*PP dividing the GPUs, at most the layers; a PP that
// does not divide the layers gets Megatron-core's lighter first/last stages, balanced_stage_layout), DP
// (derived), virtual stages (divisors of layers/PP, interleaved schedule only), micro-batch
// (divisors of global/DP), ZeRO 0-3, offload tiers of params/grads/optimizer, recompute,
// sequence parallelism, schedule and chunk size.
//
// Besides make_job's rules, the enumerator applies a few documented "no-op or unrealizable"
// rules so the space holds no duplicates and nothing a runtime cannot do (is_enumerated_shape):
//  - each placement runs on a framework that can hold it (sim/spec/job.h placement_problem): the
//    space's own where it can, else Starfish's chunk runtime (chunks), DeepSpeed or FSDP
//    (offload); none: not enumerated. Context parallelism stays Megatron-core's and DeepSpeed's
//    pipeline engine runs 1F1B with ZeRO-0/1, and DeepSpeed no Megatron sequence parallelism
//    (framework_schedule_problem);
//  - without DP (dp == 1) each placement only under the lowest ZeRO stage its framework runs it
//    with (ZeRO-0, or DeepSpeed's offload at 1 or 3): ZeRO shards over DP ranks, so the stages
//    hold the same memory;
//  - PP == 1 runs the 1F1B schedule only (with one stage every schedule is the same);
//  - sequence parallelism only with TP > 1 (make_job's rule);
//  - tiers are ordered gpu < cpu < nvme and params <= grads <= optimizer: the state touched
//    every micro-batch (params) never sits deeper than the states touched once per iteration;
//  - a static plan (no chunks) offloads params only under ZeRO-3 (DeepSpeed ZeRO-Infinity
//    offloads partitioned params only);
//  - a chunked plan keeps its grads in the param chunks (PatrickStar), so grads = params tier;
//    and (make_job's rule) it runs each rank's whole batch as one micro-batch, on Starfish's
//    executor, which trains data parallelism only (job.h executor_problem: TP, PP, CP 1,
//    recompute full or none);
//  - the chunk size is enumerated only for chunked plans (0 = static placement), and so is the
//    CPU embedding (where make_job admits it: an untied model);
//  - fp8 GEMMs only where make_job admits them (Megatron-core, a GPU with an fp8 peak, bf16/fp16
//    training, no chunks);
//  - MoE models (make_job's rules): sequence parallelism whenever TP > 1, ZeRO 0-2, no chunks;
//    EP over the divisors of the experts with EP x ETP dividing TP x DP, ETP in {1, TP}.
#include <cstdint>
#include <string>
#include <vector>

#include "sim/spec/hardware.h"
#include "sim/spec/model.h"
#include "sim/spec/plan.h"
#include "sim/spec/training.h"

namespace starfish::search {

struct SearchSpace {
  std::vector<int> tp;               // empty: every valid divisor up to max_tp
  int max_tp = 0;                    // 0: the GPUs on NVLink with each other (a node, or an NVLink domain)
  std::vector<int> pp;               // empty: every valid divisor of layers
  int max_virtual_stages = 8;        // interleaving beyond 8 chunks per stage only adds PP traffic
  std::vector<int> micro_batches;    // empty: every divisor of global / DP
  // MoE models: expert parallel degrees (empty: every divisor of the experts that EP x ETP
  // fits in TP x DP) and expert TP (empty: 1 and TP, Megatron-core's two usual choices).
  std::vector<int> ep;
  std::vector<int> etp;
  // Context parallel degrees (empty: context_parallel_degrees -- 1, and under Megatron-core the
  // powers of two that leave each rank at least kMinCpRankTokens of a sequence).
  std::vector<int> cp;
  std::vector<int> zero_stages{0, 1, 2, 3};
  std::vector<Recompute> recompute{Recompute::none, Recompute::selective, Recompute::full};
  std::vector<Schedule> schedules{Schedule::gpipe, Schedule::one_f_one_b, Schedule::interleaved};
  std::vector<bool> sequence_parallel{false, true};
  // Tiers each model state may use; nvme only counts when the node has one.
  std::vector<Tier> param_tiers{Tier::gpu, Tier::cpu, Tier::nvme};
  std::vector<Tier> grad_tiers{Tier::gpu, Tier::cpu, Tier::nvme};
  std::vector<Tier> optimizer_tiers{Tier::gpu, Tier::cpu, Tier::nvme};
  // Chunk sizes in elements; 0 = static placement. Default: static and three powers of two
  // around PatrickStar's usual 64Mi-element chunks.
  std::vector<int64_t> chunk_elements{0, int64_t{1} << 25, int64_t{1} << 26, int64_t{1} << 27};
  // PatrickStar's CPU embedding (Plan::cpu_embedding) for chunked plans, where make_job admits it
  // (TP 1, an untied model). Off by default: a PatrickStar mechanism (variants.h).
  std::vector<bool> cpu_embedding{false};
  // The framework every plan of the space is run by (its traits: sim/cost/framework.h).
  Framework framework = Framework::megatron_lm;
  // FP8 GEMM formats tried (sim/cost/fp8.h), each with Megatron's default delayed scaling; only
  // where make_job admits fp8: a Megatron-core space, a GPU with an fp8 peak, bf16/fp16 training.
  std::vector<Fp8> fp8{Fp8::none, Fp8::hybrid};
  // (Spaces of named training systems -- PatrickStar, ZeRO-Offload, ...: variants.h.)
};

// A compact plan (the search holds hundreds of thousands): to_plan() gives the Plan.
struct Candidate {
  int32_t tp = 1, pp = 1, virtual_stages = 1;  // up to the GPU limit (limits.h): 16 bits would wrap
  // Uneven stages (Plan::stage_layers' first/last; 0 = even): balanced_stage_layout when PP does
  // not divide the layers. Explicit per-stage lists are not searched.
  int32_t first_stage_layers = 0, last_stage_layers = 0;
  // Megatron-core's embedding and loss slots (StageLayout::slots): what interleaving takes when
  // pp x v does not divide the layers but the layers and the two slots do (Llama 3.1 405B).
  bool embedding_slot = false, loss_slot = false;
  int32_t ep = 1, etp = 0;  // expert parallel and expert TP (0 = TP), MoE models only
  int32_t cp = 1;           // context parallel
  int32_t dp = 1;
  int32_t micro_batch = 1;
  int64_t chunk_elements = 0;
  uint8_t zero_stage = 0;
  Schedule schedule = Schedule::one_f_one_b;
  Recompute recompute = Recompute::none;
  // Under full recomputation, the first N layers of each virtual stage recompute (Megatron's
  // block method): not enumerated, set by the search on its best rows (search.h).
  int32_t recompute_layers = 0;
  // Under selective recomputation, its modules (Plan::recompute_modules): the attention core, or
  // for an MoE model under Megatron-core also the experts' activation and the pre-MLP norm, as
  // Megatron-Bridge's GPT-OSS recipes recompute.
  uint8_t recompute_modules = recompute_module::core_attn;
  bool sequence_parallel = false;
  Tier params = Tier::gpu, grads = Tier::gpu, optimizer = Tier::gpu;
  Fp8 fp8 = Fp8::none;  // fp8 GEMMs (delayed scaling)
  bool cpu_embedding = false;
  // Who runs it: the space's framework, or the one that runs its chunks and offload (set by
  // the search, job.h placement_framework).
  Framework framework = Framework::megatron_lm;

  Plan to_plan() const;  // dp resolved, as make_job would leave it

  void fill(Plan& p) const;  // to_plan() into an existing Plan (no new Plan per candidate)
};
Candidate to_candidate(const Plan& plan);  // plan.dp must be resolved

// Every plan of the space, in a fixed order (the enumeration index is the tie-breaker of the
// ranking). Throws SpecError when the global batch or the cluster admits no plan at all.
// `chunked_accumulation_left_out`, when given, is increased by the chunked plans left out
// because they would accumulate gradients over several micro-batches (make_job refuses them).
std::vector<Candidate> enumerate_plans(const Model& model, const Cluster& cluster, const Training& training,
                                       const SearchSpace& space, int64_t* chunked_accumulation_left_out = nullptr);

// make_job's rules without exceptions: nullptr when make_job would accept the plan (dp resolved
// or 0), else a short reason. Kept in step with sim/spec/job.cpp by a test that compares both.
const char* plan_invalid_reason(const Model& model, const Cluster& cluster, const Training& training,
                                const Plan& plan);

// Below this many tokens of a sequence per rank, context parallelism is not tried by default: the
// ring's blocks shrink as (tokens per rank)^2 while its sends shrink only linearly, so they stop
// hiding the sends; Megatron-core's guidance is CP for sequences of 8K tokens and more.
inline constexpr int kMinCpRankTokens = 4096;
// The CP degrees a space tries for this model: its list, or 1 and (Megatron-core only: it is
// TransformerEngine's ring attention) the powers of two whose 2 x CP chunks divide the sequence
// and leave each rank at least kMinCpRankTokens.
std::vector<int> context_parallel_degrees(const Model& model, const SearchSpace& space);

// The enumerator's extra rules (see the header comment); true when the space may hold `plan`.
bool is_enumerated_shape(const Plan& plan, const Cluster& cluster, const SearchSpace& space);

// "TP8 PP16 v2 ZeRO-1 SP recompute-full mb1" style short label, and the family key used to
// summarise rejections ("TP1 PP1 ZeRO-0 static").
std::string short_label(const Candidate& c);
std::string family_label(const Candidate& c);

}  // namespace starfish::search

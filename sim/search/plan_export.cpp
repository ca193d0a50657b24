#include "sim/search/plan_export.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <set>
#include <stdexcept>

#include "sim/cost/framework.h"
#include "sim/cost/params.h"
#include "sim/spec/error.h"
#include "sim/spec/spec_io.h"
#include "sim/spec/units.h"

namespace starfish::search {
namespace {

// Why a framework cannot run a plan: the plan or training field (as a plan file names it) and
// the reason; no field means it can.
struct Refusal {
  std::string field;  // "": none
  std::string reason;
  explicit operator bool() const { return !field.empty(); }
  std::string text() const { return field.empty() ? "" : "field '" + field + "': " + reason; }
};

Refusal refuse(std::string field, const std::string& why) { return {std::move(field), why}; }

// The reason with the file:line:column of the field when the plan (or model) came from a file.
std::string located(const Job& job, const Refusal& r) {
  if (!r) return "";
  std::string field = r.field;
  const bool model = field.rfind("model.", 0) == 0;
  const Provenance& source = model                                ? job.model.provenance
                             : field.rfind("training.", 0) == 0 ? job.training.provenance
                                                                  : job.plan.provenance;
  if (source.file.empty()) return r.text();
  if (model) field = field.substr(6);  // a model file's keys are top-level
  return source.where(field).to_string() + ": " + r.text();
}

std::string whole(int64_t v) { return std::to_string(v); }

// Megatron-LM as of the commit in configs/frameworks/megatron-lm-arguments.txt.
Refusal megatron_refusal(const Plan& p, const Training& t) {
  if (p.framework != Framework::megatron_lm && p.framework != Framework::megatron_core)
    return refuse("plan.framework", std::string("the plan was simulated as ") + to_string(p.framework) +
                                        " runs it; Megatron-LM exports take megatron-lm or megatron-core plans");
  if (const PlacementProblem placement = placement_problem(p); !placement.why.empty())
    return refuse(placement.field, placement.why);
  if (p.schedule == Schedule::gpipe && p.pp > 1)
    return refuse("plan.schedule", "Megatron-LM runs 1F1B or interleaved 1F1B, not GPipe");
  if (t.optimizer == Optimizer::sgd && p.zero_stage >= 1)
    return refuse("training.optimizer", "Megatron-LM's distributed optimizer (and its FSDP) needs adam");
  if (p.quantized_gemms() && t.optimizer == Optimizer::sgd)
    return refuse("training.optimizer", "Megatron-LM's fp8/fp4 training (TransformerEngine) is set up with adam");
  if (!p.stage_layers.per_stage.empty())
    return refuse("plan.stage_layers", "per-stage layer lists are not exported (Megatron-core takes first_stage_layers / "
                                       "last_stage_layers as --decoder-first/last-pipeline-num-layers)");
  if (attention_kernel(p) == Attention::flash1)
    return refuse("plan.attention", "Megatron-LM has no FlashAttention-1 kernel (its --attention-backend flash is FlashAttention-2 class)");
  if (loss_kernel_of(p) == Loss::pytorch)
    return refuse("plan.loss", "Megatron-LM computes the loss with its vocab-parallel cross-entropy, not PyTorch's cross_entropy");
  // Megatron's --cross-entropy-loss-fusion runs TransformerEngine's kernel (loss: te) or its
  // native one, which keeps an fp32 copy of the logits as the vocab-parallel kernels do
  // (megatron/core/fusions/fused_cross_entropy.py): neither is flash-attn's.
  if (loss_kernel_of(p) == Loss::fused)
    return refuse("plan.loss", "flash-attn's fused cross-entropy is not Megatron's: set loss: te (TransformerEngine's, "
                               "--cross-entropy-fusion-impl te) or vocab-parallel");
  return {};
}

// What Megatron-LM's GPT layer (megatron/core/transformer/transformer_layer.py: pre-norm,
// attention then MLP, each with its own input norm) cannot build: Gemma 2's post-norms, the
// parallel layer with one shared norm, and BLOOM's embedding norm (Megatron-DeepSpeed's
// --embed-layernorm, which Megatron-LM dropped).
Refusal megatron_model_refusal(const Model& m) {
  if (m.post_norms)
    return refuse("model.post_norms", "Megatron-LM's transformer layer has no norms after attention and the MLP");
  if (m.shared_input_norm)
    return refuse("model.shared_input_norm", "Megatron-LM runs attention and the MLP in sequence, each with its own norm");
  if (m.embedding_norm) return refuse("model.embedding_norm", "Megatron-LM has no norm after the word embedding");
  return {};
}

Refusal deepspeed_model_refusal(const Model& m) {
  if (m.is_moe()) return refuse("model.moe", "Starfish does not write DeepSpeed-MoE configurations");
  return {};
}

// DeepSpeed as of the commit in configs/frameworks/deepspeed-config-keys.txt.
Refusal deepspeed_refusal(const Plan& p, const Training& /*training: fp8 is refused by make_job*/, const Model* model = nullptr) {
  if (p.cp > 1)
    return refuse("plan.context_parallel", "DeepSpeed's config has no context parallelism (ring attention is Megatron-core's)");
  if (p.fp8 != Fp8::none)
    return refuse("plan.fp8", "DeepSpeed's config has no fp8 training (fp8 GEMMs come from TransformerEngine in the model code)");
  if (p.fp4 != Fp4::none)
    return refuse("plan.fp4", "DeepSpeed's config has no fp4 training (fp4 GEMMs come from TransformerEngine in the model code)");
  if (p.framework != Framework::deepspeed)
    return refuse("plan.framework", std::string("the plan was simulated as ") + to_string(p.framework) +
                                        " runs it; DeepSpeed exports take deepspeed plans");
  if (const PlacementProblem placement = placement_problem(p); !placement.why.empty())
    return refuse(placement.field, placement.why);
  if (const FrameworkScheduleProblem schedule = framework_schedule_problem(p); schedule.why)
    return refuse(schedule.field, schedule.why);
  if (!p.stage_layers.even())
    return refuse("plan.stage_layers", "DeepSpeed's PipelineModule partitions by its partition_method, not by a stage layout");
  if (p.grad_reduce == GradReduce::fp32)
    return refuse("plan.grad_reduce_dtype", "Starfish writes DeepSpeed configs that reduce gradients in the training dtype "
                                           "(its configuration schema has no fp32 communication type)");
  if (model) return deepspeed_model_refusal(*model);
  return {};
}

// torchtitan as of the commit in configs/frameworks/torchtitan-config.txt: every plan runs under
// FSDP2 (torchtitan/models/llama3/parallelize.py applies fully_shard whatever the degrees), with
// TP, PP and CP beside it, its llama3 decoder built at the model's shape.
Refusal torchtitan_plan_refusal(const Plan& p, const Training& t) {
  if (p.framework != Framework::fsdp)
    return refuse("plan.framework", std::string("the plan was simulated as ") + to_string(p.framework) +
                                        " runs it; torchtitan exports take fsdp plans (FSDP2, as torchtitan runs them)");
  if (p.chunked()) return refuse("plan.chunk_size", "torchtitan has no chunk runtime");
  // Context parallelism is costed as TransformerEngine's p2p ring (context_parallel.h);
  // torchtitan's is PyTorch's experimental context_parallel (all-gather or all-to-all rotation).
  if (p.cp > 1)
    return refuse("plan.context_parallel", "context parallelism is simulated as TransformerEngine's ring attention "
                                           "(Megatron-core); torchtitan's context_parallel_degree rotates K/V differently");
  // FSDP2 always shards the gradients with the optimizer states: reshard_after_forward=True
  // is ZeRO-3, False ZeRO-2 (params kept gathered from forward to backward), no sharding at
  // all (data_parallel_shard_degree 1) ZeRO-0.
  if (p.zero_stage == 1)
    return refuse("plan.zero_stage", "torchtitan's FSDP2 has no ZeRO-1: it shards the gradients too (ZeRO-2 is "
                                     "fsdp_reshard_after_forward never, ZeRO-3 always)");
  // training.enable_cpu_offload is FSDP2's CPUOffloadPolicy: params, grads and the optimizer
  // step on the CPU together, over sharded (ZeRO-3) params.
  for (auto [field, tier] : {std::pair{"plan.offload.params", p.offload.params}, std::pair{"plan.offload.grads", p.offload.grads},
                             std::pair{"plan.offload.optimizer", p.offload.optimizer}}) {
    if (tier == Tier::nvme) return refuse(field, "torchtitan offloads to CPU memory only, not NVMe");
    const bool all_cpu = p.offload.params == Tier::cpu && p.offload.grads == Tier::cpu && p.offload.optimizer == Tier::cpu;
    if (tier == Tier::cpu && (!all_cpu || p.zero_stage != 3))
      return refuse(field, "torchtitan offloads params, grads and optimizer states to the CPU together, under ZeRO-3 "
                           "(training.enable_cpu_offload, FSDP2's CPUOffloadPolicy)");
  }
  if (p.recompute == Recompute::selective)
    return refuse("plan.recompute", "torchtitan's selective AC is op-level (it saves every second matmul's output), not the "
                                    "selective recompute of attention's core Starfish costs; full or none map");
  if (attention_kernel(p) != Attention::flash)
    return refuse("plan.attention", "torchtitan's attention backends (flex, flex_flash, varlen) are fused, "
                                    "FlashAttention-2 class");
  if (loss_kernel_of(p) != Loss::pytorch)
    return refuse("plan.loss", "torchtitan computes the loss with PyTorch's cross_entropy on fp32 logits");
  if (p.train_metric_passes > 0)
    return refuse("plan.train_metric_passes", "torchtitan computes no training metrics over the logits (Composer's "
                                              "trainer does)");
  // (fp8 plans are Megatron-core's, refused above by their framework: torchtitan's float8 is
  // torchao's Float8Linear, which Starfish does not cost.)
  if (t.dtype != DType::bf16 && t.dtype != DType::fp32)
    return refuse("training.dtype", std::string("torchtitan trains in bf16 or fp32 (training.mixed_precision_param), not ") +
                                        to_string(t.dtype));
  if (t.optimizer == Optimizer::sgd)
    return refuse("training.optimizer", "torchtitan's optimizers are Adam, AdamW and DistMuon (OptimizersContainer)");
  if (p.grad_reduce == GradReduce::training && t.dtype != DType::fp32)
    return refuse("plan.grad_reduce_dtype", "torchtitan reduces gradients in float32 only (training.mixed_precision_reduce)");
  return {};
}

// What torchtitan's llama3 decoder (pre-norm RMSNorm, SwiGLU, RoPE, no biases, no dropout) cannot
// build of the model, and weight tying under PP (decoder.py: "Weight tying is not supported
// with Pipeline Parallel").
Refusal torchtitan_model_refusal(const Model& m, const Plan* p = nullptr) {
  const char* why = " is not torchtitan's llama3 decoder (RMSNorm, SwiGLU, RoPE, no biases, no dropout)";
  if (m.is_moe()) return refuse("model.moe", "Starfish does not write torchtitan's MoE models (llama4, deepseek_v3, qwen3)");
  if (m.norm != Norm::rmsnorm) return refuse("model.norm", std::string("LayerNorm") + why);
  if (m.activation != Activation::swiglu) return refuse("model.activation", std::string("GELU") + why);
  if (m.position != PositionEmbedding::rope) return refuse("model.position", std::string("a learned position table") + why);
  if (m.bias) return refuse("model.bias", std::string("linear layers with biases") + why);
  if (m.dropout) return refuse("model.dropout", std::string("dropout") + why);
  for (const LayerSwitch& v : kLayerSwitches)
    if (m.*v.member) return refuse(std::string("model.") + v.field, std::string("its ") + v.field + why);
  if (m.sliding_window.tokens > 0)
    return refuse("model.sliding_window", "torchtitan's llama3 attention has no sliding window");
  if (m.attention_head_dim > 0 && m.attention_head_dim * m.heads != m.hidden)
    return refuse("model.attention_head_dim", "torchtitan's llama3 attention has hidden / heads channels per head");
  if (p && m.tied_embeddings && p->pp > 1)
    return refuse("model.tied_embeddings", "torchtitan ties the embeddings only without pipeline parallelism");
  return {};
}

// Megatron-core's MoE arguments (megatron/training/arguments.py, _add_moe_args): the experts,
// their routing and FFN, which layers are MoE (--moe-layer-freq takes a list of 0/1 per layer),
// dropless (the default) or a capacity factor, and the expert parallel layout.
void add_moe_arguments(const Model& m, const Plan& p, const std::function<void(const char*, const std::string&)>& add) {
  add("--num-experts", std::to_string(m.moe.experts));
  add("--moe-router-topk", std::to_string(m.moe.top_k));
  add("--moe-ffn-hidden-size", std::to_string(m.moe.expert_ffn_hidden));
  if (m.moe.shared_experts > 0)
    add("--moe-shared-expert-intermediate-size", std::to_string(m.moe.shared_experts * m.moe.expert_ffn_hidden));
  if (m.moe.first_dense_layers > 0 || m.moe.every > 1) {
    std::string freq = "\"[";
    for (int l = 0; l < m.layers; ++l) freq += std::string(l ? "," : "") + (m.moe_layer(l) ? "1" : "0");
    add("--moe-layer-freq", freq + "]\"");
  }
  if (m.moe.capacity_factor > 0) add("--moe-expert-capacity-factor", units::format_number(m.moe.capacity_factor));
  add("--moe-grouped-gemm", "");
  add("--moe-token-dispatcher-type", "alltoall");
  add("--expert-model-parallel-size", std::to_string(p.ep));
  add("--expert-tensor-parallel-size", std::to_string(p.expert_tp()));
}

}  // namespace

std::string megatron_unsupported(const Plan& plan, const Training& training) {
  return megatron_refusal(plan, training).text();
}
std::string deepspeed_unsupported(const Plan& plan, const Training& training) {
  return deepspeed_refusal(plan, training).text();
}
std::string megatron_unsupported(const Job& job) {
  if (Refusal r = megatron_refusal(job.plan, job.training); r) return located(job, r);
  return located(job, megatron_model_refusal(job.model));
}
std::string megatron_model_unsupported(const Model& model) { return megatron_model_refusal(model).text(); }
std::string deepspeed_unsupported(const Job& job) { return located(job, deepspeed_refusal(job.plan, job.training, &job.model)); }
std::string torchtitan_unsupported(const Plan& plan, const Training& training, const Model& model) {
  if (Refusal r = torchtitan_plan_refusal(plan, training); r) return r.text();
  return torchtitan_model_refusal(model, &plan).text();
}
std::string torchtitan_unsupported(const Job& job) {
  if (Refusal r = torchtitan_plan_refusal(job.plan, job.training); r) return located(job, r);
  return located(job, torchtitan_model_refusal(job.model, &job.plan));
}
std::string deepspeed_model_unsupported(const Model& model) { return deepspeed_model_refusal(model).text(); }
std::string torchtitan_model_unsupported(const Model& model) { return torchtitan_model_refusal(model).text(); }

namespace {

using ArgumentList = std::vector<std::pair<std::string, std::string>>;

// Megatron-LM's parallelism, batch, recomputation and distributed-optimizer arguments.
void add_parallel_arguments(const Job& job, ArgumentList& a) {
  const Plan& p = job.plan;
  const Model& m = job.model;
  const Training& t = job.training;
  auto add = [&](const char* name, const std::string& value = "") { a.emplace_back(name, value); };
  add("--tensor-model-parallel-size", whole(p.tp));
  add("--pipeline-model-parallel-size", whole(p.pp));
  if (p.cp > 1) {
    add("--context-parallel-size", whole(p.cp));
    add("--cp-comm-type", "p2p");  // TransformerEngine's ring attention, as simulated (context_parallel.h)
  }
  // Uneven stages: Megatron-core's first/last stage layer counts; its interleaving then takes the
  // number of virtual stages (the layers per chunk differ between stages).
  if (p.stage_layers.first > 0) add("--decoder-first-pipeline-num-layers", whole(p.stage_layers.first));
  if (p.stage_layers.last > 0) add("--decoder-last-pipeline-num-layers", whole(p.stage_layers.last));
  if (p.stage_layers.embedding_slot) add("--account-for-embedding-in-pipeline-split");
  if (p.stage_layers.loss_slot) add("--account-for-loss-in-pipeline-split");
  if (p.virtual_stages > 1 && !p.stage_layers.even())
    add("--num-virtual-stages-per-pipeline-rank", whole(p.virtual_stages));
  else if (p.virtual_stages > 1)
    add("--num-layers-per-virtual-pipeline-stage", whole(m.layers / (p.pp * p.virtual_stages)));
  add("--micro-batch-size", whole(p.micro_batch));
  add("--global-batch-size", whole(t.global_batch));
  if (p.sequence_parallel) add("--sequence-parallel");
  if (p.recompute == Recompute::selective) add("--recompute-granularity", "selective");
  if (p.recompute == Recompute::selective && p.recompute_modules != recompute_module::core_attn)
    add("--recompute-modules", recompute_modules_text(p.recompute_modules, " "));  // nargs: space-separated
  if (p.recompute == Recompute::full) {
    // Every layer its own recompute unit (uniform, 1), or the first N of each virtual stage (block).
    add("--recompute-granularity", "full");
    add("--recompute-method", p.recompute_layers > 0 ? "block" : "uniform");
    add("--recompute-num-layers", whole(std::max(1, p.recompute_layers)));
  }
  if (p.zero_stage == 1) add("--use-distributed-optimizer");
  if (p.zero_stage >= 2) {
    // Megatron FSDP (megatron/core/distributed/fsdp): ZeRO-2 is its optim_grads strategy, ZeRO-3
    // optim_grads_params; arguments.py asserts its fsdp_dtensor checkpoint format.
    add("--use-megatron-fsdp");
    add("--data-parallel-sharding-strategy", p.zero_stage == 3 ? "optim_grads_params" : "optim_grads");
    add("--ckpt-format", "fsdp_dtensor");
  }
  if (p.overlap_grad_reduce) add("--overlap-grad-reduce");
  // The distributed optimizer's (or Megatron FSDP's) param all-gather overlapped with the next
  // forward, as the grads' reduce-scatter is with backward (arguments.py requires
  // --overlap-grad-reduce, and the distributed optimizer or Megatron FSDP).
  if (p.overlap_grad_reduce && p.zero_stage >= 1) add("--overlap-param-gather");
  if (p.offload.optimizer == Tier::cpu) {
    add("--optimizer-cpu-offload");
    add("--use-precision-aware-optimizer");  // required by --optimizer-cpu-offload
  }
}

void add_precision_arguments(const Plan& p, const Training& t, ArgumentList& a) {
  auto add = [&](const char* name, const std::string& value = "") { a.emplace_back(name, value); };
  // Precision: bf16 / fp16 mixed precision, fp32/tf32 without a flag; fp8 and fp4 GEMMs are
  // TransformerEngine's over the 16-bit params, in the plan's format (hybrid: E4M3 forward, E5M2
  // gradients) and scaling recipe (fp4: E2M1 with NVFP4's block scales, --fp4-format/--fp4-recipe
  // in arguments.py).
  if (t.dtype == DType::bf16) add("--bf16");
  if (t.dtype == DType::fp16) add("--fp16");
  // The gradient buffer's and reduction's precision (grad_buffers): fp32 is forced under bf16
  // (arguments.py) unless --grad-reduce-in-bf16; under fp16 it takes the flag.
  if (t.dtype == DType::bf16 && p.grad_reduce == GradReduce::training) add("--grad-reduce-in-bf16");
  if (t.dtype == DType::fp16 && p.grad_reduce == GradReduce::fp32) add("--accumulate-allreduce-grads-in-fp32");
  if (p.fp8 != Fp8::none) {
    add("--fp8-format", to_string(p.fp8));
    add("--fp8-recipe", to_string(p.fp8_recipe));
    if (p.fp8_params) add("--fp8-param-gather");
    if (p.has_bf16_layers()) {  // megatron/core/fp8_utils.py is_first_last_bf16_layer
      add("--first-last-layers-bf16");
      add("--num-layers-at-start-in-bf16", whole(p.bf16_layers.first));
      add("--num-layers-at-end-in-bf16", whole(p.bf16_layers.last));
    }
  }
  if (p.fp4 == Fp4::nvfp4) {
    add("--fp4-format", "e2m1");
    add("--fp4-recipe", "nvfp4");
  }
  // The attention kernel the plan was simulated with (TransformerEngine's backends).
  add("--attention-backend", attention_kernel(p) == Attention::flash ? "flash" : "unfused");
  if (loss_kernel_of(p) == Loss::te) {
    add("--cross-entropy-loss-fusion");
    add("--cross-entropy-fusion-impl", "te");
  }
}

// The model's shape, as Megatron-LM's GPT builds it.
void add_model_arguments(const Model& m, const Plan& p, ArgumentList& a) {
  auto add = [&](const char* name, const std::string& value = "") { a.emplace_back(name, value); };
  add("--num-layers", whole(m.layers));
  add("--hidden-size", whole(m.hidden));
  add("--num-attention-heads", whole(m.heads));
  if (m.kv_heads != m.heads) {
    add("--group-query-attention");
    add("--num-query-groups", whole(m.kv_heads));
  }
  if (m.is_mla()) {  // Megatron-core's MLASelfAttention
    add("--multi-latent-attention");
    if (m.mla.q_lora_rank > 0) add("--q-lora-rank", whole(m.mla.q_lora_rank));
    add("--kv-lora-rank", whole(m.mla.kv_lora_rank));
    add("--qk-head-dim", whole(m.mla.qk_nope_head_dim));
    add("--qk-pos-emb-head-dim", whole(m.mla.qk_rope_head_dim));
    add("--v-head-dim", whole(m.mla.v_head_dim));
  }
  add("--ffn-hidden-size", whole(m.ffn_hidden));
  add("--seq-length", whole(m.seq_len));
  add("--max-position-embeddings", whole(m.position_rows()));
  // The model's vocabulary exactly (Megatron would otherwise pad it to a multiple of 128 x TP);
  // the tokenizer is the user's: swap in --tokenizer-type HuggingFaceTokenizer --tokenizer-model.
  add("--tokenizer-type", "NullTokenizer");
  // (megatron/core/tokenizers/text/libraries/null_tokenizer.py: ids 0..vocab-1, the last one the
  // end of document); Megatron still pads it to a multiple of TP for its vocab-parallel embedding.
  add("--vocab-size", whole(m.vocab));
  add("--make-vocab-size-divisible-by", "1");
  if (m.activation == Activation::swiglu) add("--swiglu");
  if (m.norm == Norm::rmsnorm) add("--normalization", "RMSNorm");
  if (m.position == PositionEmbedding::rope) {
    add("--position-embedding-type", "rope");
    add("--rotary-base", units::format_number(m.rope_base));
  }
  if (!m.tied_embeddings) add("--untie-embeddings-and-output-weights");
  if (!m.bias) add("--disable-bias-linear");
  if (m.qkv_bias) add("--add-qkv-bias");  // Qwen2: biases on the QKV projection alone
  if (m.qk_norm) add("--qk-layernorm");   // the model's normalization over each q/k head
  if (m.sliding_window.tokens > 0) {
    // TransformerEngine's window_size (left, right): the tokens - 1 keys before the query, none
    // after; layers full_every, 2 full_every, ... attend fully (transformer/utils.py
    // is_layer_window_attention: layer_number % window_attn_skip_freq == 0).
    add("--window-size", whole(m.sliding_window.tokens - 1) + ",0");
    if (m.sliding_window.full_every > 0) add("--window-attn-skip-freq", whole(m.sliding_window.full_every));
  }
  if (m.attention_head_dim > 0) add("--kv-channels", whole(m.attention_head_dim));
  if (m.is_moe()) add_moe_arguments(m, p, [&](const char* name, const std::string& value) { add(name, value); });
  if (!m.dropout) {  // Megatron's default is 0.1 for both
    add("--attention-dropout", "0");
    add("--hidden-dropout", "0");
  }
}

// The optimizer and the run's seed.
void add_optimizer_arguments(const Training& t, ArgumentList& a) {
  auto add = [&](const char* name, const std::string& value = "") { a.emplace_back(name, value); };
  add("--optimizer", t.optimizer == Optimizer::sgd ? "sgd" : "adam");  // Megatron's adam is AdamW
  add("--lr", units::format_number(t.learning_rate));
  add("--weight-decay", units::format_number(t.weight_decay));
  add("--clip-grad", units::format_number(t.grad_clip));  // 0 turns clipping off
  add("--seed", whole(static_cast<int64_t>(t.seed)));
}

}  // namespace

std::vector<std::pair<std::string, std::string>> megatron_argument_list(const Job& job) {
  if (const std::string why = megatron_unsupported(job); !why.empty()) throw SpecError("--megatron: " + why);
  ArgumentList a;
  add_parallel_arguments(job, a);
  add_precision_arguments(job.plan, job.training, a);
  add_model_arguments(job.model, job.plan, a);
  add_optimizer_arguments(job.training, a);
  return a;
}

std::string megatron_arguments(const Job& job) {
  std::string s;
  for (const auto& [name, value] : megatron_argument_list(job))
    s += "  " + name + (value.empty() ? "" : " " + value) + " \\\n";
  s.resize(s.size() - 3);  // the last line needs no continuation
  return s + "\n";
}

namespace {

// The precision recipe Megatron-Bridge registers (training/mixed_precision.py) that runs the
// plan's GEMMs on every layer, or nullptr where none does:
//  - <dtype>_mixed: no quantized GEMMs;
//  - <dtype>_with_fp8_delayed_scaling_mixed: fp8 hybrid, delayed scaling;
//  - <dtype>_with_mxfp8_mixed: fp8 e4m3, MXFP8 scaling;
//  - <dtype>_with_fp8_current_scaling_mixed: fp8 hybrid, tensorwise current scaling, the first
//    and last layer in bf16 (first_last_layers_bf16, 1 and 1: plan.bf16_layers);
//  - bf16_with_nvfp4_mixed: fp4 e2m1, NVFP4 (bf16 only).
// The fp8 recipes set fp8_param_gather: a plan with fp8_params is costed as they run; one without
// is costed with 16-bit params and gathers, more bytes than the run holds and moves, never fewer.
const char* bridge_quantized_recipe(const Plan& p, const Training& t) {
  const bool bf16 = t.dtype == DType::bf16;
  if (p.fp4 == Fp4::nvfp4) return p.fp8 == Fp8::none && bf16 ? "bf16_with_nvfp4_mixed" : nullptr;
  if (p.fp8 == Fp8::none) return bf16 ? "bf16_mixed" : "fp16_mixed";
  if (p.fp8 == Fp8::hybrid && p.fp8_recipe == Fp8Recipe::delayed)
    return bf16 ? "bf16_with_fp8_delayed_scaling_mixed" : "fp16_with_fp8_delayed_scaling_mixed";
  if (p.fp8 == Fp8::e4m3 && p.fp8_recipe == Fp8Recipe::mxfp8 && !p.has_bf16_layers())
    return bf16 ? "bf16_with_mxfp8_mixed" : "fp16_with_mxfp8_mixed";
  if (p.fp8 == Fp8::hybrid && p.fp8_recipe == Fp8Recipe::tensorwise && p.bf16_layers == Plan::Bf16Layers{1, 1})
    return bf16 ? "bf16_with_fp8_current_scaling_mixed" : "fp16_with_fp8_current_scaling_mixed";
  return nullptr;
}

// Megatron-Bridge runs Megatron-core: plans costed as Megatron-core runs them, through the
// precision recipes it registers (training/mixed_precision.py).
Refusal megatron_bridge_refusal(const Plan& p, const Training& t) {
  if (p.framework != Framework::megatron_core)
    return refuse("plan.framework", std::string("the plan was simulated as ") + to_string(p.framework) +
                                        " runs it; Megatron-Bridge runs Megatron-core: its exports take megatron-core plans");
  if (Refusal r = megatron_refusal(p, t); r) return r;
  if (t.dtype != DType::bf16 && t.dtype != DType::fp16)
    return refuse("training.dtype", std::string("Megatron-Bridge's precision recipes train in bf16 or fp16, not ") +
                                        to_string(t.dtype));
  if (p.quantized_gemms() && bridge_quantized_recipe(p, t) == nullptr) {
    if (p.fp4 != Fp4::none) return refuse("plan.fp4", "Megatron-Bridge's NVFP4 recipe (bf16_with_nvfp4_mixed) trains in bf16");
    return refuse("plan.fp8", "Megatron-Bridge's fp8 recipes are hybrid with delayed scaling or e4m3 with MXFP8 on every "
                              "layer, or hybrid with tensorwise current scaling and the first and last layer in bf16 "
                              "(bf16_layers: {first: 1, last: 1}): not this plan's fp8");
  }
  return {};
}

// Megatron-LM arguments whose value Megatron-Bridge takes under another name.
const std::map<std::string, std::string>& bridge_renamed_arguments() {
  static const std::map<std::string, std::string> renamed = {
      {"--tensor-model-parallel-size", "model.tensor_model_parallel_size"},
      {"--pipeline-model-parallel-size", "model.pipeline_model_parallel_size"},
      {"--context-parallel-size", "model.context_parallel_size"},  // plans with context parallelism
      {"--cp-comm-type", "model.cp_comm_type"},
      {"--decoder-first-pipeline-num-layers", "model.num_layers_in_first_pipeline_stage"},
      {"--decoder-last-pipeline-num-layers", "model.num_layers_in_last_pipeline_stage"},
      {"--num-virtual-stages-per-pipeline-rank", "model.virtual_pipeline_model_parallel_size"},
      {"--micro-batch-size", "train.micro_batch_size"},
      {"--global-batch-size", "train.global_batch_size"},
      {"--recompute-granularity", "model.recompute_granularity"},
      {"--recompute-method", "model.recompute_method"},
      {"--recompute-num-layers", "model.recompute_num_layers"},
      {"--attention-backend", "model.attention_backend"},
      {"--cross-entropy-fusion-impl", "model.cross_entropy_fusion_impl"},
      {"--num-layers", "model.num_layers"},
      {"--hidden-size", "model.hidden_size"},
      {"--num-attention-heads", "model.num_attention_heads"},
      {"--num-query-groups", "model.num_query_groups"},
      {"--ffn-hidden-size", "model.ffn_hidden_size"},
      {"--tokenizer-type", "tokenizer.tokenizer_type"},
      {"--make-vocab-size-divisible-by", "model.make_vocab_size_divisible_by"},
      {"--normalization", "model.normalization"},
      {"--position-embedding-type", "model.position_embedding_type"},
      {"--rotary-base", "model.rotary_base"},
      {"--kv-channels", "model.kv_channels"},
      {"--num-experts", "model.num_moe_experts"},
      {"--moe-router-topk", "model.moe_router_topk"},
      {"--moe-ffn-hidden-size", "model.moe_ffn_hidden_size"},
      {"--moe-shared-expert-intermediate-size", "model.moe_shared_expert_intermediate_size"},
      {"--moe-expert-capacity-factor", "model.moe_expert_capacity_factor"},
      {"--moe-token-dispatcher-type", "model.moe_token_dispatcher_type"},
      {"--expert-model-parallel-size", "model.expert_model_parallel_size"},
      {"--expert-tensor-parallel-size", "model.expert_tensor_parallel_size"},
      {"--attention-dropout", "model.attention_dropout"},
      {"--hidden-dropout", "model.hidden_dropout"},
      {"--optimizer", "optimizer.optimizer"},
      {"--lr", "optimizer.lr"},
      {"--clip-grad", "optimizer.clip_grad"},
      {"--seed", "rng.seed"},
      {"--data-parallel-sharding-strategy", "ddp.data_parallel_sharding_strategy"},
  };
  return renamed;
}

// Megatron-LM switches that are Megatron-Bridge booleans.
const std::map<std::string, std::string>& bridge_flag_arguments() {
  static const std::map<std::string, std::string> flags = {
      {"--sequence-parallel", "model.sequence_parallel"},
      {"--account-for-embedding-in-pipeline-split", "model.account_for_embedding_in_pipeline_split"},
      {"--account-for-loss-in-pipeline-split", "model.account_for_loss_in_pipeline_split"},
      {"--overlap-grad-reduce", "ddp.overlap_grad_reduce"},
      {"--overlap-param-gather", "ddp.overlap_param_gather"},
      {"--optimizer-cpu-offload", "optimizer.optimizer_cpu_offload"},
      {"--use-precision-aware-optimizer", "optimizer.use_precision_aware_optimizer"},
      {"--cross-entropy-loss-fusion", "model.cross_entropy_loss_fusion"},
      {"--moe-grouped-gemm", "model.moe_grouped_gemm"},
      {"--use-megatron-fsdp", "ddp.use_megatron_fsdp"},
  };
  return flags;
}

// Where Megatron-Bridge keeps what each Megatron-LM argument sets (ConfigContainer paths: the
// model provider's TransformerConfig fields, train, optimizer, ddp, dataset, tokenizer, rng).
// One home for what a plan decides (megatron_argument_list), one table for Bridge's names.
void add_bridge_override(const Job& job, const std::string& arg, const std::string& value,
                         const std::function<void(const std::string&, const std::string&)>& set) {
  const auto& renamed = bridge_renamed_arguments();
  const auto& flags = bridge_flag_arguments();
  if (auto it = renamed.find(arg); it != renamed.end()) return set(it->second, value);
  if (auto it = flags.find(arg); it != flags.end()) return set(it->second, "true");
  const Plan& p = job.plan;
  if (arg == "--num-layers-per-virtual-pipeline-stage") return set("model.virtual_pipeline_model_parallel_size", whole(p.virtual_stages));
  if (arg == "--use-distributed-optimizer") {
    set("ddp.use_distributed_optimizer", "true");
    return set("optimizer.use_distributed_optimizer", "true");
  }
  if (arg == "--seq-length") {  // run_recipe.py syncs model.seq_length from the dataset's
    set("dataset.seq_length", value);
    return set("model.seq_length", value);
  }
  if (arg == "--vocab-size") {
    // An explicit model vocabulary is not padded (training/setup.py); Megatron-LM with
    // --make-vocab-size-divisible-by 1 pads it to a multiple of TP for the vocab-parallel
    // embedding, and so does this.
    set("tokenizer.vocab_size", value);
    return set("model.vocab_size", whole((job.model.vocab + p.tp - 1) / p.tp * p.tp));
  }
  if (arg == "--swiglu") {
    set("model.activation_func", "silu");
    return set("model.gated_linear_unit", "true");
  }
  if (arg == "--untie-embeddings-and-output-weights") return set("model.share_embeddings_and_output_weights", "false");
  if (arg == "--grad-reduce-in-bf16") return set("ddp.grad_reduce_in_fp32", "false");
  if (arg == "--accumulate-allreduce-grads-in-fp32") return set("ddp.grad_reduce_in_fp32", "true");
  if (arg == "--disable-bias-linear") return set("model.add_bias_linear", "false");
  if (arg == "--add-qkv-bias") return set("model.add_qkv_bias", "true");
  if (arg == "--qk-layernorm") return set("model.qk_layernorm", "true");
  if (arg == "--window-size") return set("model.window_size", "[" + value + "]");  // TransformerConfig's (left, right)
  if (arg == "--window-attn-skip-freq") return set("model.window_attn_skip_freq", value);
  if (arg == "--recompute-modules") {  // a list: [core_attn,moe_act]
    std::string list = value;
    std::replace(list.begin(), list.end(), ' ', ',');
    return set("model.recompute_modules", "[" + list + "]");
  }
  if (arg == "--moe-layer-freq") return set("model.moe_layer_freq", value.substr(1, value.size() - 2));  // unquoted
  if (arg == "--weight-decay") {  // the recipe's scheduler sets the weight decay each step
    set("optimizer.weight_decay", value);
    set("scheduler.start_weight_decay", value);
    return set("scheduler.end_weight_decay", value);
  }
  // Precision is the recipe's mixed_precision; the GQA flag is implied by num_query_groups; the
  // position table is seq_length long (gpt_provider.py: max_sequence_length=self.seq_length):
  // a model's longer table (max_positions) leaves the run fewer parameters than predicted, never more.
  // Megatron-Bridge asserts Megatron FSDP's checkpoint format only when it saves or loads
  // (training/config.py), which the command it is given does not.
  if (arg == "--ckpt-format") return;
  if (arg == "--bf16" || arg == "--fp16" || arg == "--fp8-format" || arg == "--fp8-recipe" || arg == "--fp4-format" ||
      arg == "--fp4-recipe" || arg == "--fp8-param-gather" || arg == "--first-last-layers-bf16" ||
      arg == "--num-layers-at-start-in-bf16" || arg == "--num-layers-at-end-in-bf16" ||
      arg == "--group-query-attention" || arg == "--max-position-embeddings")
    return;
  throw std::logic_error("Megatron-Bridge export: no override for Megatron-LM's " + arg);
}

}  // namespace

// What Megatron-Bridge's overrides cannot build of the model: multi-head latent attention needs
// q_lora_rank, kv_lora_rank and the head widths, which the stored schema
// (configs/frameworks/megatron-bridge-overrides.txt, GPTModelProvider's fields) does not have
// beside model.multi_latent_attention.
Refusal megatron_bridge_model_refusal(const Model& m) {
  if (Refusal r = megatron_model_refusal(m); r) return r;
  if (m.is_mla())
    return refuse("model.mla", "Megatron-Bridge's GPT overrides have no MLA ranks (q_lora_rank, kv_lora_rank, head widths): "
                               "Starfish writes no Megatron-Bridge run of a multi-head latent attention model");
  return {};
}

std::string megatron_bridge_unsupported(const Plan& plan, const Training& training) {
  return megatron_bridge_refusal(plan, training).text();
}
std::string megatron_bridge_unsupported(const Job& job) {
  if (Refusal r = megatron_bridge_refusal(job.plan, job.training); r) return located(job, r);
  return located(job, megatron_bridge_model_refusal(job.model));
}
std::string megatron_bridge_model_unsupported(const Model& model) { return megatron_bridge_model_refusal(model).text(); }

std::vector<std::pair<std::string, std::string>> megatron_bridge_overrides(const Job& job) {
  if (const std::string why = megatron_bridge_unsupported(job); !why.empty()) throw SpecError("--megatron-bridge: " + why);
  std::vector<std::pair<std::string, std::string>> out;
  auto set = [&](const std::string& key, const std::string& value) {
    for (auto& [k, v] : out)
      if (k == key) return void(v = value);
    out.emplace_back(key, value);
  };
  // Every setting the plan decides, written even where it is the base recipe's default, so the
  // run does not depend on what vanilla_gpt_pretrain_config or GPTModelProvider default to.
  const Training& t = job.training;
  set("mixed_precision", bridge_quantized_recipe(job.plan, t));
  for (const char* key : {"model.sequence_parallel", "ddp.use_distributed_optimizer", "optimizer.use_distributed_optimizer",
                          "ddp.overlap_grad_reduce", "ddp.overlap_param_gather", "optimizer.optimizer_cpu_offload",
                          "optimizer.use_precision_aware_optimizer", "model.cross_entropy_loss_fusion",
                          "model.gated_linear_unit"})
    set(key, "false");
  set("model.activation_func", "gelu");
  set("model.normalization", "LayerNorm");
  set("model.position_embedding_type", "learned_absolute");
  set("model.share_embeddings_and_output_weights", "true");
  set("model.add_bias_linear", "true");
  set("model.add_qkv_bias", "false");
  set("model.qk_layernorm", "false");
  set("model.hidden_dropout", "0.1");  // Megatron's defaults, when the model has dropout
  set("model.attention_dropout", "0.1");
  set("model.num_query_groups", whole(job.model.kv_heads));
  for (const auto& [arg, value] : megatron_argument_list(job)) add_bridge_override(job, arg, value, set);
  return out;
}

std::string megatron_bridge_command(const Job& job) {
  std::string s = "python scripts/training/run_recipe.py --recipe vanilla_gpt_pretrain_config --mode pretrain --dataset mock";
  for (const auto& [key, value] : megatron_bridge_overrides(job)) s += " \\\n  " + key + "=" + value;
  return s + "\n";
}

void write_deepspeed_config(JsonWriter& w, const Job& job, const ExportOptions& options) {
  if (const std::string why = deepspeed_unsupported(job); !why.empty()) throw SpecError("--deepspeed: " + why);
  const Plan& p = job.plan;
  const Training& t = job.training;
  w.begin_object();
  w.field("train_batch_size", t.global_batch);
  w.field("train_micro_batch_size_per_gpu", p.micro_batch);
  w.field("gradient_accumulation_steps", job.micro_batches());
  w.field("gradient_clipping", t.grad_clip);  // 0 turns clipping off, as DeepSpeed's default
  w.key("zero_optimization").begin_object();
  w.field("stage", p.zero_stage);
  // Both tiers run ZeRO-3's per-layer reduce-scatters beside the backward (static_iteration.cpp
  // reduce_layer; estimate.cpp dp_comm_time_s), as DeepSpeed's stage 3 does by default
  // (zero/config.py: overlap_comm defaults to stage == 3); with overlap_comm false it reduces on
  // the default stream (stage3.py reduce_and_partition_stream), in the compute's way.
  w.field("overlap_comm", p.overlap_grad_reduce || p.zero_stage == 3);
  auto device = [&](const char* key, Tier tier) {
    if (tier == Tier::gpu) return;
    w.key(key).begin_object();
    w.field("device", to_string(tier));
    if (tier == Tier::nvme) w.field("nvme_path", options.nvme_path);
    w.field("pin_memory", true);
    w.end_object();
  };
  device("offload_optimizer", p.offload.optimizer);
  device("offload_param", p.offload.params);
  w.end_object();
  w.key("bf16").begin_object().field("enabled", t.dtype == DType::bf16).end_object();
  w.key("fp16").begin_object().field("enabled", t.dtype == DType::fp16).end_object();
  if (p.recompute == Recompute::full) {
    w.key("activation_checkpointing").begin_object();
    w.field("partition_activations", p.tp > 1).field("contiguous_memory_optimization", false);
    w.end_object();
  }
  w.key("optimizer").begin_object();
  w.field("type", t.optimizer == Optimizer::adamw ? "AdamW" : t.optimizer == Optimizer::sgd ? "SGD" : "Adam");
  w.key("params").begin_object().field("lr", t.learning_rate).field("weight_decay", t.weight_decay).end_object();
  w.end_object();
  // ZeRO asserts on an optimizer outside its tested list (deepspeed/runtime/zero/utils.py:
  // Adam, AdamW, Adagrad, Lion and their fused/CPU forms) unless this is set (engine.py).
  if (p.zero_stage > 0 && t.optimizer == Optimizer::sgd) w.field("zero_allow_untested_optimizer", true);
  w.end_object();
}

std::string deepspeed_config(const Job& job, const ExportOptions& options) {
  JsonWriter w(true);
  write_deepspeed_config(w, job, options);
  return w.str() + "\n";
}

namespace {

std::string py_str(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}
std::string py_bool(bool b) { return b ? "True" : "False"; }

// Writes Python calls with keyword arguments and records, for the schema tests, every name
// taken from torchtitan and every keyword passed.
class RecipeWriter {
 public:
  explicit RecipeWriter(TorchtitanRecipe& recipe) : r_(recipe) {}
  // `name` from `module`; `attribute`: written as llama3.NAME, not imported itself.
  void uses(const std::string& module, const std::string& name, bool attribute = false) {
    const std::pair<std::string, std::string> use{module, name};
    if (std::find(r_.imports.begin(), r_.imports.end(), use) == r_.imports.end()) r_.imports.push_back(use);
    if (!attribute) import_lines_[module].insert(name);
  }
  // callee(k=v, ...) on one line when it fits in 100 columns, else one keyword per line at
  // `indent` + 4 (values already laid out for that depth).
  std::string call(const std::string& callee, const std::vector<std::pair<std::string, std::string>>& kwargs, int indent) {
    std::string line = callee + "(";
    for (size_t i = 0; i < kwargs.size(); ++i) {
      r_.keywords.push_back({callee, kwargs[i].first, kwargs[i].second});
      line += (i ? ", " : "") + kwargs[i].first + "=" + kwargs[i].second;
    }
    line += ")";
    if (indent + line.size() <= 100 && line.find('\n') == std::string::npos) return line;
    std::string text = callee + "(\n";
    for (const auto& [k, v] : kwargs) text += std::string(indent + 4, ' ') + k + "=" + v + ",\n";
    return text + std::string(indent, ' ') + ")";
  }
  std::string import_block() const {
    std::string text;
    for (const auto& [module, names] : import_lines_) {
      text += "from " + module + " import ";
      bool first = true;
      for (const std::string& n : names) text += (first ? "" : ", ") + n, first = false;
      text += "\n";
    }
    return text;
  }

 private:
  TorchtitanRecipe& r_;
  std::map<std::string, std::set<std::string>> import_lines_;
};

// Each model chunk's layers in forward order (chunk v * pp + stage: torchtitan's looped
// schedules place chunk k on rank k % pp, as Megatron's interleaving does), from the layers each
// stage holds (non-contiguous runs when interleaved).
std::vector<std::vector<int>> model_chunks(const Job& job) {
  const Plan& p = job.plan;
  std::vector<std::vector<std::vector<int>>> runs(p.pp);
  for (int stage = 0; stage < p.pp; ++stage)
    for (int layer : stage_layers(job.model, plan_shard(p, stage))) {
      if (runs[stage].empty() || runs[stage].back().back() + 1 != layer) runs[stage].emplace_back();
      runs[stage].back().push_back(layer);
    }
  std::vector<std::vector<int>> chunks;
  for (int v = 0; v < p.virtual_stages; ++v)
    for (int stage = 0; stage < p.pp; ++stage) {
      if (static_cast<int>(runs[stage].size()) != p.virtual_stages)
        throw SpecError("--torchtitan: stage " + std::to_string(stage) + " holds " + std::to_string(runs[stage].size()) +
                        " runs of layers, not its " + std::to_string(p.virtual_stages) + " model chunks");
      chunks.push_back(runs[stage][v]);
    }
  return chunks;
}

// parallelism.module_fqns_per_model_part: the embedding with the first chunk, the final norm
// and the LM head with the last, every chunk on its own line at `indent` + 4.
std::string model_parts_value(const Job& job, int indent) {
  const std::vector<std::vector<int>> chunks = model_chunks(job);
  std::string text = "[\n";
  for (size_t c = 0; c < chunks.size(); ++c) {
    std::vector<std::string> names;
    if (c == 0) names.push_back("tok_embeddings");
    for (int layer : chunks[c]) names.push_back("layers." + std::to_string(layer));
    if (c + 1 == chunks.size()) names.insert(names.end(), {"norm", "lm_head"});
    text += std::string(indent + 4, ' ') + "[";
    for (size_t i = 0; i < names.size(); ++i) text += (i ? ", " : "") + py_str(names[i]);
    text += "],\n";
  }
  return text + std::string(indent, ' ') + "]";
}

// The model at its shape through torchtitan's own llama3 builders (torchtitan/models/llama3/
// __init__.py: the flavors "8B", "70B", ... are built the same way), registered as the flavor
// "starfish" so model_registry gives it llama3's parallelize and pipelining functions.
std::string model_function(RecipeWriter& w, const Model& m) {
  const std::string llama3 = "torchtitan.models.llama3";
  w.uses("torchtitan.models", "llama3");
  w.uses(llama3, "Llama3Model");
  w.uses("torchtitan.models.common", "ComplexRoPE");
  w.uses("torchtitan.models.common", "Embedding");
  w.uses("torchtitan.models.common", "Linear");
  w.uses("torchtitan.models.common", "RMSNorm");
  // A tied embedding takes the LM head's init (llama3's 1B / 3B skip the embedding's own).
  const std::string embedding_init = m.tied_embeddings ? "_EMBEDDING_SKIP_INIT" : "_EMBEDDING_INIT";
  for (const char* name : {"_build_llama3_layers", "_NORM_INIT", "_output_linear_init", "llama3_configs"})
    w.uses(llama3, name, true);
  w.uses(llama3, embedding_init, true);
  const std::string dim = whole(m.hidden), vocab = whole(m.vocab);
  const std::string rope = w.call("ComplexRoPE.Config",
                                  {{"dim", whole(m.hidden / m.heads)}, {"max_context_length", whole(m.seq_len)},
                                   {"theta", units::format_number(m.rope_base)}},
                                  12);
  const std::string layers = w.call("llama3._build_llama3_layers",
                                    {{"n_layers", whole(m.layers)}, {"dim", dim}, {"n_heads", whole(m.heads)},
                                     {"n_kv_heads", whole(m.kv_heads)}, {"hidden_dim", whole(m.ffn_hidden)},
                                     {"rope", rope}, {"attn_backend", "attn_backend"},
                                     {"tp_gemm_backend", "tp_gemm_backend"}},
                                    8);
  const std::string config = w.call(
      "Llama3Model.Config",
      {{"dim", dim},
       {"vocab_size", vocab},
       {"enable_weight_tying", py_bool(m.tied_embeddings)},
       {"tok_embeddings", w.call("Embedding.Config", {{"num_embeddings", vocab}, {"embedding_dim", dim},
                                                      {"param_init", "llama3." + embedding_init}}, 8)},
       {"norm", w.call("RMSNorm.Config", {{"normalized_shape", dim}, {"param_init", "llama3._NORM_INIT"}}, 8)},
       {"lm_head", w.call("Linear.Config", {{"in_features", dim}, {"out_features", vocab},
                                            {"param_init", "llama3._output_linear_init(" + dim + ")"}}, 8)},
       {"layers", layers}},
      4);
  return "def _starfish_model(attn_backend: str, tp_gemm_backend: str = \"default\") -> Llama3Model.Config:\n"
         "    # " + m.name + ": " + whole(m.layers) + " layers, hidden " + dim + ", " + whole(m.heads) + " heads (" +
         whole(m.kv_heads) + " KV), FFN " + whole(m.ffn_hidden) + ",\n"
         "    # vocabulary " + vocab + ". RoPE scaling (llama3.1's, yarn) does not change the cost: give\n"
         "    # ComplexRoPE.Config the scaling= your checkpoint's config.json says.\n"
         "    return " + config + "\n";
}

// TrainingConfig's keywords: the batch in tokens, clipping, precision, offload.
std::vector<std::pair<std::string, std::string>> torchtitan_training(const Job& job) {
  const Plan& p = job.plan;
  const Model& m = job.model;
  const Training& t = job.training;
  const int64_t tokens_per_micro_batch = int64_t{p.micro_batch} * m.seq_len;
  // 16-bit compute through FSDP2's MixedPrecisionPolicy over fp32 params (training.dtype stays
  // float32: torchtitan's "bfloat16" there drops the fp32 master weights Starfish counts).
  std::vector<std::pair<std::string, std::string>> training{
      {"num_tokens_per_microbatch_per_dp_rank", std::to_string(tokens_per_micro_batch)},
      {"num_tokens_per_train_step", std::to_string(t.global_batch * m.seq_len)},
      {"max_context_length", whole(m.seq_len)},
      // clip_grads_with_norm_ scales by max_norm / norm: 0 would zero the gradients.
      {"max_norm", t.grad_clip > 0 ? units::format_number(t.grad_clip) : "float(\"inf\")"},
      {"mixed_precision_param", py_str(t.dtype == DType::bf16 ? "bfloat16" : "float32")},
      {"mixed_precision_reduce", py_str("float32")}};
  if (p.offload.params == Tier::cpu) training.emplace_back("enable_cpu_offload", "True");
  // Trainer.Config refuses CUDA graphs with PP; Starfish costs no graph replay anyway.
  if (p.pp > 1) training.emplace_back("disable_cuda_graphs", "True");
  return training;
}

// ParallelismConfig's keywords: FSDP2's sharding for the ZeRO stage, TP with SP, PP with its
// schedule and model parts.
std::vector<std::pair<std::string, std::string>> torchtitan_parallelism(const Job& job) {
  const Plan& p = job.plan;
  std::vector<std::pair<std::string, std::string>> parallelism{
      {"data_parallel_replicate_degree", whole(p.zero_stage == 0 ? p.dp : 1)},
      {"data_parallel_shard_degree", whole(p.zero_stage == 0 ? 1 : p.dp)}};
  if (p.zero_stage >= 2) parallelism.emplace_back("fsdp_reshard_after_forward", py_str(p.zero_stage == 3 ? "always" : "never"));
  parallelism.emplace_back("tensor_parallel_degree", whole(p.tp));
  if (p.tp > 1) parallelism.emplace_back("enable_sequence_parallel", py_bool(p.sequence_parallel));
  parallelism.emplace_back("pipeline_parallel_degree", whole(p.pp));
  if (p.pp > 1) {
    // torch.distributed.pipelining's schedule names (get_schedule_class).
    const char* schedule = p.schedule == Schedule::gpipe ? "GPipe" : p.schedule == Schedule::interleaved ? "Interleaved1F1B" : "1F1B";
    parallelism.emplace_back("pipeline_parallel_schedule", py_str(schedule));
    parallelism.emplace_back("num_pp_microbatches", whole(job.micro_batches()));
    parallelism.emplace_back("module_fqns_per_model_part", model_parts_value(job, 12));
  }
  return parallelism;
}

}  // namespace

std::string torchtitan_launch(const Job& job) {
  // torchtitan's run_train.sh launches one node the same way (torchrun, c10d rendezvous, the
  // caching allocator's expandable segments).
  return "PYTORCH_ALLOC_CONF=\"expandable_segments:True\" torchrun --nnodes=" + std::to_string(job.cluster.nodes) +
         " --nproc_per_node=" + std::to_string(job.cluster.node.gpus) +
         " --rdzv_backend=c10d --rdzv_endpoint=$MASTER_ADDR:29500 -m torchtitan.train --module starfish_plan --config "
         "starfish_plan";
}

TorchtitanRecipe torchtitan_recipe(const Job& job) {
  if (const std::string why = torchtitan_unsupported(job); !why.empty()) throw SpecError("--torchtitan: " + why);
  const Plan& p = job.plan;
  const Model& m = job.model;
  const Training& t = job.training;
  TorchtitanRecipe recipe;
  RecipeWriter w(recipe);
  const std::string model = model_function(w, m);
  for (const char* name : {"TrainingConfig", "ParallelismConfig", "DebugConfig"}) w.uses("torchtitan.config", name);
  w.uses("torchtitan.models.llama3", "model_registry");
  w.uses("torchtitan.trainer", "Trainer");
  w.uses("torchtitan.components.data", "ConcatThenSplitPackingConfig");
  w.uses("torchtitan.components.data", "GrainDataLoader");
  w.uses("torchtitan.hf_datasets.text_datasets", "DATASETS");
  w.uses("torchtitan.components.loss", "CrossEntropyLoss");
  w.uses("torchtitan.components.optimizer", "OptimizersContainer");
  w.uses("torchtitan.components.optimizer", "ParamGroupConfig");
  const std::vector<std::pair<std::string, std::string>> training = torchtitan_training(job);
  const std::vector<std::pair<std::string, std::string>> parallelism = torchtitan_parallelism(job);
  std::string ac = "None";
  if (p.recompute == Recompute::full) {
    w.uses("torchtitan.distributed.activation_checkpoint", "FullAC");
    ac = "FullAC.Config()";
  }
  const std::string optimizer = w.call(
      "OptimizersContainer.Config",
      {{"param_groups",
        "[\n" + std::string(16, ' ') +
            w.call("ParamGroupConfig",
                   {{"pattern", py_str(".*")},
                    {"optimizer_name", py_str(t.optimizer == Optimizer::adamw ? "AdamW" : "Adam")},
                    {"optimizer_kwargs", "{\"lr\": " + units::format_number(t.learning_rate) +
                                             ", \"weight_decay\": " + units::format_number(t.weight_decay) + "}"}},
                   16) +
            ",\n" + std::string(12, ' ') + "]"}},
      8);
  const std::string config = w.call(
      "Trainer.Config",
      {{"model_spec", w.call("model_registry", {{"flavor", py_str("starfish")}, {"attn_backend", py_str("varlen")}}, 8)},
       // The tokenizer must be the model's (its vocabulary): torchtitan's
       // scripts/download_hf_assets.py fetches it into this folder.
       {"hf_assets_path", py_str("./assets/hf/" + m.name)},
       {"dataloader", w.call("GrainDataLoader.Config",
                             {{"dataset", w.call("ConcatThenSplitPackingConfig", {{"dataset", "DATASETS[\"c4\"]"}}, 12)}}, 8)},
       {"loss", w.call("CrossEntropyLoss.Config", {{"global_vocab_size", whole(m.vocab)}}, 8)},
       {"optimizer", optimizer},
       {"training", w.call("TrainingConfig", training, 8)},
       {"parallelism", w.call("ParallelismConfig", parallelism, 8)},
       {"activation_checkpoint", ac},
       {"debug", w.call("DebugConfig", {{"seed", whole(static_cast<int64_t>(t.seed))}}, 8)}},
      4);
  recipe.text = "\"\"\"" + m.name + " on " + std::to_string(job.cluster.nodes) + " x " + job.cluster.name + " (" +
                std::to_string(job.cluster.total_gpus()) + " GPUs): Starfish's plan as a torchtitan recipe.\n\n"
                "Save as starfish_plan.py where Python finds it (torchtitan's root) and launch on each node:\n  " +
                torchtitan_launch(job) +
                "\nThe data set (C4 here) and the tokenizer in hf_assets_path are yours to choose; the tokenizer must\n"
                "have the model's vocabulary. Written for torchtitan " + std::string(kTorchtitanCommit).substr(0, 12) +
                " (Starfish's configs/frameworks/torchtitan-config.txt).\n\"\"\"\n" +
                w.import_block() + "\n\n" + model + "\n\ndef starfish_plan() -> Trainer.Config:\n"
                "    llama3.llama3_configs[\"starfish\"] = _starfish_model\n"
                "    return " + config + "\n";
  return recipe;
}

std::string plan_file_yaml(const Job& job, const std::string& model_path, const std::string& hardware_path) {
  PlanFile f;
  if (!model_path.empty()) f.model_path = model_path;
  if (!hardware_path.empty()) f.hardware_path = hardware_path;
  f.nodes = job.cluster.nodes;  // the search may have resized the hardware file's cluster
  f.training = job.training;
  f.plan = job.plan;
  return to_yaml(f);
}

}  // namespace starfish::search

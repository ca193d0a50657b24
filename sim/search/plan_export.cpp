#include "sim/search/plan_export.h"

#include <cstdio>
#include <functional>

#include "sim/cost/framework.h"
#include "sim/spec/error.h"
#include "sim/spec/spec_io.h"
#include "sim/spec/units.h"

namespace starfish::search {
namespace {

// Why a framework cannot run a plan: the plan or training field (as a plan file names it) and
// the reason; no field means it can.
struct Refusal {
  const char* field = nullptr;
  std::string reason;
  std::string text() const { return field ? std::string("field '") + field + "': " + reason : ""; }
};

Refusal refuse(const char* field, const std::string& why) { return {field, why}; }

// The reason with the file:line:column of the field when the plan came from a file.
std::string located(const Job& job, const Refusal& r) {
  if (!r.field) return "";
  const std::string field = r.field;
  const Provenance& source = field.rfind("training.", 0) == 0 ? job.training.provenance : job.plan.provenance;
  if (source.file.empty()) return r.text();
  return source.where(field).to_string() + ": " + r.text();
}

std::string whole(int64_t v) { return std::to_string(v); }

// Megatron-LM as of the commit in configs/frameworks/megatron-lm-arguments.txt.
Refusal megatron_refusal(const Plan& p, const Training& t) {
  if (p.framework != Framework::megatron_lm && p.framework != Framework::megatron_core)
    return refuse("plan.framework", std::string("the plan was simulated as ") + to_string(p.framework) +
                                        " runs it; Megatron-LM exports take megatron-lm or megatron-core plans");
  if (p.chunked()) return refuse("plan.chunk_size", "Megatron-LM has no chunk runtime");
  if (p.zero_stage >= 2)
    return refuse("plan.zero_stage", "Megatron-LM has no ZeRO stage " + std::to_string(p.zero_stage) +
                                         " (its distributed optimizer is ZeRO-1)");
  if (p.offload.params != Tier::gpu) return refuse("plan.offload.params", "Megatron-LM keeps the params on the GPU");
  if (p.offload.grads != Tier::gpu)
    return refuse("plan.offload.grads", "Megatron-LM keeps the gradient buffers on the GPU");
  if (p.offload.optimizer == Tier::nvme)
    return refuse("plan.offload.optimizer", "Megatron-LM offloads the optimizer to CPU memory only, not NVMe");
  // --optimizer-cpu-offload needs --use-precision-aware-optimizer (arguments.py), which runs
  // only in the distributed optimizer (megatron/core/optimizer/__init__.py).
  if (p.offload.optimizer == Tier::cpu && p.zero_stage != 1)
    return refuse("plan.offload.optimizer",
                  "Megatron-LM's --optimizer-cpu-offload runs in its distributed optimizer: ZeRO stage 1 only");
  if (p.schedule == Schedule::gpipe && p.pp > 1)
    return refuse("plan.schedule", "Megatron-LM runs 1F1B or interleaved 1F1B, not GPipe");
  if (t.optimizer == Optimizer::sgd && p.zero_stage == 1)
    return refuse("training.optimizer", "Megatron-LM's distributed optimizer needs adam");
  if (p.fp8 != Fp8::none && t.optimizer == Optimizer::sgd)
    return refuse("training.optimizer", "Megatron-LM's fp8 training (TransformerEngine) is set up with adam");
  if (!p.stage_layers.per_stage.empty())
    return refuse("plan.stage_layers", "per-stage layer lists are not exported (Megatron-core takes first_stage_layers / "
                                       "last_stage_layers as --decoder-first/last-pipeline-num-layers)");
  if (attention_kernel(p) == Attention::flash1)
    return refuse("plan.attention", "Megatron-LM has no FlashAttention-1 kernel (its --attention-backend flash is FlashAttention-2 class)");
  if (loss_kernel_of(p) == Loss::pytorch)
    return refuse("plan.loss", "Megatron-LM computes the loss with its vocab-parallel cross-entropy, not PyTorch's cross_entropy");
  return {};
}

// DeepSpeed as of the commit in configs/frameworks/deepspeed-config-keys.txt.
Refusal deepspeed_refusal(const Plan& p, const Training& /*training: fp8 is refused by make_job*/, const Model* model = nullptr) {
  if (p.cp > 1)
    return refuse("plan.context_parallel", "DeepSpeed's config has no context parallelism (ring attention is Megatron-core's)");
  if (p.fp8 != Fp8::none)
    return refuse("plan.fp8", "DeepSpeed's config has no fp8 training (fp8 GEMMs come from TransformerEngine in the model code)");
  if (p.framework != Framework::deepspeed)
    return refuse("plan.framework", std::string("the plan was simulated as ") + to_string(p.framework) +
                                        " runs it; DeepSpeed exports take deepspeed plans");
  if (p.chunked()) return refuse("plan.chunk_size", "DeepSpeed has no chunk runtime (PatrickStar-style chunks)");
  if (p.schedule == Schedule::interleaved) return refuse("plan.schedule", "DeepSpeed's pipeline engine has no interleaved schedule");
  if (p.schedule == Schedule::gpipe && p.pp > 1)
    return refuse("plan.schedule", "DeepSpeed's pipeline engine runs its 1F1B TrainSchedule, not GPipe");
  // deepspeed/runtime/pipe/engine.py: "ZeRO-2 and ZeRO-3 are incompatible with pipeline parallelism".
  if (p.pp > 1 && p.zero_stage >= 2)
    return refuse("plan.zero_stage", "DeepSpeed's pipeline engine runs ZeRO-0 or ZeRO-1 only (ZeRO-" +
                                         std::to_string(p.zero_stage) + " with PP " + std::to_string(p.pp) + ")");
  if (p.offload.params != Tier::gpu && p.zero_stage != 3)
    return refuse("plan.offload.params", "DeepSpeed offloads params only under ZeRO-3");
  if (p.offload.optimizer != Tier::gpu && p.zero_stage == 0)
    return refuse("plan.offload.optimizer", "DeepSpeed offloads the optimizer only under ZeRO 1-3");
  // ZeRO-1/2 (stage_1_and_2.py) swap to CPU memory only; NVMe is ZeRO-Infinity, stage 3.
  if (p.offload.optimizer == Tier::nvme && p.zero_stage != 3)
    return refuse("plan.offload.optimizer", "DeepSpeed offloads the optimizer to NVMe only under ZeRO-3");
  if (p.offload.grads != p.offload.optimizer && p.offload.grads != Tier::gpu)
    return refuse("plan.offload.grads", "DeepSpeed keeps offloaded grads with the optimizer states");
  if (!p.stage_layers.even())
    return refuse("plan.stage_layers", "DeepSpeed's PipelineModule partitions by its partition_method, not by a stage layout");
  if (model && model->is_moe()) return refuse("model.moe", "Starfish does not write DeepSpeed-MoE configurations");
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
std::string megatron_unsupported(const Job& job) { return located(job, megatron_refusal(job.plan, job.training)); }
std::string deepspeed_unsupported(const Job& job) { return located(job, deepspeed_refusal(job.plan, job.training, &job.model)); }

std::vector<std::pair<std::string, std::string>> megatron_argument_list(const Job& job) {
  if (const std::string why = megatron_unsupported(job); !why.empty()) throw SpecError("--megatron: " + why);
  const Plan& p = job.plan;
  const Model& m = job.model;
  const Training& t = job.training;
  std::vector<std::pair<std::string, std::string>> a;
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
  if (p.virtual_stages > 1 && !p.stage_layers.even())
    add("--num-virtual-stages-per-pipeline-rank", whole(p.virtual_stages));
  else if (p.virtual_stages > 1)
    add("--num-layers-per-virtual-pipeline-stage", whole(m.layers / (p.pp * p.virtual_stages)));
  add("--micro-batch-size", whole(p.micro_batch));
  add("--global-batch-size", whole(t.global_batch));
  if (p.sequence_parallel) add("--sequence-parallel");
  if (p.recompute == Recompute::selective) add("--recompute-granularity", "selective");
  if (p.recompute == Recompute::full) {
    add("--recompute-granularity", "full");
    add("--recompute-method", "uniform");
    add("--recompute-num-layers", "1");
  }
  if (p.zero_stage == 1) add("--use-distributed-optimizer");
  if (p.overlap_grad_reduce) add("--overlap-grad-reduce");
  // The distributed optimizer's param all-gather overlapped with the next forward, as the
  // grads' reduce-scatter is with backward (arguments.py requires --overlap-grad-reduce).
  if (p.overlap_grad_reduce && p.zero_stage == 1) add("--overlap-param-gather");
  if (p.offload.optimizer == Tier::cpu) {
    add("--optimizer-cpu-offload");
    add("--use-precision-aware-optimizer");  // required by --optimizer-cpu-offload
  }
  // Precision: bf16 / fp16 mixed precision, fp32/tf32 without a flag; fp8 GEMMs are
  // TransformerEngine's over the 16-bit params, in the plan's format (hybrid: E4M3 forward, E5M2
  // gradients) and scaling recipe.
  if (t.dtype == DType::bf16) add("--bf16");
  if (t.dtype == DType::fp16) add("--fp16");
  if (p.fp8 != Fp8::none) {
    add("--fp8-format", to_string(p.fp8));
    add("--fp8-recipe", to_string(p.fp8_recipe));
  }
  // The attention kernel the plan was simulated with (TransformerEngine's backends).
  add("--attention-backend", attention_kernel(p) == Attention::flash ? "flash" : "unfused");
  if (loss_kernel_of(p) == Loss::fused) add("--cross-entropy-loss-fusion");
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
  add("--max-position-embeddings", whole(m.seq_len));
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
  if (m.attention_head_dim > 0) add("--kv-channels", whole(m.attention_head_dim));
  if (m.is_moe()) add_moe_arguments(m, p, [&](const char* name, const std::string& value) { add(name, value); });
  if (!m.dropout) {  // Megatron's default is 0.1 for both
    add("--attention-dropout", "0");
    add("--hidden-dropout", "0");
  }
  add("--optimizer", t.optimizer == Optimizer::sgd ? "sgd" : "adam");  // Megatron's adam is AdamW
  add("--lr", units::format_number(t.learning_rate));
  add("--weight-decay", units::format_number(t.weight_decay));
  add("--clip-grad", units::format_number(t.grad_clip));  // 0 turns clipping off
  add("--seed", whole(static_cast<int64_t>(t.seed)));
  return a;
}

std::string megatron_arguments(const Job& job) {
  std::string s;
  for (const auto& [name, value] : megatron_argument_list(job))
    s += "  " + name + (value.empty() ? "" : " " + value) + " \\\n";
  s.resize(s.size() - 3);  // the last line needs no continuation
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
  w.field("overlap_comm", p.overlap_grad_reduce);
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

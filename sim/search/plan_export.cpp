#include "sim/search/plan_export.h"

#include <cstdio>

#include "sim/spec/error.h"
#include "sim/spec/json_writer.h"
#include "sim/spec/spec_io.h"

namespace starfish::search {
namespace {

bool offloaded(const Plan& p) {
  return p.offload.params != Tier::gpu || p.offload.grads != Tier::gpu || p.offload.optimizer != Tier::gpu;
}

std::string arg(const std::string& name, const std::string& value = "") {
  return "  " + name + (value.empty() ? "" : " " + value) + " \\\n";
}

// Megatron-core's MoE arguments (megatron/training/arguments.py, _add_moe_args): the experts,
// their routing and FFN, which layers are MoE (--moe-layer-freq takes a list of 0/1 per layer),
// dropless (the default) or a capacity factor, and the expert parallel layout.
std::string moe_arguments(const Model& m, const Plan& p) {
  std::string s;
  s += arg("--num-experts", std::to_string(m.moe.experts));
  s += arg("--moe-router-topk", std::to_string(m.moe.top_k));
  s += arg("--moe-ffn-hidden-size", std::to_string(m.moe.expert_ffn_hidden));
  if (m.moe.shared_experts > 0)
    s += arg("--moe-shared-expert-intermediate-size", std::to_string(m.moe.shared_experts * m.moe.expert_ffn_hidden));
  if (m.moe.first_dense_layers > 0 || m.moe.every > 1) {
    std::string freq = "\"[";
    for (int l = 0; l < m.layers; ++l) freq += std::string(l ? "," : "") + (m.moe_layer(l) ? "1" : "0");
    s += arg("--moe-layer-freq", freq + "]\"");
  }
  if (m.moe.capacity_factor > 0) {
    char cf[32];
    std::snprintf(cf, sizeof cf, "%g", m.moe.capacity_factor);
    s += arg("--moe-expert-capacity-factor", cf);
  }
  s += arg("--moe-grouped-gemm");
  s += arg("--moe-token-dispatcher-type", "alltoall");
  s += arg("--expert-model-parallel-size", std::to_string(p.ep));
  s += arg("--expert-tensor-parallel-size", std::to_string(p.expert_tp()));
  return s;
}

}  // namespace

std::string megatron_unsupported(const Job& job) {
  const Plan& p = job.plan;
  if (p.zero_stage >= 2) return "Megatron-LM has no ZeRO stage " + std::to_string(p.zero_stage) +
                                " (its distributed optimizer is ZeRO-1)";
  if (offloaded(p)) return "Megatron-LM does not offload model states to CPU or NVMe";
  if (p.chunked()) return "Megatron-LM has no chunk runtime";
  if (p.schedule == Schedule::gpipe && p.pp > 1) return "Megatron-LM runs 1F1B or interleaved 1F1B, not GPipe";
  if (job.training.optimizer == Optimizer::sgd && p.zero_stage == 1)
    return "Megatron-LM's distributed optimizer needs adam";
  if (!p.stage_layers.per_stage.empty())
    return "per-stage layer lists are not exported (Megatron-core takes first_stage_layers / last_stage_layers as "
           "--decoder-first/last-pipeline-num-layers)";
  return "";
}

std::string deepspeed_unsupported(const Job& job) {
  const Plan& p = job.plan;
  if (p.chunked()) return "DeepSpeed has no chunk runtime (PatrickStar-style chunks)";
  if (p.schedule == Schedule::interleaved) return "DeepSpeed's pipeline engine has no interleaved schedule";
  if (!p.stage_layers.even())
    return "DeepSpeed's PipelineModule partitions by its partition_method, not by a stage layout";
  if (job.model.is_moe()) return "Starfish does not write DeepSpeed-MoE configurations";
  if (p.offload.params != Tier::gpu && p.zero_stage != 3) return "DeepSpeed offloads params only under ZeRO-3";
  if (p.offload.optimizer != Tier::gpu && p.zero_stage == 0) return "DeepSpeed offloads the optimizer only under ZeRO 1-3";
  if (p.offload.grads != p.offload.optimizer && p.offload.grads != Tier::gpu)
    return "DeepSpeed keeps offloaded grads with the optimizer states";
  return "";
}

std::string megatron_arguments(const Job& job) {
  if (const std::string why = megatron_unsupported(job); !why.empty()) throw SpecError("--megatron: " + why);
  const Plan& p = job.plan;
  const Model& m = job.model;
  const Training& t = job.training;
  std::string s;
  s += arg("--tensor-model-parallel-size", std::to_string(p.tp));
  s += arg("--pipeline-model-parallel-size", std::to_string(p.pp));
  // Uneven stages: Megatron-core's first/last stage layer counts; its interleaving then takes the
  // number of virtual stages (the layers per chunk differ between stages).
  if (p.stage_layers.first > 0) s += arg("--decoder-first-pipeline-num-layers", std::to_string(p.stage_layers.first));
  if (p.stage_layers.last > 0) s += arg("--decoder-last-pipeline-num-layers", std::to_string(p.stage_layers.last));
  if (p.virtual_stages > 1 && !p.stage_layers.even())
    s += arg("--num-virtual-stages-per-pipeline-rank", std::to_string(p.virtual_stages));
  else if (p.virtual_stages > 1)
    s += arg("--num-layers-per-virtual-pipeline-stage", std::to_string(m.layers / (p.pp * p.virtual_stages)));
  s += arg("--micro-batch-size", std::to_string(p.micro_batch));
  s += arg("--global-batch-size", std::to_string(t.global_batch));
  if (p.sequence_parallel) s += arg("--sequence-parallel");
  if (p.overlap_grad_reduce) s += arg("--overlap-grad-reduce");
  if (p.recompute == Recompute::selective) s += arg("--recompute-granularity", "selective");
  if (p.recompute == Recompute::full) {
    s += arg("--recompute-granularity", "full");
    s += arg("--recompute-method", "uniform");
    s += arg("--recompute-num-layers", "1");
  }
  if (p.zero_stage == 1) s += arg("--use-distributed-optimizer");
  if (t.dtype == DType::bf16) s += arg("--bf16");
  if (t.dtype == DType::fp16) s += arg("--fp16");
  s += arg("--num-layers", std::to_string(m.layers));
  s += arg("--hidden-size", std::to_string(m.hidden));
  s += arg("--num-attention-heads", std::to_string(m.heads));
  if (m.kv_heads != m.heads) {
    s += arg("--group-query-attention");
    s += arg("--num-query-groups", std::to_string(m.kv_heads));
  }
  s += arg("--ffn-hidden-size", std::to_string(m.ffn_hidden));
  s += arg("--seq-length", std::to_string(m.seq_len));
  s += arg("--max-position-embeddings", std::to_string(m.seq_len));
  if (m.activation == Activation::swiglu) s += arg("--swiglu");
  if (m.norm == Norm::rmsnorm) s += arg("--normalization", "RMSNorm");
  if (m.position == PositionEmbedding::rope) s += arg("--position-embedding-type", "rope");
  if (!m.tied_embeddings) s += arg("--untie-embeddings-and-output-weights");
  if (!m.bias) s += arg("--disable-bias-linear");
  if (m.attention_head_dim > 0) s += arg("--kv-channels", std::to_string(m.attention_head_dim));
  if (m.is_moe()) s += moe_arguments(m, p);
  s += arg("--optimizer", t.optimizer == Optimizer::sgd ? "sgd" : "adam");
  s += arg("--lr", std::to_string(t.learning_rate));
  s += arg("--weight-decay", std::to_string(t.weight_decay));
  if (t.grad_clip > 0) s += arg("--clip-grad", std::to_string(t.grad_clip));
  s.resize(s.size() - 3);  // the last line needs no continuation
  return s + "\n";
}

std::string deepspeed_config(const Job& job) {
  if (const std::string why = deepspeed_unsupported(job); !why.empty()) throw SpecError("--deepspeed: " + why);
  const Plan& p = job.plan;
  const Training& t = job.training;
  JsonWriter w(true);
  w.begin_object();
  w.field("train_batch_size", t.global_batch);
  w.field("train_micro_batch_size_per_gpu", p.micro_batch);
  w.field("gradient_accumulation_steps", job.micro_batches());
  if (t.grad_clip > 0) w.field("gradient_clipping", t.grad_clip);
  w.key("zero_optimization").begin_object();
  w.field("stage", p.zero_stage);
  w.field("overlap_comm", p.overlap_grad_reduce);
  auto device = [&](const char* key, Tier tier) {
    if (tier == Tier::gpu) return;
    w.key(key).begin_object();
    w.field("device", to_string(tier));
    if (tier == Tier::nvme) w.field("nvme_path", "/local_nvme");
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
  // Parallelism DeepSpeed itself does not configure: Megatron-DeepSpeed's launcher sets these.
  w.key("starfish").begin_object();
  w.field("tensor_parallel", p.tp).field("pipeline_parallel", p.pp).field("data_parallel", p.dp);
  w.field("selective_recompute", p.recompute == Recompute::selective);
  w.field("sequence_parallel", p.sequence_parallel);
  w.end_object();
  w.end_object();
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

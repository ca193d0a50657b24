#include "sim/cli/plan_text.h"

#include "sim/spec/pipeline_layout.h"
#include "sim/spec/units.h"

namespace starfish::cli {

std::string plan_summary(const Job& job) {
  const Plan& p = job.plan;
  std::string s = "TP" + std::to_string(p.tp) + (p.cp > 1 ? " CP" + std::to_string(p.cp) : "") + " PP" +
                  std::to_string(p.pp) + " DP" + std::to_string(p.dp) + " " + to_string(p.schedule);
  if (p.virtual_stages > 1) s += " v" + std::to_string(p.virtual_stages);
  if (!p.stage_layers.even())
    s += " (layers per stage " + stage_layout_text(job.model.layers, p.pp, p.virtual_stages, p.stage_layers) + ")";
  if (p.sequence_parallel) s += " SP";
  if (job.model.is_moe()) s += " EP" + std::to_string(p.ep) + " ETP" + std::to_string(p.expert_tp());
  s += ", micro-batch " + std::to_string(p.micro_batch) + " x " + std::to_string(job.micro_batches()) +
       ", global batch " + std::to_string(job.training.global_batch);
  s += ", ZeRO-" + std::to_string(p.zero_stage) + ", recompute " + recompute_text(p);
  if (p.recompute_layers > 0) s += " (first " + std::to_string(p.recompute_layers) + " layers of each virtual stage)";
  const Offload& o = p.offload;
  if (o.params != Tier::gpu || o.grads != Tier::gpu || o.optimizer != Tier::gpu)
    s += std::string(", offload params/grads/optimizer -> ") + to_string(o.params) + "/" + to_string(o.grads) + "/" +
         to_string(o.optimizer);
  if (p.chunked()) s += ", chunks of " + units::format_count(p.chunk_elements) + " elements";
  if (p.cpu_embedding) s += ", embeddings on the CPU";
  s += std::string(", ") + to_string(job.training.dtype) + " " + to_string(job.training.optimizer);
  if (p.fp8 != Fp8::none)
    s += std::string(", fp8 GEMMs (") + to_string(p.fp8) + ", " + to_string(p.fp8_recipe) + " scaling" +
         (p.fp8_params ? ", fp8 params)" : ")");
  if (p.has_bf16_layers())
    s += ", first " + std::to_string(p.bf16_layers.first) + " / last " + std::to_string(p.bf16_layers.last) +
         " layers in " + to_string(job.training.dtype);
  if (p.fp4 != Fp4::none) s += std::string(", fp4 GEMMs (") + to_string(p.fp4) + ")";
  if (p.train_metric_passes > 0)
    s += ", training metrics (" + std::to_string(p.train_metric_passes) + " cross-entropy passes a micro-batch)";
  return s;
}

void write_plan_json(JsonWriter& w, const Job& job) {
  const Plan& p = job.plan;
  w.begin_object();
  w.field("tensor_parallel", p.tp).field("pipeline_parallel", p.pp).field("data_parallel", p.dp);
  w.field("context_parallel", p.cp);
  w.field("virtual_stages", p.virtual_stages).field("micro_batch", p.micro_batch);
  if (job.model.is_moe()) w.field("expert_parallel", p.ep).field("expert_tensor_parallel", p.expert_tp());
  if (!p.stage_layers.even()) {  // layers per stage, when they differ
    w.key("stage_layers").begin_array();
    for (int s = 0; s < p.pp; ++s) w.value(stage_layer_count(job.model.layers, p.pp, p.virtual_stages, p.stage_layers, s));
    w.end_array();
  }
  w.field("micro_batches", job.micro_batches()).field("global_batch", job.training.global_batch);
  w.field("schedule", to_string(p.schedule)).field("sequence_parallel", p.sequence_parallel);
  w.field("zero_stage", p.zero_stage).field("recompute", to_string(p.recompute));
  if (p.recompute_layers > 0) w.field("recompute_layers", p.recompute_layers);
  if (p.recompute == Recompute::selective) {
    w.key("recompute_modules").begin_array();
    for (const std::string& name : recompute_module_names(p.recompute_modules)) w.value(name);
    w.end_array();
  }
  w.key("offload").begin_object();
  w.field("params", to_string(p.offload.params)).field("grads", to_string(p.offload.grads));
  w.field("optimizer", to_string(p.offload.optimizer));
  w.end_object();
  w.field("chunk_elements", p.chunk_elements);
  w.field("dtype", to_string(job.training.dtype)).field("optimizer", to_string(job.training.optimizer));
  w.field("fp8", to_string(p.fp8));
  if (p.fp8 != Fp8::none) w.field("fp8_recipe", to_string(p.fp8_recipe));
  if (p.fp8_params) w.field("fp8_params", true);
  if (p.has_bf16_layers()) {
    w.key("bf16_layers").begin_object();
    w.field("first", p.bf16_layers.first).field("last", p.bf16_layers.last);
    w.end_object();
  }
  w.field("fp4", to_string(p.fp4));
  if (p.train_metric_passes > 0) w.field("train_metric_passes", p.train_metric_passes);
  w.end_object();
}

}  // namespace starfish::cli

#include "sim/spec/job.h"

#include <algorithm>
#include <string>

#include "sim/spec/limits.h"
#include "sim/spec/pipeline_layout.h"

namespace starfish {

int64_t Job::micro_batches() const { return training.global_batch / (int64_t{plan.micro_batch} * plan.dp); }

int Job::global_rank(int tp_rank, int dp_rank, int stage, int cp_rank) const {
  return tp_rank + plan.tp * (cp_rank + plan.cp * (dp_rank + dp() * stage));
}

std::vector<int> Job::dp_group_ranks(int tp_rank, int stage) const {
  std::vector<int> ranks;
  for (int d = 0; d < dp(); ++d)
    for (int c = 0; c < plan.cp; ++c) ranks.push_back(global_rank(tp_rank, d, stage, c));
  return ranks;
}

std::vector<int> Job::cp_group_ranks(int tp_rank, int dp_rank, int stage) const {
  std::vector<int> ranks;
  for (int c = 0; c < plan.cp; ++c) ranks.push_back(global_rank(tp_rank, dp_rank, stage, c));
  return ranks;
}

std::string recompute_layers_problem(const Plan& plan) {
  if (plan.recompute_layers == 0) return "";
  if (plan.recompute != Recompute::full)
    return std::string("block recomputation redoes whole layers: set recompute: full (the plan says ") +
           to_string(plan.recompute) + ")";
  if (plan.framework != Framework::megatron_lm && plan.framework != Framework::megatron_core)
    return std::string("block recomputation is Megatron's (--recompute-method block): set framework: megatron-lm or "
                       "megatron-core (the plan says ") + to_string(plan.framework) + ")";
  if (plan.chunked()) return "the chunk runtime recomputes every layer or none (leave out recompute_layers)";
  return "";
}

namespace {

// Selective recomputation's modules (Plan::recompute_modules): Megatron-core's, each where the
// model has what it redoes.
std::string recompute_modules_problem(const Model& m, const Plan& plan) {
  namespace rm = recompute_module;
  const uint8_t modules = plan.recompute_modules;
  if (modules == rm::core_attn) return "";
  if (plan.recompute != Recompute::selective)
    return std::string("the modules are what selective recomputation redoes: set recompute: selective (the plan says ") +
           to_string(plan.recompute) + ")";
  if (plan.framework != Framework::megatron_core)
    return std::string("recompute modules other than core_attn are Megatron-core's (--recompute-modules): set "
                       "framework: megatron-core (the plan says ") + to_string(plan.framework) + ")";
  if ((modules & rm::layernorm) && !m.is_moe() && !m.is_mla())
    return "layernorm: Megatron-core fuses a dense layer's norms into its linear layers (TransformerEngine's "
           "LayerNormLinear), so it redoes only an MoE layer's pre-MLP norm and an MLA layer's input norm, and "
           "model " + m.name + " has neither";
  if ((modules & rm::moe_act) && !m.is_moe()) return "moe_act: model " + m.name + " has no experts";
  if ((modules & rm::shared_experts) && m.moe.shared_experts == 0)
    return "shared_experts: model " + m.name + " has no shared experts";
  if ((modules & rm::mla_up_proj) && !m.is_mla()) return "mla_up_proj: model " + m.name + " has no multi-latent attention";
  if ((modules & rm::mlp) && m.moe_layer_count() == m.layers)
    return "mlp: every layer of model " + m.name + " is MoE, and Megatron-core redoes only a dense MLP (for the experts: moe_act)";
  return "";
}

// Training metrics over the logits (Plan::train_metric_passes) are Composer's: its trainer
// updates them after every micro-batch, and it trains data-parallel (DDP or FSDP) with each
// rank's logits whole, no pipeline, tensor or context split.
std::string train_metric_passes_problem(const Plan& plan) {
  if (plan.train_metric_passes == 0) return "";
  if (plan.framework != Framework::fsdp)
    return std::string("training metrics over the logits are Composer's (llm-foundry), an fsdp plan: set framework: fsdp "
                       "(the plan says ") + to_string(plan.framework) + ")";
  if (plan.tp > 1 || plan.pp > 1 || plan.cp > 1)
    return "Composer trains data-parallel only, each rank's logits whole: tensor_parallel, pipeline_parallel and "
           "context_parallel must be 1 with training metrics";
  return "";
}

bool offloaded(Tier t) { return t != Tier::gpu; }

PlacementProblem megatron_placement_problem(const Plan& plan) {
  const Offload& o = plan.offload;
  if (plan.chunked())
    return {"plan.chunk_size", "Megatron has no chunk runtime: chunked plans run on Starfish's (set framework: starfish)"};
  if (offloaded(o.params)) return {"plan.offload.params", "Megatron keeps the params on the GPU (set params: gpu)"};
  if (offloaded(o.grads))
    return {"plan.offload.grads", "Megatron's DDP keeps its gradient buffer on the GPU, also under "
                                  "--optimizer-cpu-offload (set grads: gpu)"};
  if (o.optimizer == Tier::nvme)
    return {"plan.offload.optimizer", "Megatron offloads the optimizer to CPU memory only, not NVMe"};
  // Megatron-LM 2021-22 shards the optimizer states only (--use-distributed-optimizer, ZeRO-1);
  // sharded grads and params came with Megatron-core's FSDP (--use-megatron-fsdp).
  if (plan.zero_stage >= 2 && plan.framework == Framework::megatron_lm)
    return {"plan.zero_stage", "Megatron-LM (2021-22) shards the optimizer only (its distributed optimizer is ZeRO-1): "
                               "ZeRO-" + std::to_string(plan.zero_stage) + " runs on DeepSpeed (set framework: deepspeed) "
                               "or Megatron-core's FSDP (framework: megatron-core)"};
  if (o.optimizer == Tier::cpu && plan.zero_stage != 1)
    return {"plan.offload.optimizer", "Megatron's --optimizer-cpu-offload runs in its distributed optimizer: set "
                                      "zero_stage: 1 (the plan says " + std::to_string(plan.zero_stage) + ")"};
  return {};
}

PlacementProblem deepspeed_placement_problem(const Plan& plan) {
  const Offload& o = plan.offload;
  const std::string stage = " (the plan says zero_stage " + std::to_string(plan.zero_stage) + ")";
  if (plan.chunked())
    return {"plan.chunk_size", "DeepSpeed has no chunk runtime: chunked plans run on Starfish's (set framework: starfish)"};
  if (offloaded(o.params) && plan.zero_stage != 3)
    return {"plan.offload.params", "DeepSpeed offloads params (offload_param) under ZeRO stage 3 only" + stage};
  if (offloaded(o.optimizer) && plan.zero_stage == 0)
    return {"plan.offload.optimizer", "DeepSpeed offloads the optimizer (offload_optimizer) under ZeRO stage 1-3 only" + stage};
  if (o.optimizer == Tier::nvme && plan.zero_stage != 3)
    return {"plan.offload.optimizer", "DeepSpeed offloads the optimizer to NVMe under ZeRO stage 3 only (ZeRO-Infinity)" + stage};
  if (o.grads != o.optimizer)
    return {"plan.offload.grads", std::string("DeepSpeed keeps the gradient partitions where its optimizer steps "
                                              "(offload_optimizer takes them along): set grads: ") + to_string(o.optimizer)};
  return {};
}

PlacementProblem fsdp_placement_problem(const Plan& plan) {
  const Offload& o = plan.offload;
  if (plan.chunked())
    return {"plan.chunk_size", "FSDP has no chunk runtime: chunked plans run on Starfish's (set framework: starfish)"};
  const bool all_gpu = !offloaded(o.params) && !offloaded(o.grads) && !offloaded(o.optimizer);
  const bool all_cpu = o.params == Tier::cpu && o.grads == Tier::cpu && o.optimizer == Tier::cpu;
  if (!all_gpu && !all_cpu)
    return {"plan.offload", "FSDP's CPUOffload(offload_params=True) moves params and gradients to CPU memory together "
                            "and steps the optimizer there: set all three to gpu or all to cpu"};
  return {};
}

}  // namespace

PlacementProblem placement_problem(const Plan& plan) {
  switch (plan.framework) {
    case Framework::megatron_lm:
    case Framework::megatron_core: return megatron_placement_problem(plan);
    case Framework::deepspeed: return deepspeed_placement_problem(plan);
    case Framework::fsdp: return fsdp_placement_problem(plan);
    case Framework::starfish: break;
  }
  const Offload& o = plan.offload;
  if (!plan.chunked() && (offloaded(o.params) || offloaded(o.grads) || offloaded(o.optimizer)))
    return {"plan.offload", "Starfish's executor offloads through its chunk runtime only: set chunk_size, or keep all on the gpu"};
  return {};
}

FrameworkScheduleProblem framework_schedule_problem(const Plan& plan) {
  if (plan.framework != Framework::deepspeed) return {};
  if (plan.sequence_parallel)
    return {"plan.sequence_parallel",
            "DeepSpeed does not all-reduce the sequence-parallel norms' gradients over TP (Megatron's optimizer does): "
            "their weights drift apart across TP ranks; set sequence_parallel: false, or framework: megatron-core"};
  if (plan.pp <= 1) return {};
  if (plan.schedule == Schedule::interleaved)
    return {"plan.schedule", "DeepSpeed's pipeline engine has no interleaved schedule (its TrainSchedule is 1F1B)"};
  if (plan.schedule == Schedule::gpipe) return {"plan.schedule", "DeepSpeed's pipeline engine runs its 1F1B TrainSchedule, not GPipe"};
  if (plan.zero_stage >= 2)
    return {"plan.zero_stage", "DeepSpeed's pipeline engine runs ZeRO-0 or ZeRO-1 only (ZeRO-2 and ZeRO-3 are "
                               "incompatible with pipeline parallelism, runtime/pipe/engine.py)"};
  return {};
}

ExecutorProblem executor_problem(const Plan& plan) {
  if (plan.tp != 1)
    return {"plan.tensor_parallel", "Starfish's executor runs data parallelism only (as PatrickStar's, no tensor "
                                    "parallelism): set tensor_parallel: 1"};
  if (plan.pp != 1)
    return {"plan.pipeline_parallel", "Starfish's executor runs data parallelism only (as PatrickStar's, no "
                                      "pipeline parallelism): set pipeline_parallel: 1"};
  if (plan.cp != 1)
    return {"plan.context_parallel", "Starfish's executor runs data parallelism only (no context parallelism): set "
                                     "context_parallel: 1"};
  if (plan.recompute == Recompute::selective)
    return {"plan.recompute", "Starfish's executor recomputes whole layers (full) or nothing (none), not selective"};
  return {};
}

std::optional<Framework> placement_framework(const Plan& plan, Framework preferred) {
  Plan p = plan;
  const Framework order[] = {preferred, Framework::starfish, Framework::deepspeed, Framework::fsdp};
  for (Framework f : order) {
    if (f == Framework::starfish && !plan.chunked() && f != preferred) continue;  // its executor for chunks only
    p.framework = f;
    if (placement_problem(p).why.empty()) return f;
  }
  return std::nullopt;
}

namespace {

// fp8 params (plan.fp8_params) as Megatron takes them: arguments.py asserts "--fp8-param-gather
// only supported with distributed optimizer, torch fsdp2, megatron fsdp"; Megatron-Bridge's
// MixedPrecisionConfig requires reuse_grad_buf_for_mxfp8_param_ag for MXFP8 params, a buffer
// reuse Starfish does not model, and Megatron FSDP's fp8 shards are not modelled either.
std::string fp8_params_problem(const Plan& plan) {
  if (!plan.fp8_params) return "";
  if (plan.fp8 == Fp8::none) return "fp8 params need fp8 GEMMs: set fp8: hybrid or e4m3";
  if (plan.fp8_recipe == Fp8Recipe::mxfp8)
    return "fp8 params are modelled for the delayed and tensorwise recipes only (MXFP8 params reuse the gradient buffer)";
  if (plan.zero_stage < 1 || plan.zero_stage > 2)
    return "fp8 params are gathered by Megatron's distributed optimizer: set zero_stage: 1 or 2 (the plan says " +
           std::to_string(plan.zero_stage) + ")";
  if (plan.offload.params != Tier::gpu) return "fp8 params stay on the GPU: set offload.params: gpu";
  return "";
}

}  // namespace

QuantizedGemmProblem quantized_gemm_problem(const GpuSpec& gpu, const Training& training, const Plan& plan) {
  if (const std::string why = fp8_params_problem(plan); !why.empty()) return {"plan.fp8_params", why};
  if (plan.bf16_layers.any()) {
    if (plan.fp8 == Fp8::none)
      return {"plan.bf16_layers", "layers kept in bf16 under fp8 GEMMs need fp8 (set fp8, or leave bf16_layers out)"};
    if (plan.fp8_recipe == Fp8Recipe::delayed)
      return {"plan.bf16_layers", "Megatron keeps first / last layers in bf16 under current scaling only, not delayed "
                                  "(fp8_utils.py get_fp8_context): set fp8_recipe: tensorwise or mxfp8"};
  }
  if (!plan.quantized_gemms()) return {};
  const bool fp4 = plan.fp4 != Fp4::none;
  const std::string field = fp4 ? "plan.fp4" : "plan.fp8";
  const char* what = fp4 ? "fp4 GEMMs" : "fp8 GEMMs";
  // Megatron-LM's arguments.py: "--fp4-format and --fp8-format cannot be used simultaneously".
  if (fp4 && plan.fp8 != Fp8::none) return {field, "fp4 and fp8 GEMMs exclude each other (Megatron refuses both): set fp8: none"};
  if (fp4 && gpu.fp4_peak_flops <= 0) return {field, "GPU " + gpu.name + " has no fp4 peak (peak.fp4)", true};
  if (!fp4 && !gpu.peak_flops.count(DType::fp8)) return {field, "GPU " + gpu.name + " has no fp8 peak", true};
  if (!fp4 && plan.fp8_recipe == Fp8Recipe::mxfp8 && gpu.mxfp8_peak_flops <= 0)
    return {"plan.fp8_recipe", "GPU " + gpu.name + " has no block-scaled MXFP8 tensor cores (peak.mxfp8)", true};
  if (training.dtype != DType::bf16 && training.dtype != DType::fp16)
    return {field, std::string(what) + " run inside bf16 or fp16 mixed precision, not " + to_string(training.dtype) +
                       " (set training.dtype: bf16)"};
  // TransformerEngine's NVFP4 recipe applies a random Hadamard transform to the wgrad GEMM's
  // inputs, whose kernels assert "RHT is only supported for bfloat16 input" (hadamard_transform).
  if (fp4 && training.dtype != DType::bf16) return {field, "NVFP4 GEMMs run inside bf16 mixed precision only (set training.dtype: bf16)"};
  if (plan.chunked()) return {field, std::string("the chunk runtime has no ") + what};
  if (plan.framework != Framework::megatron_core)
    return {field, std::string(what) + " are TransformerEngine's, modelled as Megatron-core runs them: set framework: "
                   "megatron-core (the plan says " + to_string(plan.framework) + ")"};
  return {};
}

Plan default_plan() { return Plan{}; }

bool tp_aligned_to_nodes(int tp, int gpus_per_node) {
  return tp > 0 && gpus_per_node > 0 && (gpus_per_node % tp == 0 || tp % gpus_per_node == 0);
}

namespace {

// The products of fields that later stages multiply, checked here so that none overflows and no
// loop over them runs away (limits.h): GPUs, tokens and micro-batches per iteration.
void check_job_size(const Model& model, const Cluster& cluster, const Training& training, const Plan& plan) {
  using namespace limits;
  if (!checked_mul(cluster.nodes, cluster.node.gpus, kMaxGpus))
    cluster.provenance.fail("nodes", std::to_string(cluster.nodes) + " nodes x " + std::to_string(cluster.node.gpus) +
                                         " GPUs is more than " + std::to_string(kMaxGpus) + " GPUs (Starfish's limit)");
  const auto tp_pp = checked_mul(plan.tp, plan.pp, kMaxGpus);
  const auto tp_pp_cp = tp_pp ? checked_mul(*tp_pp, plan.cp, kMaxGpus) : std::nullopt;
  if (!tp_pp_cp || !checked_mul(*tp_pp_cp, std::max(plan.dp, 1), kMaxGpus))
    plan.provenance.fail("plan.tensor_parallel", "tensor_parallel x context_parallel x pipeline_parallel x data_parallel "
                                                 "is more than " + std::to_string(kMaxGpus) + " GPUs (Starfish's limit)");
  if (!checked_mul(training.global_batch, model.seq_len, kMaxTokensPerIteration))
    training.provenance.fail("training.global_batch", std::to_string(training.global_batch) + " sequences x seq_len " +
                                                          std::to_string(model.seq_len) + " is more than 2^40 tokens per iteration (Starfish's limit)");
}

// Expert parallelism against the model and the plan (plan.dp resolved). Megatron-core's MoE
// layers need sequence parallelism with TP (megatron/training/arguments.py); the expert layout
// folds EP x ETP into the stage's TP x DP ranks.
void check_experts(const Model& model, const Plan& plan, const std::string& of_model) {
  const Provenance& pp = plan.provenance;
  if (!model.is_moe()) {
    if (plan.ep != 1) pp.fail("plan.expert_parallel", "expert parallelism needs experts, and there are none" + of_model);
    return;
  }
  const Moe& e = model.moe;
  if (e.experts % plan.ep != 0)
    pp.fail("plan.expert_parallel", std::to_string(plan.ep) + " does not divide the " + std::to_string(e.experts) +
                                        " experts" + of_model);
  const int etp = plan.expert_tp();
  if (e.expert_ffn_hidden % etp != 0)
    pp.fail(plan.etp > 0 ? "plan.expert_tensor_parallel" : "plan.tensor_parallel",
            "expert tensor parallel " + std::to_string(etp) + " does not divide expert_ffn_hidden " +
                std::to_string(e.expert_ffn_hidden) + of_model);
  const int64_t stage_ranks = int64_t{plan.tp} * plan.dp_cp();
  if (stage_ranks % (int64_t{plan.ep} * etp) != 0)
    pp.fail("plan.expert_parallel", "expert_parallel " + std::to_string(plan.ep) + " x expert tensor parallel " +
                                        std::to_string(etp) + " does not divide tensor_parallel x " +
                                        (plan.cp > 1 ? "context_parallel x " : "") + "data_parallel = " +
                                        std::to_string(stage_ranks) + " (the ranks of a stage)");
  if (e.shared_experts > 0 && (int64_t{e.shared_experts} * e.expert_ffn_hidden) % plan.tp != 0)
    pp.fail("plan.tensor_parallel", std::to_string(plan.tp) + " does not divide the shared experts' FFN" + of_model);
  if (plan.tp > 1 && !plan.sequence_parallel)
    pp.fail("plan.sequence_parallel", "mixture-of-experts layers with tensor_parallel > 1 need sequence_parallel: true "
                                      "(Megatron-core requires it)");
  if (plan.zero_stage >= 3)
    pp.fail("plan.zero_stage", "ZeRO-3 / FSDP of expert layers is not modelled; use ZeRO 0-2 with expert parallelism");
  if (plan.chunked()) pp.fail("plan.chunk_size", "the chunk runtime does not run mixture-of-experts layers");
}

// PatrickStar's CPU embedding (patrickstar/ops/embedding.py): a chunk-runtime mechanism; each
// rank holds the whole vocabulary (PatrickStar has no tensor parallelism), and the lookup's weight
// never reaches the GPU, where a tied output head would need it (PatrickStar's benchmark models,
// *ForSequenceClassification, have no LM head).
void check_cpu_embedding(const Model& model, const Plan& plan) {
  if (!plan.cpu_embedding) return;
  const Provenance& pp = plan.provenance;
  if (!plan.chunked())
    pp.fail("plan.cpu_embedding", "the CPU embedding is the chunk runtime's (PatrickStar's use_cpu_embedding): "
                                  "set chunk_size, or cpu_embedding: false");
  if (model.tied_embeddings)
    pp.fail("plan.cpu_embedding", "a tied output head multiplies by the word embedding on the GPU, which the CPU "
                                  "embedding keeps on the CPU: the model needs tied_embeddings: false");
}

// Context parallelism as Megatron-core runs it: TransformerEngine's ring attention (cp_comm_type
// p2p) in its fused attention kernels. The sequence is cut into 2 x CP chunks and rank r keeps
// chunks r and 2CP-1-r, so that causal attention costs every rank the same
// (megatron/core/utils.py get_batch_on_this_cp_rank); with sequence parallelism each rank's
// tokens are further split over TP.
void check_context_parallel(const Model& model, const Plan& plan, const std::string& of_model) {
  if (plan.cp == 1) return;
  const Provenance& pp = plan.provenance;
  const std::string cp = std::to_string(plan.cp);
  if (model.seq_len % (2 * plan.cp) != 0)
    pp.fail("plan.context_parallel", "2 x context_parallel = " + std::to_string(2 * plan.cp) + " does not divide seq_len " +
                                         std::to_string(model.seq_len) + of_model +
                                         " (the causal load balancing cuts each sequence into 2 x CP chunks)");
  if (plan.sequence_parallel && (model.seq_len / plan.cp) % plan.tp != 0)
    pp.fail("plan.sequence_parallel", "tensor_parallel " + std::to_string(plan.tp) + " does not divide the " +
                                          std::to_string(model.seq_len / plan.cp) + " tokens a context-parallel rank keeps" +
                                          of_model);
  if (plan.framework != Framework::megatron_core)
    pp.fail("plan.context_parallel", std::string("context parallelism is TransformerEngine's ring attention, modelled as "
                                                 "Megatron-core runs it: set framework: megatron-core (the plan says ") +
                                         to_string(plan.framework) + ")");
  if (plan.attention == Attention::unfused)
    pp.fail("plan.attention", "context parallelism runs in fused attention kernels; unfused attention has none");
  if (plan.chunked()) pp.fail("plan.context_parallel", "the chunk runtime does not split sequences (context_parallel must be 1)");
  // TransformerEngine's p2p ring asserts "not sliding_window_attn or cp_comm_type in [a2a,
  // all_gather]" (attention/dot_product_attention/context_parallel.py, attn_forward_func_with_cp).
  if (model.sliding_window.tokens > 0 && model.sliding_window.tokens < model.seq_len)
    pp.fail("plan.context_parallel", "TransformerEngine's p2p ring attention (the context parallelism Starfish models) "
                                     "does not take a sliding window" + of_model + "; context_parallel must be 1");
}

// The quantized GEMMs (plan.fp8 / plan.fp4) through quantized_gemm_problem, the rules' one home.
void check_quantized_gemms(const Cluster& cluster, const Training& training, const Plan& plan,
                           const std::string& of_cluster) {
  const QuantizedGemmProblem problem = quantized_gemm_problem(cluster.node.gpu, training, plan);
  if (!problem.why.empty()) plan.provenance.fail(problem.field, problem.why + (problem.about_gpu ? of_cluster : ""));
}

}  // namespace

namespace {

// What an even layout that does not divide the layers could set instead: Megatron-core's
// embedding and loss slots where they divide the virtual stages, else uneven stages.
std::string layout_hint(int layers, const Plan& plan) {
  if (!plan.stage_layers.even()) return "";
  if (!slot_stage_layout(layers, plan.pp, plan.virtual_stages).even())
    return "; set plan.embedding_in_pipeline_split and plan.loss_in_pipeline_split: true (Megatron-core's "
           "--account-for-embedding/loss-in-pipeline-split: the layers and those two slots divide evenly)";
  return "; for uneven stages set plan.first_stage_layers / last_stage_layers or plan.stage_layers";
}

// Tensor parallelism against the model's heads and FFN, and the pipeline's stage layout.
void check_tensor_parallel(const Model& model, const Plan& plan, const std::string& of_model) {
  const Provenance& pp = plan.provenance;
  if (model.heads % plan.tp != 0)
    pp.fail("plan.tensor_parallel", std::to_string(plan.tp) + " does not divide the " + std::to_string(model.heads) +
                                        " attention heads" + of_model);
  if (model.kv_heads % plan.tp != 0)
    pp.fail("plan.tensor_parallel", std::to_string(plan.tp) + " does not divide the " +
                                        std::to_string(model.kv_heads) + " key/value heads" + of_model);
  if (model.ffn_hidden % plan.tp != 0)
    pp.fail("plan.tensor_parallel", std::to_string(plan.tp) + " does not divide ffn_hidden " +
                                        std::to_string(model.ffn_hidden) + of_model);
  if (const LayoutProblem bad = check_stage_layout(model.layers, plan.pp, plan.virtual_stages, plan.stage_layers);
      !bad.field.empty())
    pp.fail(bad.field, bad.message + of_model + layout_hint(model.layers, plan));
}

// TP groups within nodes, and data parallel: what the GPUs leave (dp 0) or what the plan says,
// which must then account for every GPU.
void resolve_data_parallel(const Cluster& cluster, Plan& plan, const std::string& of_cluster) {
  const Provenance& pp = plan.provenance;
  const int gpus = cluster.total_gpus();
  if (!tp_aligned_to_nodes(plan.tp, cluster.node.gpus))
    pp.fail("plan.tensor_parallel", std::to_string(plan.tp) + " neither divides the " + std::to_string(cluster.node.gpus) +
                                        " GPUs per node nor is a multiple of them, so tensor-parallel groups would "
                                        "straddle nodes" + of_cluster);
  const std::string cp_text = plan.cp > 1 ? " x context_parallel " + std::to_string(plan.cp) : "";
  if (plan.dp == 0) {
    if (gpus % (plan.tp * plan.cp * plan.pp) != 0)
      pp.fail("plan.tensor_parallel", "tensor_parallel " + std::to_string(plan.tp) + cp_text + " x pipeline_parallel " +
                                          std::to_string(plan.pp) + " does not divide the " + std::to_string(gpus) +
                                          " GPUs" + of_cluster);
    plan.dp = gpus / (plan.tp * plan.cp * plan.pp);
  } else if (plan.tp * plan.cp * plan.pp * plan.dp != gpus) {
    const int want = plan.tp * plan.cp * plan.pp * plan.dp, per_node = cluster.node.gpus;
    // The usual cause: a one-node hardware file for a multi-node plan.
    const std::string hint = want % per_node == 0 ? "; that is " + std::to_string(want / per_node) +
                                                        " nodes: set the plan file's 'nodes:' to " +
                                                        std::to_string(want / per_node)
                                                  : "";
    pp.fail("plan.data_parallel", std::string("tensor_parallel") + (plan.cp > 1 ? " x context_parallel" : "") +
                                      " x pipeline_parallel x data_parallel = " + std::to_string(want) +
                                      " but the cluster has " + std::to_string(gpus) + " GPUs" + of_cluster + hint);
  }
}

// The batch in micro-batches (returned) and the schedule that runs them.
int64_t check_batch_and_schedule(const Model& model, const Training& training, const Plan& plan) {
  const Provenance& pp = plan.provenance;
  const int64_t per_step = int64_t{plan.micro_batch} * plan.dp;
  if (training.global_batch % per_step != 0)
    training.provenance.fail("training.global_batch",
                             std::to_string(training.global_batch) + " is not a multiple of micro_batch " +
                                 std::to_string(plan.micro_batch) + " x data_parallel " + std::to_string(plan.dp));
  const int64_t m = training.global_batch / per_step;
  if (!limits::within_pass_limit(m, model.layers))
    training.provenance.fail("training.global_batch",
                             std::to_string(m) + " micro-batches per pipeline x " + std::to_string(model.layers) +
                                 " layers is more than " + std::to_string(limits::kMaxMicroBatchLayers) +
                                 " passes to simulate (Starfish's limit): raise micro_batch or lower global_batch");
  if (plan.schedule == Schedule::interleaved) {
    if (plan.virtual_stages < 2) pp.fail("plan.schedule", "the interleaved schedule needs virtual_stages >= 2");
    if (m % plan.pp != 0)
      pp.fail("plan.schedule", "the interleaved schedule needs the " + std::to_string(m) +
                                   " micro-batches to be a multiple of pipeline_parallel " + std::to_string(plan.pp));
  } else if (plan.virtual_stages != 1) {
    pp.fail("plan.virtual_stages", "virtual_stages > 1 needs schedule: interleaved");
  }
  return m;
}

// What the chunk runtime runs: no pipeline, one micro-batch per rank, chunks of 1Ki elements or more.
void check_chunk_runtime(const Training& training, const Plan& plan, int64_t micro_batches) {
  const Provenance& pp = plan.provenance;
  if (plan.chunked() && plan.pp > 1)
    pp.fail("plan.pipeline_parallel", "the chunk runtime does not run pipeline parallelism (PatrickStar has none): use "
                                      "pipeline_parallel 1 with chunk_size, or chunk_size 0");
  // PatrickStar has no gradient accumulation (grads overwrite the fp16 param chunks), and neither
  // has the chunk runtime: each rank's batch is one micro-batch, the simulator and starfish-run
  // run it so, and the memory it needs is that micro-batch's activations.
  if (plan.chunked() && micro_batches != 1)
    pp.fail("plan.micro_batch", "the chunk runtime runs each rank's batch as one micro-batch (no gradient "
                                "accumulation, as PatrickStar): micro_batch must be global_batch / data_parallel = " +
                                    std::to_string(training.global_batch / plan.dp) + ", got " +
                                    std::to_string(plan.micro_batch));
  if (plan.chunked() && plan.chunk_elements < 1024)
    pp.fail("plan.chunk_size", "chunks under 1Ki elements make no sense; got " + std::to_string(plan.chunk_elements));
}

}  // namespace

Job make_job(Model model, Cluster cluster, Training training, Plan plan) {
  check_job_size(model, cluster, training, plan);
  const Provenance& pp = plan.provenance;
  const std::string of_model = " of model " + model.name + " (" + model.provenance.file + ")";
  check_tensor_parallel(model, plan, of_model);
  const std::string of_cluster = " of cluster " + cluster.name + " (" + cluster.provenance.file + ")";
  resolve_data_parallel(cluster, plan, of_cluster);
  check_experts(model, plan, of_model);
  check_context_parallel(model, plan, of_model);
  const int64_t m = check_batch_and_schedule(model, training, plan);
  if (plan.sequence_parallel && plan.tp == 1)
    pp.fail("plan.sequence_parallel", "sequence parallelism splits along tensor-parallel ranks: it needs tensor_parallel > 1");
  const Offload& o = plan.offload;
  if ((o.params == Tier::nvme || o.grads == Tier::nvme || o.optimizer == Tier::nvme) && !cluster.node.nvme)
    pp.fail("plan.offload", "offload to nvme, but the hardware has no node.nvme" + of_cluster);
  check_chunk_runtime(training, plan, m);
  if (const PlacementProblem p = placement_problem(plan); !p.why.empty()) pp.fail(p.field, p.why);
  if (const FrameworkScheduleProblem p = framework_schedule_problem(plan); p.why) pp.fail(p.field, p.why);
  if (plan.framework == Framework::starfish)
    if (const ExecutorProblem p = executor_problem(plan); p.why) pp.fail(p.field, p.why);
  check_cpu_embedding(model, plan);
  check_quantized_gemms(cluster, training, plan, of_cluster);
  if (plan.bf16_layers.first + plan.bf16_layers.last > model.layers)
    pp.fail("plan.bf16_layers", "keeps " + std::to_string(plan.bf16_layers.first) + " + " +
                                    std::to_string(plan.bf16_layers.last) + " layers in bf16 but the model has " +
                                    std::to_string(model.layers) + of_model);
  if (const std::string why = recompute_layers_problem(plan); !why.empty()) pp.fail("plan.recompute_layers", why);
  if (const std::string why = recompute_modules_problem(model, plan); !why.empty()) pp.fail("plan.recompute_modules", why);
  if (const std::string why = train_metric_passes_problem(plan); !why.empty()) pp.fail("plan.train_metric_passes", why);
  if (plan.chunked() && plan.grad_reduce == GradReduce::fp32 && training.dtype != DType::fp32)
    pp.fail("plan.grad_reduce_dtype", std::string("the chunk runtime reduces gradients in their chunks' dtype (") +
                                          to_string(training.dtype) + "), not fp32");
  if (!cluster.node.gpu.peak_flops.count(training.dtype))
    training.provenance.fail("training.dtype", std::string("GPU ") + cluster.node.gpu.name + " has no peak for " +
                                                   to_string(training.dtype) + of_cluster);
  return Job{std::move(model), std::move(cluster), std::move(training), std::move(plan)};
}

}  // namespace starfish

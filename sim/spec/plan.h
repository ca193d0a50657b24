#pragma once
// How a training job is laid out on the cluster: parallelism, ZeRO, offload, chunks, recompute.
#include <cstdint>
#include <string>
#include <vector>

#include "sim/spec/provenance.h"

namespace starfish {

enum class Tier { gpu, cpu, nvme };
enum class Recompute { none, selective, full };
// What selective recomputation redoes: Megatron-core's --recompute-modules, a set of these bits
// (megatron/core/transformer/transformer_config.py recompute_modules; default core_attn, the
// only choice of Megatron-LM 2022 and of the other frameworks' selective recomputation).
// "moe_act", "layernorm" and "mla_up_proj" discard their output after its consumer ran and
// rebuild it before that consumer's backward (CheckpointWithoutOutput); "core_attn", "mlp" and
// "shared_experts" keep their input and rerun the module (tensor_parallel.checkpoint).
namespace recompute_module {
constexpr uint8_t core_attn = 1;       // attention's core (scores, softmax, context)
constexpr uint8_t layernorm = 2;       // a norm that is its own module: MoE's pre-MLP, MLA's input norm
constexpr uint8_t mlp = 4;             // a dense layer's MLP (its fused norm, two GEMMs, activation)
constexpr uint8_t moe_act = 8;         // the experts' activation function
constexpr uint8_t shared_experts = 16; // an MoE layer's shared experts
constexpr uint8_t mla_up_proj = 32;    // MLA's up projections (and RoPE)
constexpr uint8_t all = 63;
}  // namespace recompute_module
enum class Schedule { gpipe, one_f_one_b, interleaved };
// The framework that runs the plan. It decides what a plan file does not say: the attention
// kernel, the gradient buffers' precision, ZeRO's buckets, the pipeline engine and the
// allocator -- sim/cost/framework.h holds each one's traits and their sources.
enum class Framework { megatron_lm, megatron_core, deepspeed, fsdp, starfish };
// How attention's core (scores, softmax, dropout, context) runs: as separate kernels that store
// the s x s scores (Megatron-LM 2021-22, eager PyTorch) or fused in one kernel that never
// writes them to HBM. Fused kernels differ by generation in how close to peak they run:
// `flash1` is FlashAttention (Dao 2022) and its Triton port (llm-foundry's attn_impl: triton),
// `flash` FlashAttention-2 and later (Megatron-core through TransformerEngine, torchtitan's SDPA).
enum class Attention { framework_default, unfused, flash, flash1 };
inline bool fused(Attention a) { return a == Attention::flash || a == Attention::flash1; }
// How the softmax cross-entropy over the vocabulary runs: Megatron's vocab-parallel kernels
// (Megatron-LM, Megatron-core, Megatron-DeepSpeed), PyTorch's cross_entropy on fp32 logits
// (torchtitan, Starfish's executor), one fused kernel over the 16-bit logits (flash-attn's
// CrossEntropyLoss, llm-foundry's default), or TransformerEngine's parallel cross-entropy, which
// writes the gradient into the logits in place (Megatron-core's --cross-entropy-fusion-impl te,
// Megatron-Bridge's Llama and Qwen recipes). sim/cost/framework.h has their costs.
enum class Loss { framework_default, vocab_parallel, pytorch, fused, te };
// FP8 GEMMs as TransformerEngine runs them under Megatron-core (--fp8-format): the linear layers'
// forward and backward GEMMs take fp8 inputs, everything else (params, activations between
// kernels, attention's core, norms, the LM head, gradients' reduction, the optimizer) stays in the
// training dtype. `hybrid`: E4M3 forward, E5M2 gradients (TE's Format.HYBRID); `e4m3`: E4M3 both.
// sim/cost/low_precision.h holds their costs.
enum class Fp8 { none, hybrid, e4m3 };
// How fp8 scaling factors are found (Megatron's --fp8-recipe): `delayed` from an amax history of
// earlier iterations (TE's DelayedScaling, Megatron's default), `tensorwise` from the tensor's own
// amax before each cast (TE's Float8CurrentScaling; Megatron-Bridge's "FP8-CS"), `mxfp8` one
// power-of-two (E8M0) scale per 32 consecutive elements (TE's MXFP8BlockScaling, OCP MX spec
// v1.0), which needs block-scaled tensor cores (Blackwell: the hwprofile's peak.mxfp8).
enum class Fp8Recipe { delayed, tensorwise, mxfp8 };
// FP4 GEMMs (Megatron's --fp4-format e2m1 --fp4-recipe nvfp4; TE's NVFP4BlockScaling): E2M1
// values with an E4M3 scale per 16 elements and an fp32 scale per tensor, the linear layers' GEMMs
// at the hwprofile's peak.fp4. Exclusive with fp8 (Megatron's arguments.py refuses both).
enum class Fp4 { none, nvfp4 };
// The precision the data-parallel gradient reduction moves: `fp32`, or the `training` dtype
// (16-bit under bf16/fp16 mixed precision). Each framework has its default (framework.h's
// grad_buffers): Megatron's fp32 main grads under bf16 (--grad-reduce-in-bf16 turns it to bf16,
// buffer included), FSDP's MixedPrecision(reduce_dtype=float32) as torchtitan
// (mixed_precision_reduce: float32) and Composer's DEFAULT set it (Composer's PURE: bf16),
// DeepSpeed's 16-bit grads.
enum class GradReduce { framework_default, fp32, training };

struct Offload {
  Tier params = Tier::gpu;     // fp16/bf16 params (and their grads, which reuse them in chunks)
  Tier grads = Tier::gpu;      // gradients when they are not chunk-reused
  Tier optimizer = Tier::gpu;  // fp32 master params, momentum, variance
  bool operator==(const Offload&) const = default;
};

// How the transformer layers are spread over the pipeline stages. Empty: evenly, layers /
// (pp x virtual_stages) per virtual stage (Megatron's default). `first`/`last`: the first and last
// stage's layer counts, the other stages sharing the rest evenly, as Megatron-core's
// --decoder-first-pipeline-num-layers / --decoder-last-pipeline-num-layers (Llama 3 405B: 126
// layers over PP16 as 7 + 14 x 8 + 7, lighter ends for the embedding and the LM head). `per_stage`:
// every stage's count (DeepSpeed's partition by parameters gives such lists). With interleaving,
// each stage's layers are divided evenly over its virtual stages (Megatron-core's
// get_num_layers_to_build). `embedding_slot` / `loss_slot`: Megatron-core's
// --account-for-embedding-in-pipeline-split / --account-for-loss-in-pipeline-split, which count
// the embedding and the loss as one layer each: layers + 1 + 1 share the pp x virtual_stages
// virtual stages evenly and the model's first (last) virtual stage builds one layer fewer
// (Megatron-Bridge's Llama 3.1 405B and Qwen3-235B recipes: 126 layers over PP8 x VP8 as 2 a
// virtual stage, 1 in the first and the last). sim/spec/pipeline_layout.h resolves and checks it.
struct StageLayout {
  int first = 0;               // layers of the first stage; 0 = as the others
  int last = 0;                // layers of the last stage; 0 = as the others
  std::vector<int> per_stage;  // explicit counts, one per stage (then first/last are 0)
  bool embedding_slot = false; // the embedding takes a layer's place in the first virtual stage
  bool loss_slot = false;      // the loss takes a layer's place in the last virtual stage
  bool even() const { return first == 0 && last == 0 && per_stage.empty() && !embedding_slot && !loss_slot; }
  bool slots() const { return embedding_slot || loss_slot; }
  bool operator==(const StageLayout&) const = default;
};

struct Plan {
  int tp = 1;                  // tensor parallel
  int pp = 1;                  // pipeline parallel
  int dp = 0;                  // data parallel; 0 = derive as GPUs / (tp * cp * pp)
  // Context parallelism (Megatron-core's --context-parallel-size, TransformerEngine's ring
  // attention): each sequence is split over `cp` ranks, which exchange keys and values around a
  // ring while attention runs (sim/cost/context_parallel.h). The ranks of a CP group hold the
  // same parameters: gradients are reduced, and ZeRO shards, over DP x CP (dp_cp()).
  int cp = 1;
  int virtual_stages = 1;      // virtual stages per pipeline stage (interleaved 1F1B)
  // Expert parallelism (MoE models): each rank of an EP group holds experts / ep of a layer's
  // routed experts, and tokens travel to them by all-to-all. The expert layers are laid out on
  // the ranks of a stage on their own (Megatron-core's MoE parallel folding, Liu et al. 2024):
  // expert TP x EP x expert DP = TP x DP; expert_tensor_parallel 0 = TP (Megatron-core's default
  // for --expert-tensor-parallel-size).
  int ep = 1;
  int etp = 0;
  // Tokens of the busiest EP rank over the mean (MoE): 1 = perfectly balanced routing, what the
  // auxiliary load-balancing loss drives towards (Fedus et al. 2022, sec. 2.2); set what your
  // runs measure. Expert compute and the all-to-alls pay it.
  double moe_load_imbalance = 1.0;
  StageLayout stage_layers;    // uneven pipeline stages; even by default
  int micro_batch = 1;         // sequences per micro-batch
  bool sequence_parallel = false;
  // Data-parallel gradient reduction overlapped with the backward pass, a virtual stage at a time
  // (Megatron's --overlap-grad-reduce, DeepSpeed's overlap_comm). Off, the reduction starts after
  // the pipeline flush: the default of both, and what Megatron-LM ran in 2021.
  bool overlap_grad_reduce = false;
  Schedule schedule = Schedule::one_f_one_b;
  int zero_stage = 0;          // 0..3
  Offload offload;
  int64_t chunk_elements = 0;  // chunk runtime chunk size; 0 = static placement (no chunks)
  // PatrickStar's device-aware operator placement (use_cpu_embedding, patrickstar/ops/embedding.py
  // and core/preprocess.py): the embeddings' lookup, their fp32 parameters, gradients and Adam
  // states stay on the CPU, outside the chunks, replicated on every rank and all-reduced over
  // Gloo. Chunked plans only, without TP and without a tied output head (sim/cost/cpu_embedding.h).
  bool cpu_embedding = false;
  Recompute recompute = Recompute::none;
  // Under full recomputation, how many layers of each virtual stage recompute: 0 = every layer
  // (Megatron's --recompute-method uniform --recompute-num-layers 1), N = the first N of each
  // virtual stage, the rest keep all their activations (--recompute-method block
  // --recompute-num-layers N: megatron/core/transformer/transformer_block.py,
  // _checkpointed_forward, `layer_idx < recompute_num_layers`, per model chunk).
  int recompute_layers = 0;
  // Under selective recomputation, the modules it redoes (recompute_module bits).
  uint8_t recompute_modules = recompute_module::core_attn;
  Framework framework = Framework::megatron_lm;
  Attention attention = Attention::framework_default;  // resolved by attention_kernel()
  Loss loss = Loss::framework_default;                 // resolved by loss_kernel()
  Fp8 fp8 = Fp8::none;                                 // fp8 GEMMs (TransformerEngine), none = training dtype
  Fp8Recipe fp8_recipe = Fp8Recipe::delayed;
  Fp4 fp4 = Fp4::none;                                 // fp4 GEMMs (TransformerEngine NVFP4)
  // The GEMM weights are kept only as fp8 (Megatron's --fp8-param-gather, Megatron-Bridge's
  // mixed_precision.fp8_param_gather): TransformerEngine's Float8Tensor params, no 16-bit copy;
  // the distributed optimizer casts its fp32 master shard to fp8 after the step and all-gathers
  // the fp8 bytes (megatron/core/fp8_utils.py quantize_param_shard, TE's
  // cast_master_weights_to_fp8). Needs fp8 GEMMs (delayed or tensorwise) and ZeRO-1/2.
  bool fp8_params = false;
  // Under fp8, the model's first and last transformer layers that keep their GEMMs in the
  // training dtype (Megatron's --first-last-layers-bf16 with --num-layers-at-start-in-bf16 /
  // --num-layers-at-end-in-bf16, counted over the whole model: megatron/core/fp8_utils.py
  // is_first_last_bf16_layer takes the global layer index). Megatron-Bridge's FP8 current-scaling
  // recipe keeps 1 and 1 (mixed_precision.py, bf16_with_fp8_current_scaling_mixed). Megatron
  // refuses it under delayed scaling (get_fp8_context: "Delayed scaling does not support first /
  // last layer in BF16").
  struct Bf16Layers {
    int first = 0, last = 0;
    bool any() const { return first > 0 || last > 0; }
    bool operator==(const Bf16Layers&) const = default;
  } bf16_layers;
  GradReduce grad_reduce = GradReduce::framework_default;  // resolved by grad_buffers()
  // Cross-entropy passes over each micro-batch's logits that the trainer runs after its backward
  // for training metrics, without gradients: Composer's trainer updates every train metric after
  // each micro-batch (composer/trainer/trainer.py, _train_microbatches -> _eval_train_metrics),
  // and llm-foundry's models (2023) had two, LanguageCrossEntropy and LanguagePerplexity (a
  // subclass: the same torch CrossEntropyLoss again). 0: none (Megatron, DeepSpeed, torchtitan).
  // Costed in framework.h (train_metric_kernel).
  int train_metric_passes = 0;
  Provenance provenance;

  bool chunked() const { return chunk_elements > 0; }
  int expert_tp() const { return etp > 0 ? etp : tp; }
  // The ranks that hold the same parameters: Megatron's data-parallel group with context
  // parallelism (parallel_state.py, get_data_parallel_group(with_context_parallel=True)).
  int dp_cp() const { return dp * cp; }
  // The linear layers' GEMMs run on quantized inputs (fp8 or fp4), not in the training dtype.
  bool quantized_gemms() const { return fp8 != Fp8::none || fp4 != Fp4::none; }
  // Whether the layer at `index_in_virtual_stage` (0 = its virtual stage's first) runs the
  // plan's recomputation: every layer, but only the first recompute_layers under block recompute.
  bool recomputes_layer(int index_in_virtual_stage) const {
    return recompute != Recompute::none && (recompute_layers == 0 || index_in_virtual_stage < recompute_layers);
  }
  // The selective recomputation's modules (none without it).
  uint8_t selective_modules() const { return recompute == Recompute::selective ? recompute_modules : 0; }
  // The TP collectives a recomputing layer runs again, in halves of a pass's two (attention's
  // and the MLP's): full recomputation both, the mlp module the MLP's in a dense layer.
  int recomputed_tp_halves(bool moe_layer) const {
    if (recompute == Recompute::full) return 2;
    return !moe_layer && (selective_modules() & recompute_module::mlp) ? 1 : 0;
  }
  // Whether model layer `layer` (0-based, of `layers`) runs its GEMMs in the training dtype
  // although the plan's are fp8 (bf16_layers).
  bool bf16_layer(int layer, int layers) const {
    return fp8 != Fp8::none && (layer < bf16_layers.first || layer >= layers - bf16_layers.last);
  }
  bool has_bf16_layers() const { return fp8 != Fp8::none && bf16_layers.any(); }
  bool operator==(const Plan&) const = default;
};

const char* to_string(Tier t);
bool parse_tier(const std::string& text, Tier& out);  // false when unknown
const char* to_string(Recompute r);
// Megatron-core's names of recompute_module bits, in its order ("core_attn", "moe_act", ...), and
// the same joined by `separator`; parse_recompute_module: false when the name is not one.
std::vector<std::string> recompute_module_names(uint8_t modules);
std::string recompute_modules_text(uint8_t modules, const char* separator = ", ");
bool parse_recompute_module(const std::string& text, uint8_t& bit);
// The plan's recomputation as read: "full", "selective", "selective (moe_act, layernorm)".
std::string recompute_text(const Plan& plan);
const char* to_string(Schedule s);
const char* to_string(Framework f);
bool parse_framework(const std::string& text, Framework& out);  // false when unknown
const char* to_string(Attention a);
const char* to_string(Loss l);
const char* to_string(Fp8 f);
const char* to_string(Fp8Recipe r);
const char* to_string(Fp4 f);
const char* to_string(GradReduce g);

}  // namespace starfish

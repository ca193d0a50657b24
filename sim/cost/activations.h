#pragma once
// Activation memory per Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large
// Transformer Models"), generalised to any FFN width, grouped-query attention and SwiGLU by
// counting the stored tensors one by one (their Table 2 / eq. 1-5 are the special case
// f = 4h, kv = h, 2-byte activations and 1-byte dropout masks; tests check that case exactly).
#include <algorithm>
#include <cstdint>

#include "sim/spec/model.h"
#include "sim/spec/plan.h"
#include "sim/spec/training.h"

namespace starfish {

struct ActivationOptions {
  int tp = 1;
  bool sequence_parallel = false;
  Recompute recompute = Recompute::none;
  int64_t act_bytes = 2;  // bytes per activation element (2 for fp16/bf16, 4 for fp32)
  Attention attention = Attention::unfused;  // flash stores no s x s scores
  int cp = 1;  // context parallel: a rank keeps seq_len / cp tokens of each sequence
  // Bytes per element of the quantized copy of a linear layer's input TransformerEngine saves
  // for the weight gradient under fp8/fp4 GEMMs (saved_gemm_input_bytes_per_element in
  // low_precision.h); 0: the GEMMs are not quantized, the input is saved in act_bytes.
  double quantized_input_bytes = 0;
  // The attention output projection saves its 16-bit input (the context flash attention keeps
  // anyway) rather than a quantized copy of it: 16-bit GEMMs, and Megatron-core's fp8 recipes
  // other than delayed scaling (projection_saves_original_input in low_precision.h).
  bool projection_saves_original_input = true;
  // Under selective recomputation, the modules it redoes (Plan::recompute_modules).
  uint8_t recompute_modules = recompute_module::core_attn;
  // Under SP the column-parallel GEMMs save the input they all-gathered, not this rank's shard
  // (torchtitan: FrameworkTraits::sequence_parallel_regathers_inputs false).
  bool sequence_parallel_saves_gathered_inputs = false;
  double gemm_input_bytes() const { return quantized_input_bytes > 0 ? quantized_input_bytes : static_cast<double>(act_bytes); }
  bool recomputes(uint8_t module) const { return recompute == Recompute::selective && (recompute_modules & module); }
};

// The options of a plan's layers (attention kernel resolved through the framework, GEMM inputs
// saved quantized when the plan's GEMMs are), with `recompute`.
ActivationOptions plan_activation_options(const Plan& plan, int64_t act_bytes, Recompute recompute);

// Bytes one transformer layer keeps for backward, per micro-batch of `micro_batch` sequences.
double layer_activation_bytes(const Model& model, int64_t micro_batch, const ActivationOptions& options);

// Of which the dense MLP's intermediate tensors (between its two GEMMs): what an MoE layer
// replaces by its experts' (sim/cost/moe.h).
double mlp_activation_bytes(const Model& model, int64_t micro_batch, const ActivationOptions& options);

// The most bytes one layer's backward holds at once beyond what the layer saved (counted in
// full when its backward starts): the gradients it is computing while the saved tensors they
// need are still alive. Two moments bound it. In the MLP's backward, which runs first with
// every saved tensor of the layer alive: the gradient arriving at the layer's output, with the
// dropout-add's branch gradient and the second GEMM's input gradient (f wide); then the
// activation's input gradient (SwiGLU: 2f) beside that one, the second GEMM's saved input freed
// (autograd releases a node's saved tensors once its backward has run). In the unfused
// attention's backward, after the MLP's saved tensors are gone: the s x s gradients of the
// dropout's output and of the softmax output (the fused softmax backward writes its result
// over its input: Megatron's scaled_masked_softmax), the value gradient and the residual's.
// Flash attention's dQ/dK/dV are smaller than the MLP tensors freed before them.
double layer_backward_transient_bytes(const Model& model, int64_t micro_batch, const ActivationOptions& options);
// The unfused attention's moment of it, for a layer whose MLP's saved intermediates (freed by
// then) are `mlp_intermediate_bytes`; 0 for fused attention. May be negative (less than freed).
double attention_backward_transient_bytes(const Model& model, int64_t micro_batch, const ActivationOptions& options,
                                          double mlp_intermediate_bytes);

// Korthikanti's closed forms (f = 4h, kv = h, 2-byte activations), for cross-checking:
//   none:      s b h (10 + 24/t + 5 a s / (h t))      (SP: s b h / t (34 + 5 a s / h))
//   selective: s b h (10 + 24/t)                       (SP: 34 s b h / t)
//   full:      2 s b h                                 (SP: 2 s b h / t)
double korthikanti_layer_bytes(const Model& model, int64_t micro_batch, const ActivationOptions& options);

// Activation bytes held at the peak by the most loaded pipeline stage (the first one under 1F1B
// or interleaving, every stage under GPipe), including the embedding output on the first stage
// and the output layer (final norm, head input, fp32 logits for the loss) on the last.
// What a layer kept in the training dtype under fp8 (Plan::bf16_layer) keeps beyond an fp8
// layer: its GEMM inputs saved unquantized (the attention projection's too), with the plan's
// recomputation (`stored`) and without it (`full`), dense and MoE. Zero without such layers.
struct Bf16LayerBytes {
  double stored = 0, full = 0, moe_stored = 0, moe_full = 0;
};
Bf16LayerBytes bf16_layer_extra_bytes(const Model& m, const Plan& plan, int64_t act_bytes);

struct StageActivations {
  double layers_bytes = 0;     // in-flight micro-batches x layers x per-layer bytes
  double embedding_bytes = 0;  // first stage: embedding output / dropout mask in flight
  double output_bytes = 0;     // last stage: the output layers of the micro-batches in flight there
  // With recomputation, the layer being back-propagated holds its rebuilt activations beside
  // the stored ones until its backward is done (Megatron's CheckpointFunction.backward reruns
  // the layer's forward under enable_grad, then backward through it): the full layer's bytes
  // less what it had kept.
  double recompute_working_bytes = 0;
  // The gradients the layer being back-propagated holds at their most (layer_backward_transient_bytes,
  // moe_layer_backward_transient_bytes): the larger of a dense and an MoE layer of the stage's.
  double backward_transient_bytes = 0;
  // Last stage: the training metrics' passes after a micro-batch's backward (framework.h,
  // train_metric_kernel), when the layers' activations are freed (data-parallel plans only:
  // job.cpp): a moment of their own, the peak when larger than the backward's.
  double metric_bytes = 0;
  // Last stage: the output layers still held while a layer back-propagates. A micro-batch's
  // output layer (its logits and loss at their most) is freed by its backward, which runs
  // before its layers' (the simulator's op order): under 1F1B and interleaving no other
  // micro-batch's is held then (0), under GPipe the others' forwards all are.
  double output_held_in_backward_bytes = 0;
  double in_flight_micro_batches = 0;
  // The stage's peak: its layers' and embedding's in-flight bytes, and the larger of two moments,
  // the loss (its output layers) and a layer's backward (what recomputation rebuilds and the
  // gradients, beside the output layers it leaves held), or the metrics' moment.
  double total() const {
    const double loss = output_bytes, backward = output_held_in_backward_bytes + recompute_working_bytes + backward_transient_bytes;
    return std::max(layers_bytes + embedding_bytes + std::max(loss, backward), metric_bytes);
  }
};

// Bytes the first stage keeps per micro-batch for the embedding's backward: the embedding
// dropout's 1-byte mask (none without dropout; the lookup's backward needs only the indices)
// and an embedding norm's input at `act_bytes` an element (BLOOM).
double embedding_activation_bytes(const Model& model, const Plan& plan, int64_t act_bytes);

// One micro-batch's output layer on the last stage, from its loss to its backward: the final
// norm's and the head's inputs and the loss's logits at their most.
double output_layer_activation_bytes(const Model& model, const Plan& plan, int64_t act_bytes);

// One micro-batch's hidden states, seq_len / cp x micro_batch x hidden elements of `act_bytes`: the
// tensor a pipeline stage sends its successor and each of a layer's TP all-reduces carries.
double boundary_bytes(const Model& model, const Plan& plan, int64_t act_bytes);

// GPU buffers a pipeline stage keeps for its boundary tensors: one received, one sent (none
// without pipeline parallelism).
double pipeline_buffer_bytes(const Model& model, const Plan& plan, int64_t act_bytes);

// What one layer of the plan keeps, the same on every stage (computed once per plan, asked per
// stage): its activations with the plan's recomputation (`kept`) and without (`full`), an MoE
// layer's likewise, and the gradients each holds at their most in its backward.
struct LayerActivations {
  double kept = 0, full = 0, backward_transient = 0;
  double moe_kept = 0, moe_full = 0, moe_backward_transient = 0;
};
LayerActivations plan_layer_activations(const Model& model, const Plan& plan, int64_t act_bytes);

// The non-model bytes the chunk runtime's steps hold (sim/chunk/iteration_driver.h: one forward
// step per layer, embeddings -1 .. output layer L, then backward in reverse), for a plan whose
// micro-batch is the rank's whole batch (the runtime does not accumulate): the hidden states
// flowing between layers at every step; in forward the layers done so far keep theirs, the
// output layer its logits; in backward layer i holds the i below it, its own full activations
// (rebuilt, under recomputation) and its gradients. The one home of the rule the simulator's
// chunked iteration charges (sim/schedule/chunked_iteration.cpp) and the estimate's peak.
struct ChunkedStepActivations {
  int layers = 0;
  bool recompute = false;
  double boundary_bytes = 0, stored_bytes = 0, full_bytes = 0, output_bytes = 0, backward_transient_bytes = 0;
};
// `layer`: plan_layer_activations of the same plan (which the caller has computed already).
ChunkedStepActivations chunked_step_activations(const Model& model, const Plan& plan, int64_t act_bytes,
                                                const LayerActivations& layer);
double chunked_step_non_model_bytes(const ChunkedStepActivations& a, bool forward, int layer);
double chunked_peak_non_model_bytes(const ChunkedStepActivations& a);

// `micro_batches` = micro-batches per pipeline per iteration; `layer`: plan_layer_activations
// of the same plan (the estimate's loop over stages computes it once).
StageActivations peak_stage_activations(const Model& model, const Plan& plan, int64_t micro_batches,
                                        int64_t act_bytes, int stage);
StageActivations peak_stage_activations(const Model& model, const Plan& plan, int64_t micro_batches,
                                        int64_t act_bytes, int stage, const LayerActivations& layer);

}  // namespace starfish

#pragma once
// What the framework running a plan does that the plan itself does not say: its attention
// kernel, the precision of the buffer gradients accumulate and reduce in, and the memory its
// allocator reserves beyond what tensors use. One home for these rules; the analytic tier, the
// event-driven tier and the exports all ask here. Each trait states its source.
#include "sim/spec/hardware.h"
#include "sim/spec/model.h"
#include "sim/spec/plan.h"
#include "sim/spec/training.h"

namespace starfish {

// How a framework's linear layers add their biases and find the biases' gradients; the HBM
// traffic each adds beyond the GEMMs is costed in op_time.cpp (LayerOpsBuilder::biases).
enum class LinearBias {
  in_gemm,   // added in the GEMM's epilogue, the gradient in the wgrad GEMM's (TransformerEngine): free
  summed,    // PyTorch nn.Linear: added in addmm's epilogue; backward sums each output gradient over the tokens
  megatron,  // Megatron-LM: fused kernels, QKV's by a separate add; backward sums each output gradient
  copied,    // LibTorch 1.13 addmm: the bias copied into each output first; backward sums (Starfish's executor)
};

struct FrameworkTraits {
  Attention attention = Attention::unfused;  // the kernel a plan gets when it names none
  // Gradients accumulate over micro-batches and are reduced over DP in fp32 when the model
  // trains in bf16: Megatron-LM forces --accumulate-allreduce-grads-in-fp32 for bf16
  // (megatron/arguments.py: "bfloat16 requires gradient accumulation and all-reduce to be done
  // in fp32"), its main_grad buffer replacing the 16-bit .grad. (DeepSpeed's BF16_Optimizer,
  // deepspeed/runtime/bf16_optimizer.py, keeps a full fp32 accumulator *beside* the bf16 .grad,
  // but only without ZeRO, which no plan expresses yet; ZeRO-1/2 keep 16-bit grads.)
  bool fp32_grads_replace_low_precision = false;
  // The DP reduction moves fp32 gradients (plan.grad_reduce_dtype: default): FSDP's
  // MixedPrecision(reduce_dtype=torch.float32), torchtitan's default (mixed_precision_reduce:
  // float32, torchtitan/config/job_config.py) and Composer's DEFAULT mixed precision
  // (composer/distributed/mosaic_parallelism.py: param bf16, reduce fp32, buffers fp32).
  bool reduce_grads_in_fp32 = false;
  // PyTorch's caching allocator reserves more than tensors use (splitting and rounding leave
  // unusable holes). GMLake (Guo et al., ASPLOS 2024) measures the fragmentation of eight LLMs
  // trained with recomputation / ZeRO / offload on A100-80GB at 15% on average (what GMLake
  // recovers), so reserved = allocated / (1 - 0.15). Starfish's chunk runtime allocates its
  // chunks once, of one size: no fragmentation of its model states.
  double allocator_fragmentation = 0.15;
  // ZeRO's contiguous reduction bucket, held for the whole run: DeepSpeed's reduce_bucket_size
  // (default 5e8 elements, deepspeed/runtime/zero/config.py), allocated in the gradients' dtype
  // (stage_1_and_2.py ipg_buffer; stage3.py the ipg buckets' buffer). 0: no such buffer.
  double zero_reduce_bucket_elements = 0;
  // Pipeline sends without sequence parallelism: does each TP rank send 1/tp of the boundary
  // tensor, the receiving TP group all-gathering the pieces? Megatron-LM 2021-22 does
  // (scatter/gather, Narayanan 2021 sec. 4.1; --scatter-gather-tensors-in-pipeline, on by default
  // since 2021-02), and so does DeepSpeed's PipelineEngine whenever TP > 1 (engine.py:
  // is_pipe_partitioned = is_model_parallel; PartitionedTensor on send, .full() on receive).
  // Megatron-core sends the whole tensor from every rank: the scatter/gather went when the
  // schedules moved into core (Megatron-LM 3c92fa93, 2023-03).
  bool pipeline_scatter_gather = true;
  // A stage waits for its send to complete before it computes on: Megatron-LM 2021-22's
  // p2p_communication waits on every batch_isend_irecv pair (send_forward_recv_backward ...),
  // and DeepSpeed's engine executes SendActivation / SendGrad as blocking instructions. A
  // blocking NCCL send also meets its receive: the transfer starts only once the receiving stage
  // has posted it, i.e. finished the op it runs before the one that consumes the data.
  bool blocking_p2p = true;
  // The loss a plan gets when it names none: Megatron's vocab-parallel cross-entropy
  // (Megatron-LM, Megatron-core, and Megatron-DeepSpeed's GPT), PyTorch's cross_entropy on fp32
  // logits (torchtitan's loss.py: cross_entropy(pred.float(), labels); Starfish's executor).
  Loss loss = Loss::vocab_parallel;
  // Unfused attention that copies its heads between layouts (sim/cost/op_time.cpp costs them):
  // Starfish's executor (exec/gpt_model.cpp) takes q, k and v out of the fused QKV output as
  // strided views [batch, heads, tokens, head_dim], and at::matmul's reshape of a strided 4-d
  // operand into bmm's 3-d batch copies q, k^T and v, and the context back to [tokens, hidden].
  // Megatron's kernels run baddbmm on strided views of its [s, b, heads, d] layout instead.
  bool attention_head_copies = false;
  // How the linear layers' biases are added and their gradients found (op_time.h LinearBias):
  // Megatron-LM's kernels by default; TransformerEngine's GEMM epilogues under Megatron-core;
  // PyTorch's nn.Linear under FSDP; LibTorch 1.13's addmm copies in Starfish's executor.
  LinearBias linear_bias = LinearBias::megatron;
  // Selective recomputation checkpoints the attention core whatever kernel runs it, so a fused
  // kernel's forward runs again in backward: Megatron's checkpoint_core_attention
  // (transformer/attention.py, "core_attn" in recompute_modules; transformer_config.py warns
  // that with fused attention there is "no need" for it, and runs it). Megatron-DeepSpeed's
  // GPT checkpoints its core attention the same way. torchtitan's selective (op) policy saves
  // the flash kernel's outputs instead: nothing redone.
  bool selective_recomputes_fused_attention = true;
  // A norm's backward reads its input and its output gradient twice, once for the input's
  // gradient and once for the weight's and bias's: PyTorch's LayerNorm
  // (aten/src/ATen/native/cuda/layer_norm_kernel.cu: layer_norm_grad_input_kernel, then
  // GammaBetaBackwardCUDAKernel, each reading X and dY) and the apex kernels Megatron-LM's and
  // Megatron-DeepSpeed's MixedFusedLayerNorm build (cuComputePartGradGammaBeta, then
  // cuComputeGradInput). TransformerEngine's norm backward (Megatron-core) finds dX and the
  // weight gradients' partial sums in one pass over them. (From 2021-10, Megatron-LM runs apex's
  // one-pass persistent LayerNorm for a list of hidden sizes when apex.contrib is installed,
  // "persistent fused layer norm", a2fdcdf061; a megatron-lm plan, which spans 2021-22, keeps the
  // two-pass kernels every hidden size had before.)
  bool norm_backward_rereads = true;
  // Where a MoE layer weights each expert output by its routing probability. Megatron-core
  // (since "Memory efficient token permutation", 2659630721, 2025-04, core_r0.13.0) permutes the
  // probabilities with the tokens and multiplies them into the experts' activation
  // (experts.py, TEGroupedMLP: weighted_bias_swiglu_impl), whose backward finds their gradient
  // from the input it saves anyway; the combine's unpermute is then a plain sum
  // (token_dispatcher.py, MoEAlltoAllTokenDispatcher.combine_postprocess: unpermute without
  // probs) and keeps nothing. Otherwise the combine weights the expert outputs and saves them
  // for the weights' gradient: DeepSpeed-MoE's einsum("sec,ecm->sm", combine_weights,
  // expert_output) (deepspeed/moe/sharded_moe.py); torchtitan's MoE multiplies the scores into
  // the routed inputs before the experts or into their outputs after (MoEArgs
  // score_before_experts, whose default has been both) and saves either, as many bytes.
  bool moe_probs_in_expert_activation = false;
  // Under sequence parallelism a column-parallel linear layer (QKV, MLP-in) saves its input as
  // this rank's sequence shard and all-gathers it again in backward for the weight gradient:
  // Megatron-LM's LinearWithGradAccumulationAndAsyncCommunication (megatron/mpu/layers.py,
  // 2022: "if ctx.sequence_parallel: ... _all_gather_base(all_gather_buffer, input)" in
  // backward; Megatron-core's tensor_parallel/layers.py keeps it), TransformerEngine's
  // LayerNormLinear (Megatron-core: the shard saved, gathered in backward) and
  // Megatron-DeepSpeed's copy of Megatron's mpu. torchtitan's DTensor SequenceParallel ->
  // ColwiseParallel all-gathers in forward and the GEMM saves the gathered input: more memory,
  // no gather in backward.
  bool sequence_parallel_regathers_inputs = true;
};

const FrameworkTraits& framework_traits(Framework f);

// The framework that runs a plan: a chunked plan runs in Starfish's own executor (its chunk
// runtime), whatever framework it names; any other plan in the framework it names.
Framework running_framework(const Plan& plan);

// Whether a stage waits for its pipeline sends (FrameworkTraits::blocking_p2p) under the plan's
// schedule. Megatron-core waits only where the data is needed in its interleaved schedule
// (overlap_p2p_comm, on unless --no-overlap-p2p-communication); without interleaving its 1F1B
// waits on every batched exchange like Megatron-LM's (core/pipeline_parallel/
// p2p_communication.py: send_forward_recv_backward and the rest call _communicate with
// wait_on_reqs=True).
bool pipeline_sends_block(const Plan& plan);

// The parameters in each of the buckets whose gradients a data-parallel reduction launches as
// soon as the backward has produced them, when a virtual stage's reduction overlaps the backward
// (plan.overlap_grad_reduce, ZeRO-0/1); 0: one reduction once the virtual stage's last backward
// is done. Megatron-core's DistributedDataParallel (core/distributed/distributed_data_parallel.py)
// buckets max(40M, 1M x DP) parameters in backward order, on the first pipeline stage's first
// model chunk only (pp_rank > 0 and, in Megatron's model setup, chunks after the first turn
// bucketing off: their reduction is off the critical path); it launches a bucket's reduce-scatter
// (all-reduce without the distributed optimizer) once its gradients are ready in the last
// micro-batch's backward.
double dp_bucket_params(const Plan& plan, int stage, int virtual_stage, int dp);

// How those buckets cut virtual stage `virtual_stage` of `stage`, `layers` layers of
// `layer_params` parameters each: in backward order, `buckets` - 1 of `per_bucket` layers (the
// fewest whose params reach dp_bucket_params), and last the `remainder` (1..per_bucket layers:
// the first in forward order, where the param gather starts). Not bucketed: one bucket of every
// layer. The one layout both tiers' reductions and param gathers take.
struct DpBucketLayout {
  int per_bucket = 1, buckets = 1, remainder = 1;
};
DpBucketLayout dp_bucket_layout(const Plan& plan, int stage, int virtual_stage, int dp, int layers, double layer_params);
// The same cut for buckets of `bucket_params` (> 0).
DpBucketLayout bucket_layout(double bucket_params, int layers, double layer_params);

// ZeRO-2 with overlapped reduction (plan.overlap_grad_reduce) reduce-scatters each micro-batch's
// gradients during its backward, in buckets of these many parameters launched as they are ready,
// and the backward ends waiting for them (none runs on under the next micro-batch): DeepSpeed's
// stage 2 fills reduce_bucket_size (5e8 elements) and its epilogue synchronizes the device under
// overlap_comm (stage_1_and_2.py independent_gradient_partition_epilogue); FSDP's
// SHARD_GRAD_OP reduce-scatters each unit (a transformer layer, auto-wrapped) on its
// post-backward stream, which the final callback makes the compute stream wait for
// (torch/distributed/fsdp/_runtime_utils.py _post_backward_final_callback); Megatron, whose
// distributed optimizer stops at ZeRO-1, is taken to bucket as Megatron-core's DDP does
// (dp_bucket_params' size) and wait as the others. 0 where the plan does not run so.
double zero2_bucket_params(const Plan& plan, int dp);

// ZeRO-3's reduce-scatters in buckets of these many parameters rather than a layer at a time:
// DeepSpeed's stage 3 adds each gradient to its ipg bucket and reduce-scatters the bucket when
// the next would overflow reduce_bucket_size (stage3.py reduce_independent_p_g_buckets_and_
// remove_grads), the rest in its epilogue; FSDP and Megatron-core's FSDP reduce each unit (a
// layer) as its backward ends. 0 where the plan reduces layer by layer.
double zero3_bucket_params(const Plan& plan, int dp);

// Whether a stage's gradients accumulate unsharded over its micro-batches before one reduction:
// torch.distributed.pipelining (torchtitan's PP) turns FSDP2's gradient sync off on every
// backward of a stage but its last (stage.py _configure_data_parallel_mode:
// set_requires_gradient_sync(last_backward)), and until then FSDP2 keeps each unsharded gradient,
// upcast to the reduce dtype (FSDPParam.to_accumulated_grad_if_needed). So under FSDP with ZeRO-2/3,
// pipeline parallelism and several micro-batches, the stage holds its whole gradient in the
// reduce dtype besides its shard, and reduces it once, after its last micro-batch's backward.
bool grads_accumulate_unsharded(const Plan& plan, int64_t micro_batches);

// Whether the DP reduction runs after every micro-batch's backward: ZeRO-2 and -3 keep only their
// gradient partition (DeepSpeed reduces after every backward, gradient accumulation or not:
// deepspeedai/DeepSpeed#2252; FSDP likewise), unless the stage accumulates its gradients
// unsharded (grads_accumulate_unsharded); ZeRO-0/1 reduce once.
bool reduces_every_micro_batch(const Plan& plan, int dp, int64_t micro_batches);

// Whether ZeRO-3's backward ends waiting for its reduce-scatters, so that none runs on under the
// next micro-batch: DeepSpeed's stage 3 epilogue synchronizes its reduce-and-partition stream after
// every backward (stage3.py independent_gradient_partition_epilogue); PyTorch FSDP's final
// callback makes the compute stream wait for the post-backward stream
// (_runtime_utils.py _post_backward_final_callback; FSDP2 on its last backward, every backward
// unless told otherwise); Starfish's executor reduces in blocking collectives. Megatron-core's
// FSDP does not: its root post-backward hook only queues the reduce-scatters
// (megatron_fsdp.py _root_post_backward) and finish_grad_sync waits before the optimizer step.
bool zero3_backward_waits_for_reductions(const Plan& plan);

// Whether the distributed optimizer's all-gather of the updated params runs under the next
// iteration's forward: Megatron-core's --overlap-param-gather, which Starfish's exports pass with
// --overlap-grad-reduce under ZeRO-1 (plan.overlap_grad_reduce). The optimizer's step dispatches
// the first bucket's all-gather, and each bucket's forward pre-hook waits for its own and
// dispatches the next (core/distributed: finish_param_sync), in the reduction's buckets
// (dp_bucket_params) in forward order.
bool param_gather_overlaps_forward(const Plan& plan, int dp);

// The attention kernel a plan runs: its own choice, else its framework's default.
Attention attention_kernel(const Plan& plan);

// Bytes per parameter of the gradient state backward writes and DP reduces: the 16-bit .grad
// (training dtype), an fp32 buffer instead (Megatron bf16), or both (DeepSpeed BF16_Optimizer).
// The reduction's precision is the plan's grad_reduce_dtype, else its framework's.
struct GradBuffers {
  double low_precision_bytes = 0;  // per parameter; 0 when the fp32 buffer replaces it
  double fp32_bytes = 0;           // per parameter
  double reduce_bytes = 2;         // bytes per parameter the DP reduction moves
  double total() const { return low_precision_bytes + fp32_bytes; }
};
GradBuffers grad_buffers(const Training& training, const Plan& plan);

// The TP traffic a layer's backward adds under sequence parallelism by all-gathering its
// column-parallel GEMMs' saved input shards again (FrameworkTraits::
// sequence_parallel_regathers_inputs), in all-reduces of the layer's hidden states (a pass's
// two TP collectives are two; an all-gather moves half an all-reduce's ring traffic): a dense
// layer re-gathers QKV's and MLP-in's inputs, 1; an MoE layer only QKV's, 0.5 (its token
// dispatcher's TP all-gather keeps what it gathered). 0 without SP or where the framework keeps
// the gathered input.
double sequence_parallel_regather_all_reduces(const Plan& plan, bool moe_layer);
// All of a layer's backward TP traffic, in those all-reduces: the pass's own two, what its
// recomputation reruns (Plan::recomputed_tp_halves) and SP's re-gathered inputs. The simulator
// issues the recomputation's share before the backward and the rest after it.
double backward_tp_all_reduces(const Plan& plan, bool moe_layer);

// How one micro-batch's boundary tensor of `boundary_bytes` (its full hidden states) crosses to
// the next stage: the bytes each TP rank sends to its peer, and whether the receiving TP group
// then all-gathers the full tensor. With sequence parallelism the tensor is already split over
// the sequence (Korthikanti 2022 sec. 4.2.2): each rank sends its own shard and nothing is
// gathered, in every framework.
struct PipelineSend {
  double bytes_per_rank = 0;
  bool receiver_all_gathers = false;
};
PipelineSend pipeline_send(const Plan& plan, double boundary_bytes);

// The softmax cross-entropy over the vocabulary as the framework's kernels run it, per logit
// (one token's score for one vocabulary entry on this TP rank): the HBM bytes its kernels move,
// forward and backward, and the most bytes per logit alive at once (the 16-bit logits out of
// the GEMM included).
//  - Megatron's vocab_parallel_cross_entropy (megatron/core/tensor_parallel/cross_entropy.py;
//    megatron/mpu/cross_entropy.py in 2021-22): logits.float() (read 2, write 4), max (read 4),
//    subtract in place (r4 w4), exp in place (r4 w4), sum (r4), divide in place into the saved
//    softmax (r4 w4) = 38; backward scales the saved softmax in place (r4 w4) and casts back
//    (r4 w2) = 14. Alive at most: the 16-bit logits and their fp32 copy, 6.
//  - PyTorch's cross_entropy on fp32 logits (autocast runs log_softmax / nll_loss in fp32;
//    exec/gpt_model.cpp casts explicitly): the cast (r2 w4), log_softmax (r4 w4) = 14; backward:
//    nll_loss's dense gradient (w4), log_softmax's backward (r4 r4 w4), the cast back (r4 w2)
//    = 22. Alive at most: the saved log-probabilities, their gradient and log_softmax's input
//    gradient, 12.
//  - One fused kernel (flash-attn's CrossEntropyLoss as llm-foundry installed it through 2023:
//    flash-attn 1.0.x / 2.3.x with csrc/xentropy, apex's kernel; llm-foundry setup.py pins
//    xentropy-cuda-lib): forward reads the 16-bit logits twice (max with sum, then the sum of
//    exponentials: cunn_SoftMaxXEntropyForward) and keeps one log-sum-exp per token; backward
//    reads them again and writes their 16-bit gradient (not in place: CrossEntropyLoss's
//    inplace_backward defaults off): 8. (flash-attn's later Triton kernel, ops/triton/
//    cross_entropy.py, reads once forward: 6; not told apart.) Alive at most: logits and
//    gradient, 4.
//  - TransformerEngine's parallel cross-entropy (transformer_engine/pytorch/triton/
//    cross_entropy.py): an online-softmax pass reads the 16-bit logits (2), a second reads them
//    and writes the gradient into them in place (2 + 2); backward scales that gradient by the
//    loss's output gradient in place (2 + 2) = 10. Alive at most: the logits, 2.
// One micro-batch of `b` sequences' logits on one rank: its tokens (seq_len / cp of each
// sequence) x its share of the vocabulary. What the per-logit figures below multiply.
double rank_logits(const Model& model, int64_t b, int tp, int cp);

struct LossKernel {
  double traffic_bytes_per_logit = 0;
  double peak_bytes_per_logit = 0;
};
LossKernel loss_kernel(const Plan& plan);
// The loss a plan runs: its own choice, else its framework's (Starfish's for chunked plans).
Loss loss_kernel_of(const Plan& plan);

// The training metrics' cross-entropy passes (Plan::train_metric_passes) over one micro-batch's
// logits after its backward, per logit of this rank, as Composer runs each: torch's
// CrossEntropyLoss(reduction='sum') on the held logits under autocast, no gradient
// (composer/metrics/nlp.py, LanguageCrossEntropy.update). cross_entropy calls
// log_softmax(logits, dim, logits.dtype): autocast's fp32_set_opt_dtype policy keeps a dtype the
// caller gives, so the log-probabilities come out in the logits' dtype B (read B, write B); its
// nll_loss is on autocast's fp32 list (aten/src/ATen/autocast_mode.cpp), which copies them to
// fp32 first (read B, write 4) to gather one per token. In fp32 training nothing is cast. Alive at
// most, the logits held for the pass (the trainer keeps the micro-batch's outputs), the
// log-probabilities and their fp32 copy: 2B + 4 (bf16: 10 bytes moved a pass, 8 alive). The
// layers' activations are freed by then: the passes' bytes are a moment of their own.
struct TrainMetricKernel {
  double traffic_bytes_per_logit = 0;  // all passes together
  double peak_bytes_per_logit = 0;
};
// `logit_bytes`: the logits' element size, the training dtype's.
TrainMetricKernel train_metric_kernel(int64_t logit_bytes, const Plan& plan);

// HBM bytes per parameter of this GPU's optimizer shard that one optimizer step on the GPU
// moves, kernel by kernel as Megatron's mixed-precision optimizer runs them (megatron/optimizer/
// optimizer.py, MixedPrecisionOptimizer.step; DeepSpeed's and FSDP's steps run the same kernels):
//  - fp16 only: copy the 16-bit grads into fp32 (read 2, write 4), then unscale them and check
//    for inf/NaN (_amp_foreach_non_finite_check_and_unscale_: read 4, write 4);
//  - the global gradient norm for clipping (multi_tensor_l2norm: read the fp32 grads) when
//    training.grad_clip > 0;
//  - Adam (multi-tensor fused): read master params, grads, moments; write params and moments:
//    2 x the optimizer state bytes + the grads;
//  - copy the updated fp32 master params into the 16-bit model params (read 4, write 2).
// bf16 with fp32 main grads needs no copy and no unscale (no loss scaling).
// Starfish's executor (framework: starfish, and every chunked plan) runs the step as LibTorch's
// unfused eager ops instead, a pass over the shard each: its own count (framework.cpp).
double optimizer_step_bytes_per_param(const Training& training, const Plan& plan);

// Host memory of DeepSpeed's ZeRO-Offload (ZeRO-1/2 with offload_optimizer on the CPU, a static
// plan), per GPU holding `partition_params` parameters of the flat partition it steps, as
// deepspeed/runtime/zero/stage_1_and_2.py allocates it (deepspeedai/DeepSpeed edaa7221):
//  - the fp32 master partition, pinned (lines 492-497), and a 16-bit copy of it the updated
//    params go back to the GPU from, pinned (param_buffer_of_bit16_for_cpu_offload_groups,
//    lines 498-507): optimizer;
//  - the fp32 gradient partition the reduced gradients are copied into, pinned
//    (initialize_optimizer_states, lines 840-844): grads, 4 bytes, not the GPU's 2;
//  - with gradient accumulation (more than one micro-batch), each partition parameter's 16-bit
//    gradient accumulated on the host, pinned, one buffer per parameter
//    (async_accumulate_grad_in_cpu_via_gpu, lines 1524-1528): grads;
//  - CPU Adam's momentum and variance, fp32, unpinned (deepspeed/ops/adam/cpu_adam.py, lines
//    151-154): optimizer.
// Every pinned buffer comes from PyTorch's caching host allocator, which rounds each allocation
// up to the next power of two (aten/src/ATen/core/CachingHostAllocator.h, allocate():
// `roundSize = c10::llvm::PowerOf2Ceil(size)`); pin_memory is DeepSpeed's default
// (deepspeed/runtime/zero/offload_config.py) and Starfish's export. The partition is taken as
// one flat buffer (DeepSpeed flattens each parameter group; the no-weight-decay group of norms
// and biases is small); the accumulation buffers, one per parameter, are taken at their bound,
// twice their size (memory is never under-predicted).
struct HostOffloadBytes {
  double grads = 0;
  double optimizer = 0;
};
// Whether a plan runs as ZeRO-Offload (DeepSpeed, ZeRO-1/2, optimizer on the CPU, no chunks).
bool is_zero_offload(const Plan& plan);
HostOffloadBytes zero_offload_host_bytes(const Training& training, double partition_params, int64_t micro_batches);
// PyTorch's pinned host allocation of `bytes`: the next power of two.
double pinned_host_bytes(double bytes);

// PCIe bytes per parameter of the partition a CPU optimizer steps, per iteration: the gradients
// out to the host and the updated params back. DeepSpeed's ZeRO-Offload (deepspeed/runtime/zero/
// stage_1_and_2.py, deepspeedai/DeepSpeed edaa7221), per parameter of the rank's partition
// (copy_grads_in_partition), in the training dtype's `low` bytes:
//  - at the accumulation boundary the reduced gradient is cast to the fp32 master dtype on the
//    GPU and copied into the pinned fp32 gradient partition (async_inplace_copy_grad_to_fp32_
//    buffer_from_gpu): 4 to the host; after CPU Adam the 16-bit params come back from their
//    pinned copy: `low` to the GPU;
//  - with gradient accumulation the running sum lives on the host (async_accumulate_grad_in_
//    cpu_via_gpu), from every backward on which micro_step_id > 0 or more follow: copied to the
//    host after each of them (`low`), and back to the GPU to be added to from the second on.
//    ZeRO-2 reduces and so copies after every backward (engine.py allreduce_gradients:
//    "ZeRO stage >= 2 communicates during non gradient accumulation boundaries as well"):
//    m copies out, m - 1 in; ZeRO-1 only at the boundary, where micro_step_id = m - 1 > 0 still
//    takes that path once: a zero buffer in and the gradient out, `low` each.
// Megatron's --optimizer-cpu-offload (HybridDeviceOptimizer, megatron/core/optimizer/
// cpu_offloading/hybrid_optimizer.py, core_r0.15.0), built with param_update_in_fp32 and the
// precision-aware optimizer its arguments require: the CPU copy of each offloaded param is fp32
// and its gradient buffer takes the param's dtype, filled from the fp32 main grad
// (decoupled_grad): 4 to the host; after the CPU step the fp32 param is copied into the 16-bit
// model param non-blocking, which PyTorch's copy_ converts on the GPU after moving the source
// dtype across (aten/src/ATen/native/cuda/Copy.cu, copy_kernel_cuda): 4 to the GPU.
// FSDP's CPUOffload keeps the sharded params and their optimizer on the host and steps there:
// after each reduction the gradient shard, cast to the params' fp32, is copied out
// (_offload_grad, flat_param._cpu_grad), 4 to the host per micro-batch, and nothing moves at
// the step (the params come in where they are used: offloaded_param_fetch_bytes).
// DeepSpeed ZeRO-3's offload_optimizer is costed as one copy in the training dtype each way at
// the step; with its params offloaded too, none comes back (they are fetched where used).
struct OptimizerOffloadCopies {
  double accumulate_to_host = 0;  // after each micro-batch's backward
  double accumulate_to_gpu = 0;   // before adding to it, from the second micro-batch on
  double step_to_host = 0;        // at the boundary, for the CPU step
  double step_to_gpu = 0;         // the updated params back
  double iteration_bytes_per_param(int64_t micro_batches) const {
    const double m = static_cast<double>(micro_batches);
    return accumulate_to_host * m + accumulate_to_gpu * (m - 1) + step_to_host + step_to_gpu;
  }
};
// Zero when the optimizer steps on the GPU (a chunked plan: per parameter stepped on the host).
OptimizerOffloadCopies optimizer_offload_copies(const Training& training, const Plan& plan, int64_t micro_batches);

// GPU bytes of buffers the framework holds beside the model states and activations.
double framework_buffer_bytes(const Training& training, const Plan& plan);

// PCIe bytes per parameter an offloaded param's shard takes to come in where it is used:
// DeepSpeed's offload_param holds the 16-bit partitions on the host (the training dtype);
// FSDP's CPUOffload the fp32 shard, which it copies in and then casts on the GPU
// (flat_param.py _use_low_precision_shard: _local_shard.to(device), then copy_ into the
// low-precision shard): 4.
double offloaded_param_fetch_bytes(const Training& training, const Plan& plan);

// HBM bytes per parameter that assemble a layer's params after its ZeRO-3 all-gather, on the
// gather's stream. DeepSpeed's coalesced all-gather leaves each rank's partitions of every param
// of the bucket side by side, and AllGatherCoalescedHandle.wait (runtime/zero/
// partition_parameters.py, edaa7221) builds each param with torch.cat of its partitions, on the
// all-gather stream (partitioned_param_coordinator.py fetch_sub_module): a read and a write of
// every gathered element. FSDP's flat parameter and Megatron FSDP's buffers are gathered in
// place: 0.
double zero3_gather_assembly_bytes_per_param(const Training& training, const Plan& plan);

// The NCCL communicators one GPU of `stage` holds while it trains. PyTorch's ProcessGroupNCCL
// creates one communicator per process group a rank runs a collective in, and one 2-rank
// communicator per peer it sends to or receives from (torch/csrc/distributed/c10d/
// ProcessGroupNCCL.cpp: getNCCLComm, keyed by the device for collectives and by the rank pair
// for send/recv). Which groups a framework creates and uses is framework.cpp's to say; each
// holds NCCL's buffers for all its channels (`nccl_communicator` in the hwprofile).
struct Communicators {
  int groups = 0;  // communicators of 3 or more ranks
  int pairs = 0;   // 2-rank communicators: point-to-point peers and 2-rank groups
};
// `tied_embeddings`: the model shares its word embedding with the output layer, so the first and
// last stage all-reduce its gradient (untied, the embedding group is never used and PyTorch never
// makes its communicator).
Communicators nccl_communicators(const Plan& plan, int stage, bool tied_embeddings = true);
// GPU bytes those communicators' buffers take (NCCL allocates them itself, outside PyTorch's
// caching allocator: no fragmentation applies).
double communicator_buffer_bytes(const Plan& plan, const GpuSpec& gpu, int stage, bool tied_embeddings);

// A tied word embedding's gradient all-reduce, between the first and the last pipeline stage
// (which both hold the embedding: the last stage's copy is the output layer), before the
// optimizer step: Megatron-LM's allreduce_embedding_grads (megatron/optimizer/optimizer.py,
// reduce_model_grads: after the data-parallel reduction, over mpu's embedding group) and
// DeepSpeed's pipeline engine's ReduceTiedGrads (runtime/pipe/engine.py,
// _exec_reduce_tied_grads: all_reduce over each tied module's group), in every framework that
// pipelines a tied model. Each TP rank reduces its vocabulary shard of the gradient, in the
// dtype the DP reduction moves (grad_buffers). 0 bytes when untied or unpipelined: one stage
// then holds both uses and autograd sums them.
double tied_embedding_grad_bytes(const Model& model, const Training& training, const Plan& plan);
// The time of that all-reduce: a 2-rank ring between stage 0 and stage pp-1 of one TP rank,
// (pp-1)*tp*dp ranks apart (Job::global_rank's order), so across nodes unless the whole
// pipeline fits in one; every TP rank reduces its shard at the same time over the node's NICs.
double tied_embedding_reduce_time_s(const Cluster& cluster, const Model& model, const Training& training,
                                    const Plan& plan);

// What the caching allocator reserves at a moment when tensors take `allocated_bytes`.
double allocator_reserved_bytes(const Plan& plan, double allocated_bytes);

}  // namespace starfish

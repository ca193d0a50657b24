#include "sim/cost/framework.h"

#include <algorithm>
#include <cmath>

#include "sim/cost/collectives.h"
#include "sim/cost/memory.h"
#include "sim/cost/params.h"
#include "sim/spec/dtype.h"

namespace starfish {

const FrameworkTraits& framework_traits(Framework f) {
  static const FrameworkTraits megatron_lm = [] {
    FrameworkTraits t;
    // Megatron-LM 2021-22 (Narayanan 2021, Korthikanti 2022): FusedScaleMaskSoftmax then a
    // separate dropout, the s x s scores stored for backward.
    t.attention = Attention::unfused;
    t.fp32_grads_replace_low_precision = true;
    return t;
  }();
  static const FrameworkTraits megatron_core = [] {
    FrameworkTraits t;
    // Megatron-core runs attention through TransformerEngine's fused (flash) kernels by default
    // (--attention-backend auto picks flash / cuDNN fused attention).
    t.attention = Attention::flash;
    t.fp32_grads_replace_low_precision = true;
    // Megatron-core's interleaved schedule posts its sends and receives and waits only where
    // the data is needed (overlap_p2p_comm; pipeline_sends_block says when).
    t.blocking_p2p = false;
    t.pipeline_scatter_gather = false;
    // TransformerEngine's Linear / LayerNormLinear add the bias in the GEMM's epilogue and find
    // its gradient in the weight-gradient GEMM's (cuBLASLt's BIAS and BGRADB epilogues).
    t.linear_bias = LinearBias::in_gemm;
    t.norm_backward_rereads = false;
    t.moe_probs_in_expert_activation = true;
    return t;
  }();
  static const FrameworkTraits deepspeed = [] {
    FrameworkTraits t;
    t.attention = Attention::unfused;  // Megatron-DeepSpeed's GPT (BLOOM, MT-NLG): Megatron's kernels
    // ZeRO-1/2 (stage_1_and_2.py) keep 16-bit .grad and convert only their partition to fp32 at
    // the step.
    t.zero_reduce_bucket_elements = 5e8;
    return t;
  }();
  static const FrameworkTraits fsdp = [] {
    FrameworkTraits t;
    t.loss = Loss::pytorch;
    t.reduce_grads_in_fp32 = true;
    // MosaicML llm-foundry (attn_impl: flash / triton) and torchtitan (SDPA flash backend).
    t.attention = Attention::flash;
    t.pipeline_scatter_gather = false;  // torchtitan's pipelining sends whole tensors
    t.linear_bias = LinearBias::summed;
    // torchtitan's op-level selective checkpointing keeps the flash attention op's outputs
    // (_save_list in its activation checkpointing: aten._scaled_dot_product_flash_attention).
    t.selective_recomputes_fused_attention = false;
    t.sequence_parallel_regathers_inputs = false;
    return t;
  }();
  static const FrameworkTraits starfish = [] {
    FrameworkTraits t;
    // exec/gpt_model.cpp computes attention with separate matmul / softmax / dropout ops.
    t.attention = Attention::unfused;
    t.allocator_fragmentation = 0;
    t.loss = Loss::pytorch;
    t.attention_head_copies = true;
    t.linear_bias = LinearBias::copied;
    return t;
  }();
  switch (f) {
    case Framework::megatron_lm: return megatron_lm;
    case Framework::megatron_core: return megatron_core;
    case Framework::deepspeed: return deepspeed;
    case Framework::fsdp: return fsdp;
    case Framework::starfish: return starfish;
  }
  return megatron_lm;
}

Attention attention_kernel(const Plan& plan) {
  return plan.attention == Attention::framework_default ? framework_traits(plan.framework).attention : plan.attention;
}

GradBuffers grad_buffers(const Training& training, const Plan& plan) {
  const FrameworkTraits& f = framework_traits(plan.framework);
  const double low = static_cast<double>(bytes_of(training.dtype));
  GradBuffers g;
  g.low_precision_bytes = low;
  g.reduce_bytes = low;
  // The chunk runtime reduces each gradient chunk in the chunk's dtype (job.cpp refuses fp32).
  if (plan.chunked()) return g;
  // The framework's own precision: Megatron's fp32 main_grad under bf16 (--accumulate-allreduce-
  // grads-in-fp32, forced for bf16), FSDP's reduce_dtype; the plan's grad_reduce_dtype overrides it.
  const bool framework_fp32 =
      f.fp32_grads_replace_low_precision ? training.dtype == DType::bf16 : f.reduce_grads_in_fp32;
  const bool fp32 = plan.grad_reduce == GradReduce::fp32 || (plan.grad_reduce == GradReduce::framework_default && framework_fp32);
  if (!fp32) return g;
  g.reduce_bytes = 4;
  // Megatron reduces its fp32 main_grad buffer as it is, in place of the 16-bit .grad
  // (--grad-reduce-in-bf16 keeps the buffer in bf16: Megatron-core's
  // DistributedDataParallelConfig.grad_reduce_in_fp32). Others cast the 16-bit gradients up for
  // the collective only (FSDP's reduce_dtype, DeepSpeed's communication_data_type): their buffers
  // keep their precision.
  const bool sixteen_bit = training.dtype == DType::bf16 || training.dtype == DType::fp16;
  if (f.fp32_grads_replace_low_precision && sixteen_bit) {
    g.low_precision_bytes = 0;
    g.fp32_bytes = 4;
  }
  return g;
}

double sequence_parallel_regather_all_reduces(const Plan& plan, bool moe_layer) {
  if (!plan.sequence_parallel || plan.tp <= 1) return 0;
  if (!framework_traits(running_framework(plan)).sequence_parallel_regathers_inputs) return 0;
  return moe_layer ? 0.5 : 1.0;
}

double backward_tp_all_reduces(const Plan& plan, bool moe_layer) {
  return 2 + plan.recomputed_tp_halves(moe_layer) + sequence_parallel_regather_all_reduces(plan, moe_layer);
}

PipelineSend pipeline_send(const Plan& plan, double boundary_bytes) {
  if (plan.tp <= 1) return {boundary_bytes, false};
  if (plan.sequence_parallel) return {boundary_bytes / plan.tp, false};
  if (framework_traits(plan.framework).pipeline_scatter_gather) return {boundary_bytes / plan.tp, true};
  return {boundary_bytes, false};
}

double tied_embedding_grad_bytes(const Model& model, const Training& training, const Plan& plan) {
  if (!model.tied_embeddings || plan.pp <= 1) return 0;
  const double shard = static_cast<double>(word_embedding_params(model)) / plan.tp;
  return shard * grad_buffers(training, plan).reduce_bytes;
}

double tied_embedding_reduce_time_s(const Cluster& cluster, const Model& model, const Training& training,
                                    const Plan& plan) {
  const double bytes = tied_embedding_grad_bytes(model, training, plan);
  if (bytes <= 0) return 0;
  // TP rank t of stage 0 and of stage pp-1 are (pp-1)*tp*dp ranks apart: one node holds every
  // pair when the last one (t = tp-1) is still on it. Across nodes each GPU gets its share of
  // the node's NICs: its TP peers reduce at once.
  const bool one_node = (plan.pp - 1) * plan.tp * plan.dp + plan.tp <= cluster.local_gpus();
  const LinkParams link = link_for_group(cluster, 2, one_node ? 1 : cluster.local_gpus());
  return collective_time_s(CollectiveKind::all_reduce, CollectiveAlgorithm::ring, 2, bytes, link);
}

Framework running_framework(const Plan& plan) { return plan.chunked() ? Framework::starfish : plan.framework; }

namespace {
// Megatron-core's DistributedDataParallel bucket: max(40M, 1M x DP) parameters
// (core/distributed/distributed_data_parallel.py).
double megatron_ddp_bucket_params(int dp) { return std::max(40e6, 1e6 * dp); }
}  // namespace

double dp_bucket_params(const Plan& plan, int stage, int virtual_stage, int dp) {
  if (running_framework(plan) != Framework::megatron_core || !plan.overlap_grad_reduce || plan.zero_stage > 1) return 0;
  if (stage != 0 || virtual_stage != 0) return 0;
  return megatron_ddp_bucket_params(dp);
}

DpBucketLayout bucket_layout(double bucket_params, int layers, double layer_params) {
  DpBucketLayout b;
  b.per_bucket = b.remainder = std::max(1, layers);
  if (bucket_params <= 0 || layer_params <= 0 || layers <= 1) return b;
  // Clamped before the cast: a tiny layer against a 40M bucket is never more layers than there are.
  b.per_bucket = static_cast<int>(std::clamp(std::ceil(bucket_params / layer_params), 1.0, static_cast<double>(layers)));
  b.buckets = (layers + b.per_bucket - 1) / b.per_bucket;
  b.remainder = layers - (b.buckets - 1) * b.per_bucket;
  return b;
}

DpBucketLayout dp_bucket_layout(const Plan& plan, int stage, int virtual_stage, int dp, int layers, double layer_params) {
  return bucket_layout(dp_bucket_params(plan, stage, virtual_stage, dp), layers, layer_params);
}

double zero2_bucket_params(const Plan& plan, int dp) {
  if (plan.zero_stage != 2 || !plan.overlap_grad_reduce || dp <= 1 || plan.chunked()) return 0;
  switch (running_framework(plan)) {
    case Framework::deepspeed: return framework_traits(Framework::deepspeed).zero_reduce_bucket_elements;
    case Framework::fsdp: return 1;  // a unit per layer: any size up to a layer's cuts one layer a bucket
    default: return megatron_ddp_bucket_params(dp);  // Megatron's (neither has a ZeRO-2 of its own)
  }
}

double zero3_bucket_params(const Plan& plan, int dp) {
  if (plan.zero_stage != 3 || dp <= 1 || plan.chunked() || running_framework(plan) != Framework::deepspeed) return 0;
  return framework_traits(Framework::deepspeed).zero_reduce_bucket_elements;
}

bool grads_accumulate_unsharded(const Plan& plan, int64_t micro_batches) {
  return running_framework(plan) == Framework::fsdp && plan.zero_stage >= 2 && plan.pp > 1 && micro_batches > 1 &&
         plan.dp_cp() > 1 && !plan.chunked();
}

bool reduces_every_micro_batch(const Plan& plan, int dp, int64_t micro_batches) {
  return plan.zero_stage >= 2 && dp > 1 && !grads_accumulate_unsharded(plan, micro_batches);
}

bool zero3_backward_waits_for_reductions(const Plan& plan) {
  return running_framework(plan) != Framework::megatron_core;
}

bool param_gather_overlaps_forward(const Plan& plan, int dp) {
  return running_framework(plan) == Framework::megatron_core && plan.overlap_grad_reduce && plan.zero_stage == 1 && dp > 1;
}

bool pipeline_sends_block(const Plan& plan) {
  return framework_traits(plan.framework).blocking_p2p || plan.schedule != Schedule::interleaved || plan.virtual_stages <= 1;
}

Loss loss_kernel_of(const Plan& plan) {
  return plan.loss == Loss::framework_default ? framework_traits(running_framework(plan)).loss : plan.loss;
}

double rank_logits(const Model& m, int64_t b, int tp, int cp) {
  return static_cast<double>(m.seq_len) / cp * static_cast<double>(b) * m.vocab / tp;
}

LossKernel loss_kernel(const Plan& plan) {
  switch (loss_kernel_of(plan)) {
    case Loss::vocab_parallel: return {38.0 + 14.0, 6.0};
    case Loss::pytorch: return {14.0 + 22.0, 12.0};
    case Loss::fused: return {4.0 + 4.0, 4.0};
    case Loss::te: return {2.0 + 2.0 + 2.0 + 2.0 + 2.0, 2.0};
    case Loss::framework_default: break;
  }
  return {38.0 + 14.0, 6.0};
}

TrainMetricKernel train_metric_kernel(int64_t logit_bytes, const Plan& plan) {
  if (plan.train_metric_passes <= 0) return {};
  const double b = static_cast<double>(logit_bytes);
  const bool cast = b < 4;  // autocast's fp32 copy of the log-probabilities for nll_loss
  return {plan.train_metric_passes * (2 * b + (cast ? b + 4 : 0)), 2 * b + (cast ? 4 : 0)};
}

namespace {

// Starfish's executor steps with LibTorch's eager ops, one pass over the shard each (the
// trainer's global norm and clip factor, exec/trainer.cpp; exec/optimizer.cpp's update, which
// follows torch::optim::Adam / AdamW / SGD op for op), bytes read + written per parameter with
// `low` the model dtype's size (gradients are in it):
//  - the global norm, every step (the loss scaler and the report need it): grad.to(fp32) when
//    16-bit (r low, w 4), then norm (r 4);
//  - the clip and loss-scale factor, grad.mul_ (r low, w low), with clipping or fp16 scaling;
//  - grad.to(fp32) for the update when 16-bit (r low, w 4);
//  - Adam: exp_avg.mul_ (r4 w4) .add_(grad) (r4 r4 w4); exp_avg_sq.mul_ (r4 w4)
//    .addcmul_(grad, grad) (r4 r4 w4, the second read of grad from cache); sqrt() (r4 w4),
//    / sqrt(bias_correction2) (r4 w4), .add_(eps) (r4 w4); param.addcdiv_ (r4 r4 r4 w4): 80;
//    AdamW's decoupled decay param.mul_ (r4 w4), Adam's coupled grad.add(param) (r4 r4 w4);
//  - SGD: grad.add(param) with decay (r4 r4 w4), param.add_(grad) (r4 r4 w4);
//  - mixed precision: the updated master copied into the model's params (r4 w low).
double executor_optimizer_step_bytes_per_param(const Training& training) {
  const double low = static_cast<double>(bytes_of(training.dtype));
  const bool mixed = training.mixed_precision();
  const double to_fp32 = mixed ? low + 4 : 0;
  double bytes = to_fp32 + 4;  // global norm
  if (training.grad_clip > 0 || training.dtype == DType::fp16) bytes += 2 * low;
  bytes += to_fp32;
  const bool decay = training.weight_decay != 0;
  switch (training.optimizer) {
    case Optimizer::adam: bytes += 80 + (decay ? 12 : 0); break;
    case Optimizer::adamw: bytes += 80 + (decay ? 8 : 0); break;
    case Optimizer::sgd: bytes += 12 + (decay ? 12 : 0); break;
  }
  if (mixed) bytes += 4 + low;
  return bytes;
}

}  // namespace

double optimizer_step_bytes_per_param(const Training& training, const Plan& plan) {
  if (running_framework(plan) == Framework::starfish) return executor_optimizer_step_bytes_per_param(training);
  const StateBytes sb = state_bytes_per_param(training, plan.chunked());
  const double low = static_cast<double>(bytes_of(training.dtype));
  const bool mixed = training.mixed_precision();
  const double grad = mixed ? 4 : low;  // the optimizer reads fp32 gradients
  double bytes = 2 * sb.optimizer + grad;
  if (mixed) bytes += 4 + low;                                    // master -> model params
  if (training.dtype == DType::fp16) bytes += (2 + 4) + (4 + 4);  // to fp32, unscale + inf check
  if (training.grad_clip > 0) bytes += grad;                      // global norm
  return bytes;
}

bool is_zero_offload(const Plan& plan) {
  return plan.framework == Framework::deepspeed && !plan.chunked() && (plan.zero_stage == 1 || plan.zero_stage == 2) &&
         plan.offload.optimizer == Tier::cpu;
}

OptimizerOffloadCopies optimizer_offload_copies(const Training& training, const Plan& plan, int64_t micro_batches) {
  OptimizerOffloadCopies c;
  // A chunked plan's optimizer chunks go where they fit whatever its tiers say: the caller
  // scales these by the share placed off the GPU.
  if (plan.offload.optimizer == Tier::gpu && !plan.chunked()) return c;
  const double low = static_cast<double>(bytes_of(training.dtype));
  if (!is_zero_offload(plan)) {
    const Framework f = running_framework(plan);
    if (f == Framework::fsdp) {
      c.accumulate_to_host = 4;  // the fp32-cast gradient shard after every reduction
      return c;
    }
    const bool hybrid_device_optimizer = f == Framework::megatron_core || f == Framework::megatron_lm;
    c.step_to_host = hybrid_device_optimizer ? 4 : low;
    // Offloaded params come in where they are used, not after the step.
    c.step_to_gpu = plan.offload.params != Tier::gpu ? 0 : hybrid_device_optimizer ? 4 : low;
    return c;
  }
  c.step_to_host = 4;  // the fp32 gradient partition
  c.step_to_gpu = low;
  if (micro_batches <= 1) return c;
  if (plan.zero_stage == 2) {
    c.accumulate_to_host = low;
    c.accumulate_to_gpu = low;
  } else {
    c.step_to_host += low;
    c.step_to_gpu += low;
  }
  return c;
}

double pinned_host_bytes(double bytes) { return bytes <= 1 ? bytes : std::exp2(std::ceil(std::log2(bytes))); }

HostOffloadBytes zero_offload_host_bytes(const Training& training, double k, int64_t micro_batches) {
  const double low = static_cast<double>(bytes_of(training.dtype));
  const bool mixed = training.mixed_precision();
  HostOffloadBytes h;
  const double master = pinned_host_bytes(4 * k) + (mixed ? pinned_host_bytes(low * k) : 0);
  const double moments = training.optimizer == Optimizer::sgd ? 4 * k : 8 * k;
  h.optimizer = master + moments;
  h.grads = pinned_host_bytes(4 * k);
  if (micro_batches > 1) h.grads += 2 * low * k;  // per-parameter pinned buffers, at their bound
  return h;
}

double framework_buffer_bytes(const Training& training, const Plan& plan) {
  const FrameworkTraits& f = framework_traits(plan.framework);
  // ZeRO-3 holds one too: stage3.py allocates each communication dtype's ipg bucket buffer of
  // reduce_bucket_size elements on the GPU under contiguous_gradients (its default,
  // zero/config.py), whatever the model's size (deepspeedai/DeepSpeed edaa7221).
  if (plan.zero_stage < 1 || plan.chunked()) return 0;
  return f.zero_reduce_bucket_elements * static_cast<double>(bytes_of(training.dtype));
}

double offloaded_param_fetch_bytes(const Training& training, const Plan& plan) {
  return running_framework(plan) == Framework::fsdp ? 4.0 : static_cast<double>(bytes_of(training.dtype));
}

double zero3_gather_assembly_bytes_per_param(const Training& training, const Plan& plan) {
  if (plan.zero_stage < 3 || running_framework(plan) != Framework::deepspeed) return 0;
  return 2.0 * static_cast<double>(bytes_of(training.dtype));
}

namespace {
// A process group of `ranks` ranks, counted as the communicator it creates (none for one rank).
void add_group(Communicators& c, int64_t ranks) {
  if (ranks == 2) ++c.pairs;
  if (ranks > 2) ++c.groups;
}
}  // namespace

Communicators nccl_communicators(const Plan& p, int stage, bool tied_embeddings) {
  Communicators c;
  const int64_t world = int64_t{p.tp} * p.pp * p.dp_cp();
  const Framework f = running_framework(p);
  const bool edge = stage == 0 || stage == p.pp - 1;  // the first or the last pipeline stage
  add_group(c, p.tp);  // the layers' tensor-parallel collectives
  add_group(c, p.dp_cp());  // the gradient reduction (ZeRO's reduce-scatter and all-gather), over DP x CP
  if (p.cp > 1) {
    // TransformerEngine's ring attention sends keys and values to the next CP rank and receives
    // from the previous one with isend/irecv (context_parallel.py, flash_attn_p2p_communicate):
    // PyTorch's NCCL backend makes a 2-rank communicator per peer, one when both are the same rank.
    c.pairs += p.cp == 2 ? 1 : 2;
  }
  if (p.pp > 1) {
    // One 2-rank communicator per pipeline peer: the previous and the next stage; the first and
    // the last stage have one, unless the interleaved schedule wraps the last stage's model
    // chunk back to the first.
    const bool wraps = p.schedule == Schedule::interleaved && p.virtual_stages > 1 && p.pp > 2;
    c.pairs += edge && !wraps ? 1 : 2;
  }
  if (p.ep > 1) {
    // Megatron-core's expert groups: the EP all-to-all, and the expert-data-parallel reduction
    // over the ranks that hold the same experts (parallel_state.py).
    add_group(c, p.ep);
    add_group(c, int64_t{p.tp} * p.dp_cp() / (int64_t{p.ep} * p.expert_tp()));
  }
  if (f == Framework::fsdp || f == Framework::starfish) return c;
  // Megatron-LM, Megatron-core and Megatron-DeepSpeed (mpu/initialize.py, parallel_state.py):
  // the model-parallel group (TP x PP) the gradient norm and the inf check are reduced over
  // (optimizer/clip_grads.py); the embedding group of the first and last stage, which
  // all-reduces the tied word embeddings' gradients; and the default group of all ranks, used
  // once at start-up (training.py: the start time all-reduced with MIN) and kept.
  add_group(c, int64_t{p.tp} * p.pp);
  if (tied_embeddings && p.pp > 1 && edge) ++c.pairs;
  add_group(c, world);
  // DeepSpeed's PipelineEngine broadcasts the loss over its pipe group (engine.py
  // _aggregate_total_loss). (Its grid's data and slice groups take the places of Megatron's
  // data and model-parallel groups, counted above.)
  if (f == Framework::deepspeed) add_group(c, p.pp);
  return c;
}

double communicator_buffer_bytes(const Plan& p, const GpuSpec& gpu, int stage, bool tied_embeddings) {
  const Communicators c = nccl_communicators(p, stage, tied_embeddings);
  return c.pairs * static_cast<double>(gpu.nccl_communicator.pair) +
         c.groups * static_cast<double>(gpu.nccl_communicator.group);
}

double allocator_reserved_bytes(const Plan& plan, double allocated_bytes) {
  const double f = framework_traits(running_framework(plan)).allocator_fragmentation;
  return allocated_bytes / (1.0 - f);
}

}  // namespace starfish

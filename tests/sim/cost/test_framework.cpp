// Each framework mechanism of sim/cost/framework.h and the per-op layer model, against
// hand-computed cases (not against a published row).
#include <gtest/gtest.h>

#include <cmath>

#include "sim/cost/activations.h"
#include "sim/cost/estimate.h"
#include "sim/cost/framework.h"
#include "sim/cost/op_time.h"
#include "sim/spec/error.h"
#include "sim/spec/spec_io.h"
#include "support/error_of.h"
#include "test_support.h"

namespace starfish {
namespace {

Plan plan_of(Framework f) {
  Plan p;
  p.framework = f;
  return p;
}

Training bf16() {
  Training t;
  t.global_batch = 8;
  t.dtype = DType::bf16;
  return t;
}

TEST(Framework, ZeroOffloadHostBuffersArePinnedAndRoundedToPowersOfTwo) {
  Training t;
  t.dtype = DType::fp16;
  t.optimizer = Optimizer::adam;
  // 1e9 parameters in this GPU's partition: fp32 master 4 GB -> 4 GiB pinned, its fp16 copy
  // 2 GB -> 2 GiB, the fp32 gradients 4 GB -> 4 GiB, CPU Adam's moments 8 GB unpinned.
  const HostOffloadBytes one = zero_offload_host_bytes(t, 1e9, 1);
  EXPECT_DOUBLE_EQ(one.optimizer, 4294967296.0 + 2147483648.0 + 8e9);
  EXPECT_DOUBLE_EQ(one.grads, 4294967296.0);
  // Gradient accumulation adds the per-parameter fp16 buffers, at their bound (2 x 2 bytes).
  EXPECT_DOUBLE_EQ(zero_offload_host_bytes(t, 1e9, 4).grads, 4294967296.0 + 4e9);
  EXPECT_DOUBLE_EQ(pinned_host_bytes(4096), 4096);
  EXPECT_DOUBLE_EQ(pinned_host_bytes(4097), 8192);
  // model_states takes them for DeepSpeed ZeRO-2 with the optimizer on the CPU, and only then.
  Plan p;
  p.framework = Framework::deepspeed;
  p.zero_stage = 2;
  p.dp = 4;
  p.micro_batch = 1;
  p.offload.grads = p.offload.optimizer = Tier::cpu;
  t.global_batch = 4;
  const ModelStates s = model_states(t, p, 4, 4e9, 0, nullptr);
  EXPECT_DOUBLE_EQ(s.grads.cpu, one.grads);
  EXPECT_DOUBLE_EQ(s.optimizer.cpu, one.optimizer);
  EXPECT_DOUBLE_EQ(s.grads.gpu, 0);
  p.framework = Framework::megatron_lm;
  EXPECT_DOUBLE_EQ(model_states(t, p, 4, 4e9, 0, nullptr).optimizer.cpu, 4e9 * 12 / 4);  // ZeRO (Rajbhandari 2020)
}

TEST(Framework, AttentionKernelIsThePlansElseTheFrameworks) {
  EXPECT_EQ(attention_kernel(plan_of(Framework::megatron_lm)), Attention::unfused);
  EXPECT_EQ(attention_kernel(plan_of(Framework::megatron_core)), Attention::flash);
  EXPECT_EQ(attention_kernel(plan_of(Framework::fsdp)), Attention::flash);
  EXPECT_EQ(attention_kernel(plan_of(Framework::deepspeed)), Attention::unfused);
  Plan p = plan_of(Framework::megatron_core);
  p.attention = Attention::unfused;
  EXPECT_EQ(attention_kernel(p), Attention::unfused);
}

TEST(Framework, MegatronKeepsBf16GradientsInAnFp32MainGradBuffer) {
  const GradBuffers g = grad_buffers(bf16(), plan_of(Framework::megatron_lm));
  EXPECT_DOUBLE_EQ(g.low_precision_bytes, 0);  // main_grad replaces .grad
  EXPECT_DOUBLE_EQ(g.fp32_bytes, 4);
  EXPECT_DOUBLE_EQ(g.reduce_bytes, 4);  // and is all-reduced in fp32
  Training fp16 = bf16();
  fp16.dtype = DType::fp16;
  const GradBuffers h = grad_buffers(fp16, plan_of(Framework::megatron_lm));
  EXPECT_DOUBLE_EQ(h.total(), 2);
  EXPECT_DOUBLE_EQ(h.reduce_bytes, 2);
  // DeepSpeed's ZeRO-1/2, FSDP and the chunk runtime keep 16-bit gradients.
  for (Framework f : {Framework::deepspeed, Framework::fsdp, Framework::starfish})
    EXPECT_DOUBLE_EQ(grad_buffers(bf16(), plan_of(f)).total(), 2) << to_string(f);
  Plan chunked = plan_of(Framework::megatron_lm);
  chunked.chunk_elements = 1 << 20;
  EXPECT_DOUBLE_EQ(grad_buffers(bf16(), chunked).reduce_bytes, 2);
}

TEST(Framework, TheGradientReductionsPrecisionIsThePlansElseItsFrameworks) {
  // FSDP's reduce_dtype float32 (torchtitan's default, Composer's DEFAULT): 16-bit .grad, cast
  // to fp32 for the reduce-scatter only. Composer's PURE (grad_reduce_dtype: training): bf16.
  Plan fsdp = plan_of(Framework::fsdp);
  EXPECT_DOUBLE_EQ(grad_buffers(bf16(), fsdp).reduce_bytes, 4);
  EXPECT_DOUBLE_EQ(grad_buffers(bf16(), fsdp).total(), 2);
  fsdp.grad_reduce = GradReduce::training;
  EXPECT_DOUBLE_EQ(grad_buffers(bf16(), fsdp).reduce_bytes, 2);
  // Megatron's --grad-reduce-in-bf16: the main_grad buffer itself in bf16.
  Plan megatron = plan_of(Framework::megatron_core);
  megatron.grad_reduce = GradReduce::training;
  const GradBuffers b = grad_buffers(bf16(), megatron);
  EXPECT_DOUBLE_EQ(b.low_precision_bytes, 2);
  EXPECT_DOUBLE_EQ(b.fp32_bytes, 0);
  EXPECT_DOUBLE_EQ(b.reduce_bytes, 2);
  // ... and under fp16, --accumulate-allreduce-grads-in-fp32: an fp32 buffer in its place.
  Training fp16 = bf16();
  fp16.dtype = DType::fp16;
  megatron.grad_reduce = GradReduce::fp32;
  EXPECT_DOUBLE_EQ(grad_buffers(fp16, megatron).fp32_bytes, 4);
  EXPECT_DOUBLE_EQ(grad_buffers(fp16, megatron).total(), 4);
  // DeepSpeed keeps 16-bit buffers and reduces in fp32 only when asked.
  Plan deepspeed = plan_of(Framework::deepspeed);
  EXPECT_DOUBLE_EQ(grad_buffers(bf16(), deepspeed).reduce_bytes, 2);
  deepspeed.grad_reduce = GradReduce::fp32;
  EXPECT_DOUBLE_EQ(grad_buffers(bf16(), deepspeed).reduce_bytes, 4);
  EXPECT_DOUBLE_EQ(grad_buffers(bf16(), deepspeed).total(), 2);
}

TEST(Framework, ModelStatesCountTheFrameworksGradientBuffer) {
  // 1e9 parameters, Megatron bf16, no ZeRO: 2 (params) + 4 (fp32 main grads) + 12 (Adam) bytes.
  const ModelStates s = model_states(bf16(), plan_of(Framework::megatron_lm), 1, 1e9, 0, nullptr);
  EXPECT_DOUBLE_EQ(s.params.gpu, 2e9);
  EXPECT_DOUBLE_EQ(s.grads.gpu, 4e9);
  EXPECT_DOUBLE_EQ(s.optimizer.gpu, 12e9);
}

TEST(Framework, OptimizerStepMovesWhatMegatronsKernelsReadAndWrite) {
  // bf16, Adam, clipping on: Adam reads master, fp32 grad, m, v and writes master, m, v (12 x 2
  // + 4), the global norm reads the grads (4), the master->model copy reads 4 and writes 2.
  const Plan p = plan_of(Framework::megatron_lm);
  EXPECT_DOUBLE_EQ(optimizer_step_bytes_per_param(bf16(), p), 24 + 4 + 4 + 6);
  // fp16 adds the grads' copy to fp32 (2 + 4) and the unscale + inf check (4 + 4).
  Training fp16 = bf16();
  fp16.dtype = DType::fp16;
  EXPECT_DOUBLE_EQ(optimizer_step_bytes_per_param(fp16, p), 38 + 6 + 8);
  // fp32 without clipping: params, grads, m, v of 4 bytes; no master copy.
  Training fp32 = bf16();
  fp32.dtype = DType::fp32;
  fp32.grad_clip = 0;
  EXPECT_DOUBLE_EQ(optimizer_step_bytes_per_param(fp32, p), 2 * 8 + 4);
}

TEST(Framework, ExecutorOptimizerStepCountsItsEagerPasses) {
  // fp32 AdamW with decay and clipping, as exec/configs/tiny-gpt-plan.yaml trains: the norm reads
  // the grads (4), the clip factor rewrites them (8), decay rewrites the params (8), the moments'
  // mul_ + add_ / addcmul_ (20 + 20), sqrt, the bias correction and eps (8 x 3), addcdiv_ (16).
  Training fp32 = bf16();
  fp32.dtype = DType::fp32;
  fp32.optimizer = Optimizer::adamw;
  fp32.weight_decay = 0.01;
  fp32.grad_clip = 1.0;
  Plan chunked = plan_of(Framework::megatron_lm);
  chunked.chunk_elements = 1 << 20;  // a chunked plan runs in the executor whatever it names
  EXPECT_DOUBLE_EQ(optimizer_step_bytes_per_param(fp32, chunked), 4 + 8 + 8 + 40 + 24 + 16);
  EXPECT_DOUBLE_EQ(optimizer_step_bytes_per_param(fp32, plan_of(Framework::starfish)), 100);
  // bf16 Adam without decay: the grads cast to fp32 twice (for the norm and for the update,
  // 2 + 4 each), the norm (4), the clip (2 + 2), Adam (80), master -> params (4 + 2).
  Training b = bf16();
  b.optimizer = Optimizer::adam;
  b.weight_decay = 0;
  b.grad_clip = 1.0;
  EXPECT_DOUBLE_EQ(optimizer_step_bytes_per_param(b, chunked), 6 + 4 + 4 + 6 + 80 + 6);
  // fp32 SGD, no decay, no clipping: the norm (4) and param.add_(grad) (12).
  Training sgd = fp32;
  sgd.optimizer = Optimizer::sgd;
  sgd.weight_decay = 0;
  sgd.grad_clip = 0;
  EXPECT_DOUBLE_EQ(optimizer_step_bytes_per_param(sgd, chunked), 16);
}

TEST(Framework, DeepSpeedZeroHoldsItsReductionBucket) {
  // reduce_bucket_size 5e8 elements of bf16 gradients, for ZeRO-1, -2 and -3 (stage3.py's ipg
  // bucket buffer under contiguous_gradients); none where ZeRO-0 all-reduces.
  Plan p = plan_of(Framework::deepspeed);
  for (const int stage : {1, 2, 3}) {
    p.zero_stage = stage;
    EXPECT_DOUBLE_EQ(framework_buffer_bytes(bf16(), p), 1e9) << stage;
  }
  p.zero_stage = 0;
  EXPECT_DOUBLE_EQ(framework_buffer_bytes(bf16(), p), 0);
  Plan m = plan_of(Framework::megatron_lm);
  m.zero_stage = 1;
  EXPECT_DOUBLE_EQ(framework_buffer_bytes(bf16(), m), 0);
}

TEST(Framework, CachingAllocatorReservesFifteenPercentOfWhatItHolds) {
  EXPECT_DOUBLE_EQ(allocator_reserved_bytes(plan_of(Framework::megatron_lm), 85e9), 85e9 / 0.85);
  EXPECT_DOUBLE_EQ(allocator_reserved_bytes(plan_of(Framework::fsdp), 85e9), 100e9);
  // Starfish's chunk runtime allocates its chunks once: nothing on top.
  EXPECT_DOUBLE_EQ(allocator_reserved_bytes(plan_of(Framework::starfish), 85e9), 85e9);
  Plan chunked = plan_of(Framework::megatron_lm);
  chunked.chunk_elements = 1 << 20;
  EXPECT_DOUBLE_EQ(allocator_reserved_bytes(chunked, 85e9), 85e9);
}

Plan layout(Framework f, int tp, int pp, int dp) {
  Plan p = plan_of(f);
  p.tp = tp;
  p.pp = pp;
  p.dp = dp;
  return p;
}

TEST(Framework, EachProcessGroupAndPipelinePeerHoldsItsOwnCommunicator) {
  // Megatron, TP8 PP12 DP4 (BLOOM's layout), counted by hand: groups TP (8), DP (4),
  // model-parallel TP x PP (96), the default group (384); pairs: one pipeline peer on the
  // first and last stage, two in between, and the tied-embedding group of the first and last.
  const Plan meg = layout(Framework::megatron_lm, 8, 12, 4);
  EXPECT_EQ(nccl_communicators(meg, 0).groups, 4);
  EXPECT_EQ(nccl_communicators(meg, 0).pairs, 2);
  EXPECT_EQ(nccl_communicators(meg, 5).groups, 4);
  EXPECT_EQ(nccl_communicators(meg, 5).pairs, 2);
  EXPECT_EQ(nccl_communicators(meg, 11).pairs, 2);
  // An untied model (LLaMA) never all-reduces an embedding gradient between first and last stage:
  // no embedding communicator; the middle stages are unchanged.
  EXPECT_EQ(nccl_communicators(meg, 0, false).pairs, 1);
  EXPECT_EQ(nccl_communicators(meg, 11, false).pairs, 1);
  EXPECT_EQ(nccl_communicators(meg, 5, false).pairs, 2);
  // DeepSpeed's engine adds its pipe group (the loss broadcast).
  EXPECT_EQ(nccl_communicators(layout(Framework::deepspeed, 8, 12, 4), 0).groups, 5);
  // The interleaved schedule wraps the last stage back to the first: two peers everywhere.
  Plan inter = meg;
  inter.schedule = Schedule::interleaved;
  inter.virtual_stages = 2;
  EXPECT_EQ(nccl_communicators(inter, 0).pairs, 3);
  // A 2-rank group is a pair. TP2 PP2 DP1: groups model-parallel (4) and default (4); pairs
  // the TP group, the pipeline peer and the embedding group.
  const Communicators small = nccl_communicators(layout(Framework::megatron_lm, 2, 2, 1), 0);
  EXPECT_EQ(small.groups, 2);
  EXPECT_EQ(small.pairs, 3);
  // FSDP over 64 GPUs: its one sharding group. One GPU: none.
  EXPECT_EQ(nccl_communicators(layout(Framework::fsdp, 1, 1, 64), 0).groups, 1);
  EXPECT_EQ(nccl_communicators(layout(Framework::fsdp, 1, 1, 64), 0).pairs, 0);
  const Communicators one = nccl_communicators(layout(Framework::megatron_lm, 1, 1, 1), 0);
  EXPECT_EQ(one.groups + one.pairs, 0);
  // Megatron-core's experts: EP 8 and the expert-data-parallel group of TP*DP/(EP*ETP) = 4.
  Plan moe = layout(Framework::megatron_core, 1, 1, 32);
  moe.ep = 8;
  // With DP 32 and the default group of 32: four groups (no model-parallel group of one rank).
  EXPECT_EQ(nccl_communicators(moe, 0).groups, 4);
}

TEST(Framework, CommunicatorBuffersAreWhatTheProfileMeasuredPerCommunicator) {
  GpuSpec gpu;
  gpu.nccl_communicator = {544LL << 20, 688LL << 20};
  const Plan meg = layout(Framework::megatron_lm, 8, 12, 4);
  EXPECT_DOUBLE_EQ(communicator_buffer_bytes(meg, gpu, 0, true), 4 * 688.0 * (1 << 20) + 2 * 544.0 * (1 << 20));
  GpuSpec unmeasured;  // the profile's `reserved` covers NCCL as a whole
  EXPECT_DOUBLE_EQ(communicator_buffer_bytes(meg, unmeasured, 0, true), 0);
}

TEST(Framework, PipelineSendsFollowEachFrameworksSplit) {
  // Megatron-LM 2021-22 and DeepSpeed's engine send 1/tp per rank and all-gather on receipt.
  for (Framework f : {Framework::megatron_lm, Framework::deepspeed}) {
    Plan p = plan_of(f);
    p.tp = 8;
    const PipelineSend s = pipeline_send(p, 64e6);
    EXPECT_DOUBLE_EQ(s.bytes_per_rank, 8e6);
    EXPECT_TRUE(s.receiver_all_gathers);
  }
  // Megatron-core sends the whole tensor from every rank.
  Plan core = plan_of(Framework::megatron_core);
  core.tp = 8;
  EXPECT_DOUBLE_EQ(pipeline_send(core, 64e6).bytes_per_rank, 64e6);
  EXPECT_FALSE(pipeline_send(core, 64e6).receiver_all_gathers);
  // With sequence parallelism each rank already holds 1/tp of the sequence: it sends that shard.
  core.sequence_parallel = true;
  EXPECT_DOUBLE_EQ(pipeline_send(core, 64e6).bytes_per_rank, 8e6);
  EXPECT_FALSE(pipeline_send(core, 64e6).receiver_all_gathers);
  // Without TP there is nothing to split.
  Plan one = plan_of(Framework::deepspeed);
  EXPECT_DOUBLE_EQ(pipeline_send(one, 64e6).bytes_per_rank, 64e6);
  EXPECT_FALSE(pipeline_send(one, 64e6).receiver_all_gathers);
}

// One GPT layer, TP1, b=1, s=1024, h=1024, 16 heads (d=64), bf16, on the test GPU: 312 TFLOP/s,
// 2039 GB/s at 0.85, GEMM efficiency 0.5 at 1 GFLOP rising to 0.9 at 1 TFLOP (log-linear).
class LayerOpsTest : public ::testing::Test {
 protected:
  const Cluster c = testing::dgx(1);
  const GpuSpec& gpu = c.node.gpu;
  const Model m = testing::gpt(2, 1024, 16, 1024, 1000);
  double hbm_s(double bytes) const { return bytes / (2039e9 * 0.85); }
  double gemm_s(double flop_each, double count) const {
    return flop_each * count / (312e12 * gpu.matmul_efficiency.at(flop_each));
  }
  const LayerOp& op(const std::vector<LayerOp>& ops, const std::string& name) const {
    for (const LayerOp& o : ops)
      if (name == o.name) return o;
    throw std::runtime_error("no op " + name);
  }
  // A reference into a temporary list would dangle past the statement (ASan caught one).
  const LayerOp& op(std::vector<LayerOp>&& ops, const std::string& name) const = delete;
};

TEST_F(LayerOpsTest, UnfusedAttentionStoresAndRereadsTheScores) {
  const auto ops = layer_ops(gpu, DType::bf16, m, LayerShape{1, 1, false, Attention::unfused});
  const double scores = 16.0 * 1024 * 1024;  // a s^2 b elements
  // Scores GEMM: 16 batched GEMMs of 2 s^2 d FLOP each; backward two of each.
  const LayerOp& qk = op(ops, "attention scores GEMM");
  EXPECT_DOUBLE_EQ(qk.forward_s, gemm_s(2.0 * 1024 * 1024 * 64, 16));
  EXPECT_DOUBLE_EQ(qk.backward_s, 2 * qk.forward_s);
  // Softmax: read + write 2-byte scores; backward reads y and dy, writes dx.
  EXPECT_DOUBLE_EQ(op(ops, "attention softmax").forward_s, hbm_s(2 * 2 * scores));
  EXPECT_DOUBLE_EQ(op(ops, "attention softmax").backward_s, hbm_s(3 * 2 * scores));
  // Dropout: read, write, 1-byte mask.
  EXPECT_DOUBLE_EQ(op(ops, "attention dropout").forward_s, hbm_s(5 * scores));
  // The QKV GEMM: T h 3h multiply-adds, backward twice.
  const LayerOp& qkv = op(ops, "QKV GEMM");
  EXPECT_DOUBLE_EQ(qkv.forward_s, gemm_s(2.0 * 1024 * 1024 * 3072, 1));
  EXPECT_DOUBLE_EQ(qkv.backward_s, 2 * qkv.forward_s);
  // Bias-dropout-add: read 2, write 1, mask; backward dropout (read dy + mask, write) + add.
  const double hidden = 2.0 * 1024 * 1024;
  EXPECT_DOUBLE_EQ(op(ops, "MLP residual").forward_s, hbm_s(3 * hidden + hidden / 2));
  EXPECT_DOUBLE_EQ(op(ops, "MLP residual").backward_s, hbm_s(2 * hidden + hidden / 2 + 3 * hidden));
}

TEST_F(LayerOpsTest, ElementwiseKernelsTakeTheLongerOfTheirTrafficAndTheirMeasuredArithmetic) {
  // A CPU-like device: GELU's measured 5 ns an element forward is longer than its 2 x 2 bytes
  // at HBM speed, so it binds; 1e-15 s an element for the norm is shorter, so traffic binds.
  GpuSpec cpu_like = gpu;
  cpu_like.elementwise.activation = {5e-9, 4e-9};
  cpu_like.elementwise.norm = {1e-15, 1e-15};
  cpu_like.elementwise.softmax = {2e-9, 3e-9};
  cpu_like.elementwise.loss = {1e-9, 2e-9};
  const auto ops = layer_ops(cpu_like, DType::bf16, m, LayerShape{1, 1, false, Attention::unfused});
  const double ffn = 1024.0 * 4096, hidden = 2.0 * 1024 * 1024, scores = 16.0 * 1024 * 1024;
  EXPECT_DOUBLE_EQ(op(ops, "MLP activation").forward_s, 5e-9 * ffn);
  EXPECT_DOUBLE_EQ(op(ops, "MLP activation").backward_s, 4e-9 * ffn);
  EXPECT_DOUBLE_EQ(op(ops, "input norm").forward_s, hbm_s(2 * hidden));
  EXPECT_DOUBLE_EQ(op(ops, "attention softmax").backward_s, 3e-9 * scores);
  EXPECT_DOUBLE_EQ(op(ops, "MLP residual").forward_s, hbm_s(3 * hidden + hidden / 2));  // not measured: traffic
  // The loss: forward + backward per logit, 1024 tokens x 1000 logits, beside the three GEMMs.
  const double gemms = 3 * matmul_time_s(cpu_like, DType::bf16, 2.0 * 1024 * 1024 * 1000);
  EXPECT_DOUBLE_EQ(output_layer_time_s(cpu_like, DType::bf16, m, 1, 1, 36), gemms + 3e-9 * 1024 * 1000);
}

TEST_F(LayerOpsTest, TheExecutorsAttentionCopiesItsHeadsBetweenLayouts) {
  // Starfish's executor, two sequences a micro-batch (2048 tokens): q, k, v (2048 x 1024 each)
  // and the context (2048 x 1024) copied forward, 2 bytes read and written each; backward the
  // four gradients copied back (2 B), the three zero-filled 3072-wide gradients (B each), the
  // slices copied in (2 B over q, k, v) and summed twice (3 B each over the 3072-wide tensor).
  Plan p;
  p.framework = Framework::starfish;
  p.micro_batch = 2;
  const auto ops = layer_ops(gpu, DType::bf16, m, plan_layer_shape(p));
  const double w = 2048.0 * 3072, context = 2048.0 * 1024;
  EXPECT_DOUBLE_EQ(op(ops, "attention head copies").forward_s, hbm_s(2 * 2 * (w + context)));
  EXPECT_DOUBLE_EQ(op(ops, "attention head copies").backward_s, hbm_s(2 * (2 * (w + context) + 3 * w + 2 * w + 6 * w)));
  // One sequence: q, k and v reshape into bmm's batch as views; only the context is copied.
  p.micro_batch = 1;
  const auto one = layer_ops(gpu, DType::bf16, m, plan_layer_shape(p));
  EXPECT_DOUBLE_EQ(op(one, "attention head copies").forward_s, hbm_s(2 * 2 * 1024.0 * 1024));
  // at::linear's biases: every output element of QKV (3072), the output projection (1024),
  // MLP-in (4096) and MLP-out (1024) written forward, read for the bias gradient backward.
  const double outputs = 1024.0 * (3072 + 1024 + 4096 + 1024);
  EXPECT_DOUBLE_EQ(op(one, "linear biases").forward_s, hbm_s(2 * outputs));
  EXPECT_DOUBLE_EQ(op(one, "linear biases").backward_s, hbm_s(2 * outputs));
  // Megatron's baddbmm reads the strided views in place. Its fused kernels take fc1's and the
  // row-parallel layers' biases; QKV's is one separate add (read and write its 3072-wide
  // output), and backward sums every output's gradient for the biases' (one read each).
  Plan megatron;
  megatron.framework = Framework::megatron_lm;
  const auto mops = layer_ops(gpu, DType::bf16, m, plan_layer_shape(megatron));
  for (const LayerOp& o : mops) EXPECT_NE(std::string(o.name), "attention head copies");
  EXPECT_DOUBLE_EQ(op(mops, "linear biases").forward_s, hbm_s(2 * 2 * 1024.0 * 3072));
  EXPECT_DOUBLE_EQ(op(mops, "linear biases").backward_s, hbm_s(2 * outputs));
  // TransformerEngine (Megatron-core) does both in its GEMMs' epilogues: nothing beside them.
  Plan core;
  core.framework = Framework::megatron_core;
  for (const LayerOp& o : layer_ops(gpu, DType::bf16, m, plan_layer_shape(core))) EXPECT_NE(std::string(o.name), "linear biases");
  // Sequence parallelism: the row-parallel layers' outputs (and their biases' gradients) are
  // the rank's 1/t of the tokens.
  megatron.tp = 8;
  megatron.sequence_parallel = true;
  const double sp_outputs = 1024.0 * (3072 + 4096) / 8 + 2 * 1024.0 * 1024 / 8;
  const auto sp_ops = layer_ops(gpu, DType::bf16, m, plan_layer_shape(megatron));
  EXPECT_DOUBLE_EQ(op(sp_ops, "linear biases").backward_s, hbm_s(2 * sp_outputs));
}

TEST_F(LayerOpsTest, FlashAttentionIsOneKernelWithCausalHalfWorkAndAFiveGemmBackward) {
  const auto ops = layer_ops(gpu, DType::bf16, m, LayerShape{1, 1, false, Attention::flash});
  const LayerOp& fa = op(ops, "flash attention");
  // Q K^T and P V over the causal half: 0.5 * 4 s^2 d per head, 16 heads.
  EXPECT_DOUBLE_EQ(fa.forward_s, gemm_s(0.5 * 4 * 1024.0 * 1024 * 64, 16));
  EXPECT_DOUBLE_EQ(fa.backward_s, 2.5 * fa.forward_s);
  for (const LayerOp& o : ops) EXPECT_EQ(std::string(o.name).find("softmax"), std::string::npos);
  // Selective recomputation checkpoints the core attention, fused or not: Megatron runs the
  // kernel's forward again in backward (checkpoint_core_attention); torchtitan's op policy keeps
  // the kernel's outputs and redoes nothing.
  EXPECT_DOUBLE_EQ(layer_time(gpu, DType::bf16, m, 1, 1, false, Recompute::selective, Attention::flash).recompute_s,
                   fa.forward_s);
  LayerShape torchtitan{1, 1, false, Attention::flash};
  torchtitan.selective_redoes_fused_attention = false;
  EXPECT_DOUBLE_EQ(layer_time(gpu, DType::bf16, m, torchtitan, Recompute::selective).recompute_s, 0);
  Plan megatron_core, fsdp;
  megatron_core.framework = Framework::megatron_core;
  fsdp.framework = Framework::fsdp;
  EXPECT_TRUE(plan_layer_shape(megatron_core).selective_redoes_fused_attention);
  EXPECT_FALSE(plan_layer_shape(fsdp).selective_redoes_fused_attention);
  const LayerTime full = layer_time(gpu, DType::bf16, m, 1, 1, false, Recompute::full, Attention::flash);
  EXPECT_DOUBLE_EQ(full.recompute_s, full.forward_s);
}

TEST_F(LayerOpsTest, FlashBackwardAccumulatesDqInFp32AfterADoODotPass) {
  // 1,024 queries x 16 heads x 64: dq_accum cleared (4 B), converted (4 B read, 2 B written),
  // rowsum(dO * O) reads dO and O (2 B each): 14 bytes a query element, backward only.
  const double elements = 1024.0 * 16 * 64;
  const auto ops = layer_ops(gpu, DType::bf16, m, LayerShape{1, 1, false, Attention::flash});
  const LayerOp& dq = op(ops, "flash attention dQ accumulation");
  EXPECT_DOUBLE_EQ(dq.forward_s, 0);
  EXPECT_DOUBLE_EQ(dq.backward_s, hbm_s(14 * elements));
  EXPECT_TRUE(dq.attention_core);
  // TP 2 holds half the heads; CP 2 half the tokens, in each of two ring steps: the same bytes.
  const auto tp_ops = layer_ops(gpu, DType::bf16, m, LayerShape{1, 2, false, Attention::flash});
  EXPECT_DOUBLE_EQ(op(tp_ops, "flash attention dQ accumulation").backward_s, hbm_s(7 * elements));
  LayerShape cp{1, 1, false, Attention::flash};
  cp.cp = 2;
  const auto cp_ops = layer_ops(gpu, DType::bf16, m, cp);
  EXPECT_DOUBLE_EQ(op(cp_ops, "flash attention dQ accumulation").backward_s, hbm_s(14 * elements));
  // The unfused kernels' score GEMMs write dQ directly.
  const auto unfused = layer_ops(gpu, DType::bf16, m, LayerShape{1, 1, false, Attention::unfused});
  EXPECT_THROW(op(unfused, "flash attention dQ accumulation"), std::runtime_error);
}

TEST_F(LayerOpsTest, AttentionsBackwardConcatenatesTheQkvGradients) {
  // q, k and v are views of the QKV output (1,024 tokens x 3,072); their three gradients are
  // concatenated into its gradient: 2 bytes read and written an element, backward only.
  const double qkv = 1024.0 * 3072;
  const auto ops = layer_ops(gpu, DType::bf16, m, LayerShape{1, 1, false, Attention::unfused});
  EXPECT_DOUBLE_EQ(op(ops, "QKV gradient concatenation").forward_s, 0);
  EXPECT_DOUBLE_EQ(op(ops, "QKV gradient concatenation").backward_s, hbm_s(2 * 2 * qkv));
  const auto tp_ops = layer_ops(gpu, DType::bf16, m, LayerShape{1, 4, false, Attention::flash});
  EXPECT_DOUBLE_EQ(op(tp_ops, "QKV gradient concatenation").backward_s, hbm_s(2 * 2 * qkv / 4));
  // The executor's head copies already cost it.
  LayerShape executor{1, 1, false, Attention::unfused};
  executor.head_copies = true;
  const auto executor_ops = layer_ops(gpu, DType::bf16, m, executor);
  EXPECT_THROW(op(executor_ops, "QKV gradient concatenation"), std::runtime_error);
}

TEST_F(LayerOpsTest, ANormsBackwardRereadsItsInputsWhereItsWeightGradientsAreAKernelApart) {
  // 1,024 tokens x 1,024 x 2 bytes. PyTorch's and apex's LayerNorm backward: dX reads x and dy
  // and writes dx, the gamma/beta kernel reads x and dy again (5x); TransformerEngine's one
  // pass reads each once (3x).
  const double hidden = 2.0 * 1024 * 1024;
  for (Framework f : {Framework::megatron_lm, Framework::deepspeed, Framework::fsdp, Framework::starfish}) {
    SCOPED_TRACE(to_string(f));
    const auto ops = layer_ops(gpu, DType::bf16, m, plan_layer_shape(plan_of(f)));
    EXPECT_DOUBLE_EQ(op(ops, "input norm").forward_s, hbm_s(2 * hidden));
    EXPECT_DOUBLE_EQ(op(ops, "input norm").backward_s, hbm_s(5 * hidden));
    EXPECT_DOUBLE_EQ(op(ops, "MLP norm").backward_s, hbm_s(5 * hidden));
  }
  const auto te = layer_ops(gpu, DType::bf16, m, plan_layer_shape(plan_of(Framework::megatron_core)));
  EXPECT_DOUBLE_EQ(op(te, "input norm").backward_s, hbm_s(3 * hidden));
}

TEST(SlidingWindow, TheKernelComputesEveryTileTheWindowTouches) {
  // 8,192 tokens are 64 query tiles of 128; causal attention touches 64 x 65 / 2 = 2,080 tiles.
  // A 128-token window reaches 127 keys back: the diagonal tile and the one before it, 2 a row
  // after the first (1 + 63 x 2 = 127 tiles), twice the window's own 128 x 8,192 pairs.
  EXPECT_DOUBLE_EQ(window_tile_fraction(8192, 128), 127.0 / 2080);
  // 4,096 tokens: rows 0..31 see tiles 0..q (528 in all), every later row 33 (32 back + its own).
  EXPECT_DOUBLE_EQ(window_tile_fraction(8192, 4096), (528.0 + 32 * 33) / 2080);
  EXPECT_DOUBLE_EQ(window_tile_fraction(8192, 1), 64.0 / 2080);  // the diagonal alone
  EXPECT_DOUBLE_EQ(window_tile_fraction(8192, 8192), 1);         // as long as the sequence: causal
  EXPECT_DOUBLE_EQ(window_tile_fraction(8192, 1 << 20), 1);
  EXPECT_DOUBLE_EQ(window_tile_fraction(100, 4), 1);  // one tile, the diagonal: all of causal
}

TEST_F(LayerOpsTest, AWindowedLayerRunsItsFractionOfTheFlashKernel) {
  // s = 1,024 (8 query tiles), window 256: rows 0 and 1 see 1 and 2 tiles, rows 2..7 three each:
  // 21 of causal's 36 tiles. The head's work stays below 1 GFLOP, where the curve is flat (0.5).
  Model swa = m;
  swa.sliding_window = SlidingWindow{256, 2};
  LayerShape shape{1, 1, false, Attention::flash};
  shape.windowed = true;
  const auto ops = layer_ops(gpu, DType::bf16, swa, shape);
  const double flop_each = 0.5 * 4 * 1024.0 * 1024 * 64 * 21 / 36;
  EXPECT_DOUBLE_EQ(op(ops, "flash attention").forward_s, gemm_s(flop_each, 16));
  EXPECT_DOUBLE_EQ(op(ops, "flash attention").backward_s, 2.5 * gemm_s(flop_each, 16));
  // The unfused kernels compute the whole s x s product and mask it: no saving.
  LayerShape unfused{1, 1, false, Attention::unfused};
  const auto full_ops = layer_ops(gpu, DType::bf16, swa, unfused);
  unfused.windowed = true;
  const auto windowed_unfused = layer_ops(gpu, DType::bf16, swa, unfused);
  EXPECT_DOUBLE_EQ(op(windowed_unfused, "attention scores GEMM").forward_s, op(full_ops, "attention scores GEMM").forward_s);
}

TEST_F(LayerOpsTest, FusedAttentionRunsNoFasterThanItsGenerationReachesOnTheGpu) {
  // One head's causal work: 0.5 * 4 s^2 d = 134 MFLOP, where the test GPU's GEMM curve gives
  // 0.5 (clamped below 1 GFLOP). A measured cap below it binds; one above it does not.
  const double flop_each = 0.5 * 4 * 1024.0 * 1024 * 64;
  ASSERT_DOUBLE_EQ(gpu.matmul_efficiency.at(flop_each), 0.5);
  GpuSpec capped = gpu;
  capped.attention_efficiency.flash1 = 0.3;
  capped.attention_efficiency.flash2 = 0.7;
  capped.attention_efficiency.flash1_backward = 0.2;  // the backward pass has its own, lower cap
  const auto v1 = layer_ops(capped, DType::bf16, m, LayerShape{1, 1, false, Attention::flash1});
  EXPECT_DOUBLE_EQ(op(v1, "flash attention").forward_s, flop_each * 16 / (312e12 * 0.3));
  EXPECT_DOUBLE_EQ(op(v1, "flash attention").backward_s, 2.5 * flop_each * 16 / (312e12 * 0.2));
  const auto v2 = layer_ops(capped, DType::bf16, m, LayerShape{1, 1, false, Attention::flash});
  EXPECT_DOUBLE_EQ(op(v2, "flash attention").forward_s, gemm_s(flop_each, 16));
  // Both generations store no scores; selective recomputation redoes the kernel's forward.
  ActivationOptions o{1, false, Recompute::none, 2, Attention::flash1};
  const double v1_bytes = layer_activation_bytes(m, 1, o);
  o.attention = Attention::flash;
  EXPECT_DOUBLE_EQ(v1_bytes, layer_activation_bytes(m, 1, o));
  EXPECT_DOUBLE_EQ(layer_time(capped, DType::bf16, m, 1, 1, false, Recompute::selective, Attention::flash1).recompute_s,
                   op(v1, "flash attention").forward_s);
}

TEST(Framework, LossKernelsMoveWhatTheirKernelsReadAndWrite) {
  // Megatron's vocab-parallel cross-entropy: 38 bytes per logit forward + 14 backward.
  EXPECT_DOUBLE_EQ(loss_kernel(plan_of(Framework::megatron_lm)).traffic_bytes_per_logit, 52);
  EXPECT_DOUBLE_EQ(loss_kernel(plan_of(Framework::deepspeed)).peak_bytes_per_logit, 6);
  // PyTorch's cross_entropy on fp32 logits: 14 forward + 22 backward.
  EXPECT_DOUBLE_EQ(loss_kernel(plan_of(Framework::fsdp)).traffic_bytes_per_logit, 36);
  EXPECT_DOUBLE_EQ(loss_kernel(plan_of(Framework::fsdp)).peak_bytes_per_logit, 12);
  // A chunked plan runs in Starfish's executor, whatever framework it names.
  Plan chunked = plan_of(Framework::megatron_lm);
  chunked.chunk_elements = 1 << 20;
  EXPECT_DOUBLE_EQ(loss_kernel(chunked).traffic_bytes_per_logit, 36);
  // A plan may name its loss: one fused kernel (apex's xentropy, as flash-attn built it for
  // llm-foundry) reads the logits twice forward, once backward, and writes their gradient.
  Plan fused = plan_of(Framework::fsdp);
  fused.loss = Loss::fused;
  EXPECT_DOUBLE_EQ(loss_kernel(fused).traffic_bytes_per_logit, 8);
  EXPECT_DOUBLE_EQ(loss_kernel(fused).peak_bytes_per_logit, 4);
  EXPECT_EQ(parse_plan_file_text("training: {global_batch: 8}\nplan: {loss: fused}\n", "p.yaml").plan.loss, Loss::fused);
  // TransformerEngine's: two reads and an in-place gradient write forward, an in-place scaling
  // backward; nothing but the logits alive.
  Plan te = plan_of(Framework::megatron_core);
  te.loss = Loss::te;
  EXPECT_DOUBLE_EQ(loss_kernel(te).traffic_bytes_per_logit, 10);
  EXPECT_DOUBLE_EQ(loss_kernel(te).peak_bytes_per_logit, 2);
  EXPECT_EQ(parse_plan_file_text("training: {global_batch: 8}\nplan: {loss: te}\n", "p.yaml").plan.loss, Loss::te);
  EXPECT_EQ(testing::error_of([] { parse_plan_file_text("training: {global_batch: 8}\nplan: {loss: l2}\n", "p.yaml"); }),
            "p.yaml:2:8: field 'plan.loss': 'l2' is not one of: default, vocab-parallel, pytorch, fused, te");
  // The output layer's time is its three GEMMs and the loss's bytes at HBM speed.
  const Cluster c = testing::dgx(1);
  const Model m = testing::gpt(2, 1024, 16, 1024, 1000);
  const double logits = 2.0 * 1024 * 1024 * 1000;  // forward GEMM FLOPs, b = 1
  EXPECT_DOUBLE_EQ(output_layer_time_s(c.node.gpu, DType::bf16, m, 1, 1, 52),
                   3 * matmul_time_s(c.node.gpu, DType::bf16, logits) + 52.0 * 1024 * 1000 / (2039e9 * 0.85));
}

TEST_F(LayerOpsTest, SequenceParallelismSplitsOnlyTheReplicatedOps) {
  const auto plain = layer_ops(gpu, DType::bf16, m, LayerShape{1, 8, false, Attention::unfused});
  const auto sp = layer_ops(gpu, DType::bf16, m, LayerShape{1, 8, true, Attention::unfused});
  EXPECT_DOUBLE_EQ(op(sp, "input norm").forward_s, op(plain, "input norm").forward_s / 8);
  EXPECT_DOUBLE_EQ(op(sp, "attention residual").backward_s, op(plain, "attention residual").backward_s / 8);
  EXPECT_DOUBLE_EQ(op(sp, "MLP-in GEMM").forward_s, op(plain, "MLP-in GEMM").forward_s);
  EXPECT_DOUBLE_EQ(op(sp, "attention softmax").forward_s, op(plain, "attention softmax").forward_s);
}

TEST_F(LayerOpsTest, WithoutDropoutThereIsNoDropoutKernelOrMask) {
  Model nd = m;
  nd.dropout = false;
  const auto ops = layer_ops(gpu, DType::bf16, nd, LayerShape{1, 1, false, Attention::unfused});
  for (const LayerOp& o : ops) EXPECT_EQ(std::string(o.name).find("dropout"), std::string::npos);
  const double hidden = 2.0 * 1024 * 1024;
  EXPECT_DOUBLE_EQ(op(ops, "MLP residual").forward_s, hbm_s(3 * hidden));
  EXPECT_DOUBLE_EQ(op(ops, "MLP residual").backward_s, hbm_s(3 * hidden));
}

TEST_F(LayerOpsTest, LayerVariantsRunTheirNormsAndBiasesOnly) {
  // qk_norm: one norm pass over this rank's queries and keys (TP 2: 1024 tokens x 512 + 512).
  Model qk = m;
  qk.qk_norm = true;
  const auto qk_ops = layer_ops(gpu, DType::bf16, qk, LayerShape{1, 2, false, Attention::flash});
  const double qk_bytes = 2.0 * 1024 * (512 + 512);
  EXPECT_DOUBLE_EQ(op(qk_ops, "query/key norms").forward_s, hbm_s(2 * qk_bytes));
  EXPECT_DOUBLE_EQ(op(qk_ops, "query/key norms").backward_s, hbm_s(3 * qk_bytes));
  // post_norms: two more norms of the input norm's size; shared_input_norm: no MLP norm.
  Model post = m;
  post.post_norms = true;
  const auto post_ops = layer_ops(gpu, DType::bf16, post, LayerShape{1, 1, false, Attention::flash});
  EXPECT_DOUBLE_EQ(op(post_ops, "attention post-norm").forward_s, op(post_ops, "input norm").forward_s);
  EXPECT_DOUBLE_EQ(op(post_ops, "MLP post-norm").backward_s, op(post_ops, "input norm").backward_s);
  Model shared = m;
  shared.shared_input_norm = true;
  const auto shared_ops = layer_ops(gpu, DType::bf16, shared, LayerShape{1, 1, false, Attention::flash});
  EXPECT_THROW(op(shared_ops, "MLP norm"), std::runtime_error);
  EXPECT_EQ(shared_ops.size(), layer_ops(gpu, DType::bf16, m, LayerShape{1, 1, false, Attention::flash}).size() - 1);
  // qkv_bias under Megatron's bias kernels: QKV's separate add (read, write) and the sum of its
  // output gradient in backward, nothing over the other linears' outputs.
  Model qwen2 = m;
  qwen2.bias = false;
  qwen2.qkv_bias = true;
  LayerShape megatron{1, 1, false, Attention::flash};
  megatron.bias = LinearBias::megatron;
  const double qkv_bytes = 2.0 * 1024 * 3072;
  const auto qwen2_ops = layer_ops(gpu, DType::bf16, qwen2, megatron);
  const LayerOp& b = op(qwen2_ops, "linear biases");
  EXPECT_DOUBLE_EQ(b.forward_s, hbm_s(2 * qkv_bytes));
  EXPECT_DOUBLE_EQ(b.backward_s, hbm_s(qkv_bytes));
}

TEST(FlashActivations, LayerVariantsKeepTheirNormsInputs) {
  const Model m = testing::gpt(2, 1024, 16, 1024, 1000);
  const double sbh = 1024.0 * 1024;
  const ActivationOptions o{1, false, Recompute::none, 2, Attention::flash};
  const double base = layer_activation_bytes(m, 1, o);
  Model qk = m;
  qk.qk_norm = true;  // the queries' and keys' norm inputs, 2 bytes each
  EXPECT_DOUBLE_EQ(layer_activation_bytes(qk, 1, o) - base, 2 * 2 * sbh);
  Model post = m;
  post.post_norms = true;  // the inputs of the two post-norms
  EXPECT_DOUBLE_EQ(layer_activation_bytes(post, 1, o) - base, 2 * 2 * sbh);
  Model shared = m;
  shared.shared_input_norm = true;  // one norm input fewer
  EXPECT_DOUBLE_EQ(base - layer_activation_bytes(shared, 1, o), 2 * sbh);
  // BLOOM's embedding norm keeps its input on the first stage beside the dropout's mask.
  Model bloom = m;
  bloom.embedding_norm = true;
  Plan p;
  EXPECT_DOUBLE_EQ(embedding_activation_bytes(bloom, p, 2) - embedding_activation_bytes(m, p, 2), 2 * sbh);
}

TEST(FlashActivations, NoScoresOnlyTheSoftmaxStatistics) {
  // h=1024, f=4096, 16 heads, s=1024, b=1, TP1, 2-byte activations, dropout on:
  // replicated 4*2 sbh + 2 masks = 10 sbh; split Q,K,V 6 sbh, context 2 sbh, GELU in/out 16 sbh;
  // and one fp32 log-sum-exp per query and head: 4 a s b bytes.
  const Model m = testing::gpt(2, 1024, 16, 1024, 1000);
  const double sbh = 1024.0 * 1024;
  ActivationOptions o{1, false, Recompute::none, 2, Attention::flash};
  EXPECT_DOUBLE_EQ(layer_activation_bytes(m, 1, o), 34 * sbh + 4.0 * 16 * 1024);
  // The same layer unfused keeps Korthikanti's 5 a s^2 b on top of 34 sbh.
  o.attention = Attention::unfused;
  EXPECT_DOUBLE_EQ(layer_activation_bytes(m, 1, o), 34 * sbh + 5.0 * 16 * 1024 * 1024);
}

TEST(FlashActivations, WithoutDropoutNoMasksAndNoDropoutOutput) {
  Model m = testing::gpt(2, 1024, 16, 1024, 1000);
  m.dropout = false;
  const double sbh = 1024.0 * 1024;
  // 32 sbh (34 less the two residual masks) and the 2-byte softmax output only.
  EXPECT_DOUBLE_EQ(layer_activation_bytes(m, 1, ActivationOptions{}), 32 * sbh + 2.0 * 16 * 1024 * 1024);
}

TEST(Framework, DataParallelReductionMovesFp32GradientsForMegatronBf16) {
  const Model m = testing::gpt(4, 4096, 32, 1024, 1000);
  Training t = bf16();
  t.global_batch = 64;
  Plan p;  // DP 16 over two nodes: the ring goes over the NICs
  const Estimate fp32_grads = estimate(make_job(m, testing::dgx(2), t, p));
  p.framework = Framework::deepspeed;
  const Estimate bf16_grads = estimate(make_job(m, testing::dgx(2), t, p));
  // Same ring, twice the bytes: the bandwidth terms double, the latency terms stay (an
  // all-reduce's 2 x 15 steps, each a message between the nodes).
  const double latency_s = 2 * 15 * testing::dgx(2).inter_node_message_latency_s();
  EXPECT_NEAR(fp32_grads.time.dp_comm_s - latency_s, 2 * (bf16_grads.time.dp_comm_s - latency_s), 1e-12);
}

TEST(Framework, TiedEmbeddingGradientsAreAllReducedBetweenTheEdgeStages) {
  // GPT-3's 51,200 x 12,288 word embedding at TP8: each TP rank reduces its 1/8 shard, in the
  // fp32 main gradients Megatron reduces for bf16 (4 bytes each): 314,572,800 bytes.
  Model m = testing::gpt(96, 12288, 96, 2048, 51200);
  Plan p = plan_of(Framework::megatron_lm);
  p.tp = 8;
  p.pp = 16;
  p.dp = 8;
  EXPECT_DOUBLE_EQ(tied_embedding_grad_bytes(m, bf16(), p), 51200.0 * 12288 / 8 * 4);
  // Stage 0 and stage 15 are (16-1) x 8 x 8 ranks apart, on other nodes: a 2-rank ring over the
  // GPU's share of its node's NICs, 2 x (latency + half the bytes / bandwidth).
  const Cluster c = testing::dgx(128);
  const double bw = c.inter_node_bandwidth_per_gpu_Bps(), lat = c.inter_node_message_latency_s();
  const double bytes = 51200.0 * 12288 / 8 * 4;
  EXPECT_NEAR(tied_embedding_reduce_time_s(c, m, bf16(), p), 2 * (lat + bytes / 2 / bw), 1e-12);
  // Untied (the output layer has its own weights) or unpipelined (one stage holds both uses):
  // nothing to reduce.
  Model untied = m;
  untied.tied_embeddings = false;
  EXPECT_EQ(tied_embedding_grad_bytes(untied, bf16(), p), 0);
  Plan one_stage = p;
  one_stage.pp = 1;
  EXPECT_EQ(tied_embedding_grad_bytes(m, bf16(), one_stage), 0);
  EXPECT_EQ(tied_embedding_reduce_time_s(c, m, bf16(), one_stage), 0);
}

TEST(FrameworkSpec, PlanFilesNameTheirFrameworkAndAttention) {
  const PlanFile p = parse_plan_file_text(
      "training: {global_batch: 8}\nplan: {framework: megatron-core, attention: unfused}\n", "p.yaml");
  EXPECT_EQ(p.plan.framework, Framework::megatron_core);
  EXPECT_EQ(p.plan.attention, Attention::unfused);
  const PlanFile v1 = parse_plan_file_text(
      "training: {global_batch: 8}\nplan: {framework: fsdp, attention: flash1}\n", "p.yaml");
  EXPECT_EQ(v1.plan.attention, Attention::flash1);
  const std::string e = testing::error_of([] {
    parse_plan_file_text("training: {global_batch: 8}\nplan:\n  framework: jax\n", "p.yaml");
  });
  EXPECT_EQ(e.rfind("p.yaml:3:3: field 'plan.framework'", 0), 0u) << e;
  EXPECT_NE(e.find("megatron-core"), std::string::npos) << e;
}

// Composer's training metrics (Plan::train_metric_passes): per pass a bf16 logit is read and its
// log-probability written (2 + 2), then autocast copies that to fp32 for nll_loss (2 + 4); alive at
// once the logits, the log-probabilities and the copy (2 + 2 + 4). fp32 training casts nothing.
TEST(Framework, TrainingMetricPassesMoveLogSoftmaxAndAutocastsFp32Copy) {
  Plan p = plan_of(Framework::fsdp);
  EXPECT_DOUBLE_EQ(train_metric_kernel(2, p).traffic_bytes_per_logit, 0);
  EXPECT_DOUBLE_EQ(train_metric_kernel(2, p).peak_bytes_per_logit, 0);
  p.train_metric_passes = 2;
  EXPECT_DOUBLE_EQ(train_metric_kernel(2, p).traffic_bytes_per_logit, 2 * 10);
  EXPECT_DOUBLE_EQ(train_metric_kernel(2, p).peak_bytes_per_logit, 8);
  EXPECT_DOUBLE_EQ(train_metric_kernel(4, p).traffic_bytes_per_logit, 2 * 8);
  EXPECT_DOUBLE_EQ(train_metric_kernel(4, p).peak_bytes_per_logit, 8);
  // The plan file says it, and writes it back.
  const PlanFile f = parse_plan_file_text("training: {global_batch: 8}\nplan: {framework: fsdp, train_metric_passes: 2}\n", "p.yaml");
  EXPECT_EQ(f.plan.train_metric_passes, 2);
  EXPECT_EQ(parse_plan_file_text(to_yaml(f), "q.yaml").plan.train_metric_passes, 2);
  EXPECT_EQ(to_yaml(parse_plan_file_text("training: {global_batch: 8}\nplan: {framework: fsdp}\n", "p.yaml")).find("train_metric"),
            std::string::npos);
  EXPECT_EQ(testing::error_of([] {
              parse_plan_file_text("training: {global_batch: 8}\nplan: {train_metric_passes: -1}\n", "p.yaml");
            }),
            "p.yaml:2:8: field 'plan.train_metric_passes': must be at least 0, got '-1'");
  // Composer's alone, data-parallel only.
  const Model m = testing::gpt(2, 256, 4, 512, 1000);
  auto error = [&](Plan q) { return testing::error_of([&] { make_job(m, testing::dgx(1), bf16(), q); }); };
  Plan megatron = plan_of(Framework::megatron_lm);
  megatron.train_metric_passes = 2;
  EXPECT_NE(error(megatron).find("field 'plan.train_metric_passes': training metrics over the logits are Composer's"),
            std::string::npos) << error(megatron);
  Plan tp = p;
  tp.tp = 2;
  EXPECT_NE(error(tp).find("Composer trains data-parallel only"), std::string::npos) << error(tp);
  Plan chunked = plan_of(Framework::starfish);
  chunked.chunk_elements = 1 << 20;
  chunked.train_metric_passes = 1;
  EXPECT_NE(error(chunked).find("an fsdp plan: set framework: fsdp (the plan says starfish)"), std::string::npos)
      << error(chunked);
  EXPECT_EQ(make_job(m, testing::dgx(1), bf16(), p).plan.train_metric_passes, 2);
}

// Megatron's sequence parallelism keeps a column-parallel GEMM's input as this rank's sequence
// shard and all-gathers it again in backward (megatron/mpu/layers.py, 2022): a dense layer's
// QKV and MLP-in inputs, one all-reduce's worth of ring traffic more in backward (an MoE layer's
// QKV only, half of that). torchtitan keeps the gathered input instead: no re-gather, and the
// whole input stored. TP8 on one DGX A100, 4 layers, 2 micro-batches.
TEST(Framework, SequenceParallelBackwardGathersColumnParallelInputsAgain) {
  for (Framework f : {Framework::megatron_lm, Framework::megatron_core, Framework::deepspeed}) {
    Plan p = plan_of(f);
    p.tp = 8;
    EXPECT_DOUBLE_EQ(sequence_parallel_regather_all_reduces(p, false), 0);
    p.sequence_parallel = true;
    EXPECT_DOUBLE_EQ(sequence_parallel_regather_all_reduces(p, false), 1);
    EXPECT_DOUBLE_EQ(sequence_parallel_regather_all_reduces(p, true), 0.5);
  }
  Plan titan = plan_of(Framework::fsdp);
  titan.tp = 8;
  titan.sequence_parallel = true;
  EXPECT_DOUBLE_EQ(sequence_parallel_regather_all_reduces(titan, false), 0);
  // The estimate's TP traffic: forward 2 all-reduces, backward 2 + 1 with SP.
  const Model m = testing::gpt(4, 2048, 16, 1024, 1000);
  Training t = bf16();
  t.global_batch = 2;
  Plan plain = plan_of(Framework::megatron_lm);
  plain.tp = 8;
  Plan sp = plain;
  sp.sequence_parallel = true;
  const Estimate ep = estimate(make_job(m, testing::dgx(1), t, plain)), es = estimate(make_job(m, testing::dgx(1), t, sp));
  EXPECT_NEAR(es.time.tp_comm_s / ep.time.tp_comm_s, 5.0 / 4.0, 1e-12);
  Plan titan_plain = titan;
  titan_plain.sequence_parallel = false;
  EXPECT_NEAR(estimate(make_job(m, testing::dgx(1), t, titan)).time.tp_comm_s /
                  estimate(make_job(m, testing::dgx(1), t, titan_plain)).time.tp_comm_s,
              1.0, 1e-12);
  // torchtitan's layer keeps QKV's and MLP-in's gathered inputs whole: 2 x 2 bytes x s h more
  // than Megatron's shards of them, less the shards (7/8 of it).
  const ActivationOptions mo = plan_activation_options(sp, 2, Recompute::none);
  ActivationOptions to = mo;
  to.sequence_parallel_saves_gathered_inputs = true;
  EXPECT_FALSE(mo.sequence_parallel_saves_gathered_inputs);
  EXPECT_TRUE(plan_activation_options(titan, 2, Recompute::none).sequence_parallel_saves_gathered_inputs);
  EXPECT_DOUBLE_EQ(layer_activation_bytes(m, 1, to) - layer_activation_bytes(m, 1, mo), 2 * 2.0 * 1024 * 2048 * 7 / 8);
}

// Megatron-core's buckets (dp_bucket_params: max(40M, 1M x DP) params) cut a virtual stage in
// backward order into buckets of the fewest layers that reach the size, the remainder last (the
// first in forward order); both tiers' reductions and param gathers take this one layout.
TEST(Framework, GradientBucketsCutTheFirstVirtualStageFromItsLastLayer) {
  Plan p = plan_of(Framework::megatron_core);
  p.overlap_grad_reduce = true;
  p.zero_stage = 1;
  // 10 layers of 12M params: 4 layers (48M) reach 40M; 4 + 4 + the remaining 2.
  DpBucketLayout b = dp_bucket_layout(p, 0, 0, 8, 10, 12e6);
  EXPECT_EQ(b.per_bucket, 4);
  EXPECT_EQ(b.buckets, 3);
  EXPECT_EQ(b.remainder, 2);
  // At DP 64 a bucket is 64M params: 6 layers (72M), then the remaining 4.
  b = dp_bucket_layout(p, 0, 0, 64, 10, 12e6);
  EXPECT_EQ(b.per_bucket, 6);
  EXPECT_EQ(b.buckets, 2);
  EXPECT_EQ(b.remainder, 4);
  // Exactly divided: the last bucket is a full one.
  b = dp_bucket_layout(p, 0, 0, 8, 8, 10e6);
  EXPECT_EQ(b.per_bucket, 4);
  EXPECT_EQ(b.buckets, 2);
  EXPECT_EQ(b.remainder, 4);
  // A layer larger than a bucket is a bucket; tiny layers never make a bucket of more layers
  // than the stage has (the ceiling is clamped before its cast).
  EXPECT_EQ(dp_bucket_layout(p, 0, 0, 8, 3, 1e9).buckets, 3);
  b = dp_bucket_layout(p, 0, 0, 8, 3, 1e-300);
  EXPECT_EQ(b.buckets, 1);
  EXPECT_EQ(b.remainder, 3);
  // Not bucketed (a later stage or chunk, or without overlap): one bucket of every layer.
  b = dp_bucket_layout(p, 1, 0, 8, 10, 12e6);
  EXPECT_EQ(b.buckets, 1);
  EXPECT_EQ(b.remainder, 10);
  p.overlap_grad_reduce = false;
  EXPECT_EQ(dp_bucket_layout(p, 0, 0, 8, 10, 12e6).buckets, 1);
}

}  // namespace
}  // namespace starfish

#pragma once
// How a training job is laid out on the cluster: parallelism, ZeRO, offload, chunks, recompute.
#include <cstdint>
#include <string>

#include "sim/spec/provenance.h"

namespace starfish {

enum class Tier { gpu, cpu, nvme };
enum class Recompute { none, selective, full };
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
// (torchtitan, Starfish's executor), or one fused kernel over the 16-bit logits
// (flash-attn's CrossEntropyLoss, llm-foundry's default). sim/cost/framework.h has their costs.
enum class Loss { framework_default, vocab_parallel, pytorch, fused };

struct Offload {
  Tier params = Tier::gpu;     // fp16/bf16 params (and their grads, which reuse them in chunks)
  Tier grads = Tier::gpu;      // gradients when they are not chunk-reused
  Tier optimizer = Tier::gpu;  // fp32 master params, momentum, variance
  bool operator==(const Offload&) const = default;
};

struct Plan {
  int tp = 1;                  // tensor parallel
  int pp = 1;                  // pipeline parallel
  int dp = 0;                  // data parallel; 0 = derive as GPUs / (tp * pp)
  int virtual_stages = 1;      // model chunks per pipeline stage (interleaved 1F1B)
  int micro_batch = 1;         // sequences per micro-batch
  bool sequence_parallel = false;
  // Data-parallel gradient reduction overlapped with the backward pass, a model chunk at a time
  // (Megatron's --overlap-grad-reduce, DeepSpeed's overlap_comm). Off, the reduction starts after
  // the pipeline flush: the default of both, and what Megatron-LM ran in 2021.
  bool overlap_grad_reduce = false;
  Schedule schedule = Schedule::one_f_one_b;
  int zero_stage = 0;          // 0..3
  Offload offload;
  int64_t chunk_elements = 0;  // chunk runtime chunk size; 0 = static placement (no chunks)
  Recompute recompute = Recompute::none;
  Framework framework = Framework::megatron_lm;
  Attention attention = Attention::framework_default;  // resolved by attention_kernel()
  Loss loss = Loss::framework_default;                 // resolved by loss_kernel()
  Provenance provenance;

  bool chunked() const { return chunk_elements > 0; }
  bool operator==(const Plan&) const = default;
};

const char* to_string(Tier t);
bool parse_tier(const std::string& text, Tier& out);  // false when unknown
const char* to_string(Recompute r);
const char* to_string(Schedule s);
const char* to_string(Framework f);
const char* to_string(Attention a);
const char* to_string(Loss l);

}  // namespace starfish

#pragma once
// FLOP counts of a GPT-style model. Conventions follow Narayanan et al. 2021 (Megatron-LM): a
// multiply-add is 2 FLOP, attention scores are counted in full (no causal halving), backward
// costs twice the forward, and "hardware" FLOPs include recomputation.
#include <cstdint>

#include "sim/spec/model.h"
#include "sim/spec/plan.h"

namespace starfish {

// Forward FLOPs of one transformer layer for `tokens` = micro_batch * seq_len tokens, split by
// operation (each is one GEMM or batched GEMM: the shapes decide its efficiency).
struct LayerForwardFlops {
  double qkv = 0;        // 2 * T * h * (h + 2 kv); MLA: its down and up projections
  double scores = 0;     // Q K^T: 2 * T * s * h
  double context = 0;    // softmax(QK^T) V: 2 * T * s * h
  double attn_out = 0;   // 2 * T * h * h
  double mlp_in = 0;     // 2 * T * h * f (x2 for SwiGLU's gate and up)
  double mlp_out = 0;    // 2 * T * f * h
  double total() const { return qkv + scores + context + attn_out + mlp_in + mlp_out; }
  double attention_core() const { return scores + context; }  // what selective recompute redoes
};

LayerForwardFlops layer_forward_flops(const Model& model, int64_t micro_batch);
double logits_forward_flops(const Model& model, int64_t micro_batch);  // 2 * T * h * V

struct IterationFlops {
  double model = 0;     // forward + backward, no recompute: the "useful" work (MFU)
  double hardware = 0;  // plus recomputation: what the GPUs execute (Megatron's TFLOP/s)
};

// Tokens per second of an iteration of `global_batch` sequences that takes `iteration_s` (0 when
// it takes no time): what estimate, simulate and starfish-run report.
double tokens_per_s(const Model& model, int64_t global_batch, double iteration_s);

// FLOPs of one whole iteration of `global_batch` sequences over all GPUs.
IterationFlops iteration_flops(const Model& model, int64_t global_batch, Recompute recompute);
// The same for a plan: under block recomputation (Plan::recompute_layers) only the recomputing
// layers' forwards run again.
IterationFlops plan_iteration_flops(const Model& model, int64_t global_batch, const Plan& plan);

// Narayanan et al. 2021, eq. (3) family, as an independent cross-check for GELU MHA models:
// no recompute 72 B s L h^2 (1 + s/6h + V/12Lh); full recompute 96 B s L h^2 (1 + s/6h + V/16Lh).
double narayanan_iteration_flops(const Model& model, int64_t global_batch, bool full_recompute);

}  // namespace starfish

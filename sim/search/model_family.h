#pragma once
// How `maxsize` grows a model: a family is a one-parameter series of shapes, so "the largest
// model that fits" is a binary search over one integer.
//
// The rule (explicit, and the same for every family): head dimension 128, hidden = 128 * heads,
// and layers growing with the hidden size at GPT-3 175B's aspect ratio hidden / layers = 128,
// i.e. layers = heads. It reproduces GPT-3's Table 2.1 shapes 6.7B (32 layers, 4096), 13B (40,
// 5120 -- the paper's 5140 is a typo for 5120) and 175B (96, 12288), and Megatron-LM's
// h = 128 * heads; parameters grow as ~12 * layers * hidden^2 = 196608 * heads^3.
// Steps of `heads_step` heads keep every TP degree up to heads_step a divisor of the heads.
// Between two steps the search refines by layers alone (hidden fixed), so the answer has the
// resolution of one layer rather than one heads step.
//
//   gpt:   GELU, LayerNorm, learned positions, tied embeddings, biases, ffn = 4 * hidden,
//          vocab 50257 (GPT-2 BPE), seq 2048 (GPT-3).
//   llama: SwiGLU with ffn = 8/3 * hidden rounded up to a multiple of 256, RMSNorm, RoPE,
//          untied embeddings, no biases, vocab 32000, seq 4096 (LLaMA 2); LLaMA 2 7B and 13B
//          are (32 heads, 32 layers) and (40, 40) of this series.
#include <string>
#include <vector>

#include "sim/spec/model.h"

namespace starfish::search {

std::vector<std::string> model_families();  // "gpt", "llama"

// The family's model with `heads` heads and `layers` layers (layers = heads on the main
// series); `seq_len` 0 = the family's default. Throws SpecError for an unknown family.
Model family_model(const std::string& family, int heads, int layers, int seq_len = 0);

}  // namespace starfish::search

#pragma once
// A GPT-style decoder-only transformer.
#include <cstdint>
#include <string>

#include "sim/spec/provenance.h"

namespace starfish {

enum class Activation { gelu, swiglu };
enum class Norm { layernorm, rmsnorm };
enum class PositionEmbedding { learned, rope };

struct Model {
  std::string name;
  std::string family = "gpt";   // how `maxsize` scales it: gpt, llama
  int layers = 0;
  int hidden = 0;
  int heads = 0;
  int kv_heads = 0;             // grouped-query attention; == heads for multi-head attention
  int ffn_hidden = 0;           // 4*hidden for GPT; LLaMA's SwiGLU uses its own
  int seq_len = 0;
  int vocab = 0;
  Activation activation = Activation::gelu;
  Norm norm = Norm::layernorm;
  PositionEmbedding position = PositionEmbedding::learned;
  // RoPE's base frequency theta (Su et al. 2021: 10000; Llama 3: 500000). It changes no cost,
  // but an export must carry it (Megatron's --rotary-base) or the run trains another model.
  double rope_base = 10000;
  bool tied_embeddings = true;  // output projection shares the input embedding
  bool bias = true;             // linear layers carry biases (GPT) or not (LLaMA)
  // Dropout after attention's softmax and on both residual branches (GPT-2/3, Megatron's GPT:
  // 0.1); off in LLaMA, MPT and most models trained since 2022. With it, every dropout stores a
  // 1-byte mask for backward and costs a kernel.
  bool dropout = true;
  Provenance provenance;

  int head_dim() const { return hidden / heads; }
  int kv_dim() const { return kv_heads * head_dim(); }
  bool operator==(const Model&) const = default;
};

}  // namespace starfish

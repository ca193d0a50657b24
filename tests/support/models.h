#pragma once
// Models built in code, shared by the sim tests (so they depend on no bundled file).
#include <string>

#include "sim/spec/model.h"

namespace starfish::testing {

// A GPT: learned positions, LayerNorm, GELU with a 4h FFN, biases, tied embeddings.
inline Model gpt(int layers, int hidden, int heads, int seq, int vocab, std::string name = "gpt-test") {
  Model m;
  m.name = std::move(name);
  m.layers = layers;
  m.hidden = hidden;
  m.heads = heads;
  m.kv_heads = heads;
  m.ffn_hidden = 4 * hidden;
  m.seq_len = seq;
  m.vocab = vocab;
  return m;
}

// LLaMA-2 7B (Touvron et al. 2023): SwiGLU, RMSNorm, RoPE, untied, no biases.
inline Model llama2_7b() {
  Model m = gpt(32, 4096, 32, 4096, 32000, "llama-2-7b");
  m.ffn_hidden = 11008;
  m.activation = Activation::swiglu;
  m.norm = Norm::rmsnorm;
  m.position = PositionEmbedding::rope;
  m.tied_embeddings = false;
  m.bias = false;
  m.dropout = false;
  return m;
}

}  // namespace starfish::testing

#pragma once
// The GPT the executor benchmarks train: byte-level (vocab 256), head dimension 32, and the
// Gpt's own defaults for the rest (4h FFN, multi-head attention).
#include <algorithm>
#include <string>

#include "sim/spec/model.h"

namespace starfish::exec::bench {

inline Model bench_gpt(std::string name, int layers, int hidden, int seq_len) {
  Model m;
  m.name = std::move(name);
  m.layers = layers;
  m.hidden = hidden;
  m.heads = std::max(1, hidden / 32);
  m.kv_heads = m.heads;
  m.ffn_hidden = 4 * hidden;
  m.seq_len = seq_len;
  m.vocab = 256;
  return m;
}

}  // namespace starfish::exec::bench

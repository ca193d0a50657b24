#include "sim/search/model_family.h"

#include "sim/spec/error.h"

namespace starfish::search {

std::vector<std::string> model_families() { return {"gpt", "llama"}; }

Model family_model(const std::string& family, int heads, int layers, int seq_len) {
  if (heads < 1 || layers < 1) throw SpecError("family_model: heads and layers must be positive");
  Model m;
  m.family = family;
  m.heads = heads;
  m.kv_heads = heads;
  m.hidden = 128 * heads;
  m.layers = layers;
  if (family == "gpt") {
    m.ffn_hidden = 4 * m.hidden;
    m.vocab = 50257;
    m.seq_len = seq_len > 0 ? seq_len : 2048;
  } else if (family == "llama") {
    m.ffn_hidden = (8 * m.hidden / 3 + 255) / 256 * 256;
    m.vocab = 32000;
    m.seq_len = seq_len > 0 ? seq_len : 4096;
    m.activation = Activation::swiglu;
    m.norm = Norm::rmsnorm;
    m.position = PositionEmbedding::rope;
    m.tied_embeddings = false;
    m.bias = false;
  } else {
    throw SpecError("unknown model family '" + family + "' (known: gpt, llama)");
  }
  m.name = family + "-h" + std::to_string(m.hidden) + "-l" + std::to_string(layers);
  return m;
}

}  // namespace starfish::search

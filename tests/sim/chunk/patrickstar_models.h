#pragma once
// The PatrickStar benchmark models (examples/model_builder.py), built in code from the shared
// CSV: GPT-2 style, hidden/layers/heads from the file, seq 1024, vocab 50257, 4h MLP.
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/spec/model.h"

namespace starfish::test {

inline std::vector<Model> patrickstar_models() {
  const std::string path = std::string(STARFISH_SHARED_DATA_DIR) + "/patrickstar_max_model_scale_and_configs.csv";
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::string line;
  std::getline(in, line);  // header
  std::vector<Model> models;
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::stringstream ss(line);
    std::string cell;
    while (std::getline(ss, cell, ',')) f.push_back(cell);
    // record_type,system,version,hardware,num_gpus,cpu_memory_GB,model_name,params_billion,
    // hidden_size,num_layers,attention_heads,seq_len_tokens,...
    if (f.size() < 12 || f[0] != "model_config") continue;
    Model m;
    m.name = f[6];
    m.hidden = std::stoi(f[8]);
    m.layers = std::stoi(f[9]);
    m.heads = m.kv_heads = std::stoi(f[10]);
    m.seq_len = std::stoi(f[11]);
    m.ffn_hidden = 4 * m.hidden;
    m.vocab = 50257;
    models.push_back(m);
  }
  return models;
}

}  // namespace starfish::test

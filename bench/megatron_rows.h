#pragma once
// The rows of Narayanan et al. 2021 (Megatron-LM), Table 1, as Jobs under ONE set of plan
// conventions (Narayanan sec. 5: fp16, full recompute, micro-batch 1, the interleaved schedule
// with 2 model chunks per stage where layers and micro-batches allow, Megatron-LM's framework
// traits): shared by bench/accuracy, which compares them with the paper, and simulate_fingerprint, which checks that a change to the
// simulator's speed leaves their predictions bit for bit where they were.
#include <cstdint>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/spec/job.h"
#include "sim/spec/spec_io.h"

namespace starfish::bench {

struct MegatronRow {
  std::string params;      // the table's first column, billions ("1.7")
  Job job;
  double published_tflops = 0;  // per GPU
};

inline std::string megatron_csv_path() {
  return std::string(STARFISH_SHARED_DATA_DIR) + "/narayanan2021_megatron_table1_weak_scaling.csv";
}

inline std::vector<MegatronRow> load_megatron_rows(const std::string& csv) {
  std::ifstream in(csv);
  if (!in) throw std::runtime_error("cannot open " + csv);
  const Cluster node = load_cluster(std::string(STARFISH_SOURCE_DIR) + "/hwprofiles/dgx-a100-80gb.yaml");
  std::vector<MegatronRow> rows;
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::vector<std::string> c;
    std::stringstream ss(line);
    for (std::string cell; std::getline(ss, cell, ',');) c.push_back(cell);
    if (c.size() < 12) continue;
    Model m;
    m.name = "megatron-" + c[0] + "b";
    m.heads = std::stoi(c[1]);
    m.kv_heads = m.heads;
    m.hidden = std::stoi(c[2]);
    m.ffn_hidden = 4 * m.hidden;
    m.layers = std::stoi(c[3]);
    m.seq_len = std::stoi(c[9]);
    m.vocab = std::stoi(c[10]);
    Cluster cl = node;
    cl.nodes = std::stoi(c[7]) / cl.node.gpus;
    Training t;
    t.global_batch = std::stoll(c[8]);
    t.dtype = DType::fp16;
    Plan p;
    p.tp = std::stoi(c[4]);
    p.pp = std::stoi(c[5]);
    p.dp = std::stoi(c[6]);
    p.micro_batch = 1;
    p.recompute = Recompute::full;
    const int64_t micro_batches = t.global_batch / p.dp;
    if (p.pp > 1 && m.layers % (2 * p.pp) == 0 && micro_batches % p.pp == 0) {
      p.schedule = Schedule::interleaved;
      p.virtual_stages = 2;
    }
    rows.push_back({c[0], make_job(m, cl, t, p), std::stod(c[11])});
  }
  return rows;
}

}  // namespace starfish::bench

// Published maxima: ZeRO (Rajbhandari et al. 2020) Table 2 and PatrickStar's model scales on
// 8x V100 with 240 GB of host memory, read from the shared data at test time.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "sim/cost/memory.h"
#include "sim/search/maxsize.h"
#include "sim/search/variants.h"
#include "sim/spec/spec_io.h"

namespace starfish::search {
namespace {

std::vector<std::vector<std::string>> read_csv(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "cannot open " << path;
  std::vector<std::vector<std::string>> rows;
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    std::string cell;
    bool quoted = false;
    for (char ch : line) {
      if (ch == '"') quoted = !quoted;
      else if (ch == ',' && !quoted) {
        cells.push_back(cell);
        cell.clear();
      } else cell += ch;
    }
    cells.push_back(cell);
    rows.push_back(cells);
  }
  return rows;
}

// "7.6B" -> 7.6e9, "0.5T" -> 5e11; `half_ulp` = half a unit of the last printed digit.
double parse_size(const std::string& s, double* half_ulp) {
  const double unit = s.back() == 'T' ? 1e12 : 1e9;
  const std::string digits = s.substr(0, s.size() - 1);
  const size_t dot = digits.find('.');
  const int decimals = dot == std::string::npos ? 0 : static_cast<int>(digits.size() - dot - 1);
  if (half_ulp) *half_ulp = 0.5 * std::pow(10.0, -decimals) * unit;
  return std::stod(digits) * unit;
}

std::string data(const std::string& file) { return std::string(STARFISH_SHARED_DATA_DIR) + "/" + file; }

// Largest GPT (hidden 128 x heads) trainable with MP-way TP, no PP, the given ZeRO stage and no
// offload, on `gpus` DGX-2 V100s; seq 1024 as in the paper's GPT-2-style models.
double zero_measured_like(int mp, int gpus, int zero_stage, MaxSizeResult* out = nullptr) {
  Cluster c = load_cluster(std::string(STARFISH_SOURCE_DIR) + "/hwprofiles/dgx2-v100-32gb.yaml");
  c.nodes = gpus / c.node.gpus;
  MaxSizeOptions o;
  o.seq_len = 1024;
  o.heads_step = mp;
  o.search.space.tp = {mp};
  o.search.space.pp = {1};
  o.search.space.zero_stages = {zero_stage};
  o.search.space.param_tiers = o.search.space.grad_tiers = o.search.space.optimizer_tiers = {Tier::gpu};
  o.search.space.chunk_elements = {0};
  o.search.top_k = 1;
  MaxSizeResult r = max_model_size(c, o);
  EXPECT_TRUE(r.found);
  if (out) *out = r;
  return static_cast<double>(r.parameters);
}

TEST(Reproduction, ZeroTable2TheoreticalColumnsFollowFromTheModelStateBytes) {
  const auto rows = read_csv(data("zero2020_table2_max_model_size.csv"));
  ASSERT_EQ(rows.size(), 6u);  // header + MP 1..16
  Training t;
  t.dtype = DType::fp16;
  t.optimizer = Optimizer::adam;
  const double gpu_bytes = 32e9;  // the paper's "32GB V100" (its 2B baseline = 32 GB / 16 B)
  for (size_t i = 1; i < rows.size(); ++i) {
    const int mp = std::stoi(rows[i][0]), dp = std::stoi(rows[i][2]);
    const int columns[] = {3, 4, 5, 6};  // baseline, Pos, Pos+g, Pos+g+p = ZeRO stage 0..3
    for (int stage = 0; stage < 4; ++stage) {
      Plan p;
      p.zero_stage = stage;
      const ModelStates ms = model_states(t, p, dp, 1.0, 0.0, nullptr);
      const double bytes_per_param = ms.params.gpu + ms.grads.gpu + ms.optimizer.gpu;
      const double ours = mp * gpu_bytes / bytes_per_param;
      double half_ulp = 0;
      const double paper = parse_size(rows[i][columns[stage]], &half_ulp);
      // The paper rounds the MP=1 value to 0.1B and multiplies by MP (7.6B x 2 = 15.2B for
      // 15.28B), and prints T values to one decimal: either rounding may account for the gap.
      const double tolerance = std::max(half_ulp, mp * 0.05e9);
      EXPECT_NEAR(ours, paper, tolerance) << "MP " << mp << " stage " << stage << ": paper " << rows[i][columns[stage]];
    }
  }
}

TEST(Reproduction, ZeroTable2MeasuredMaximaLieBetweenMeasuredAndTheoretical) {
  const auto rows = read_csv(data("zero2020_table2_max_model_size.csv"));
  ASSERT_GE(rows.size(), 6u) << "the ZeRO table is missing or short";
  // MP 1 and 16: the two ends of the table (the middle rows follow the same arithmetic).
  for (size_t i : {size_t{1}, size_t{5}}) {
    const int mp = std::stoi(rows[i][0]), gpus = std::stoi(rows[i][1]);
    for (int stage : {0, 1}) {
      const double theory = parse_size(rows[i][stage == 0 ? 3 : 4], nullptr);
      const double measured = parse_size(rows[i][stage == 0 ? 7 : 8], nullptr);
      MaxSizeResult r;
      const double ours = zero_measured_like(mp, gpus, stage, &r);
      // The model-state bound at the hwprofile's usable memory (32 GiB less 1 GiB reserved =
      // 33.3 GB: more than the paper's round 32 GB, so it may exceed the printed theory).
      const GpuSpec& gpu = load_cluster(std::string(STARFISH_SOURCE_DIR) + "/hwprofiles/dgx2-v100-32gb.yaml").node.gpu;
      const double usable = static_cast<double>(gpu.memory_bytes - gpu.reserved_bytes);
      const double bound = theory * usable / 32e9;
      std::printf("ZeRO Table 2 MP %2d stage %d: ours %.2fB (%s, then %s), measured %.1fB, theoretical %.1fB\n", mp,
                  stage, ours / 1e9, r.model.name.c_str(), constraint_name(r.binding), measured / 1e9, theory / 1e9);
      // Ours adds activations (micro-batch 1, full recompute wins) and buffers to the model
      // states: below the bound, and above what ZeRO trained. The measured maxima are lower
      // still, by the paper's own theory-to-measured gap (65% for the Megatron baseline, 82%
      // for Pos): its runs stepped through coarse model shapes and carried framework memory we
      // do not model (fp32 gradient buckets, Adam temporaries, allocator fragmentation).
      // Stated tolerance: at most 1.7x the measured value (the baseline's gap is 1.6x).
      EXPECT_LT(ours, bound);
      EXPECT_GT(ours, measured);
      EXPECT_LT(ours, measured * 1.7);
    }
  }
}

// Largest GPT of the PatrickStar setting: 8x V100 32 GB, 240 GB host, seq 1024, each system
// in its own plan space (variants.h).
MaxSizeResult patrickstar_setting(VariantKind kind) {
  const Cluster c = load_cluster(std::string(STARFISH_SOURCE_DIR) + "/hwprofiles/v100-pcie-8x-240gb.yaml");
  MaxSizeOptions o;
  o.seq_len = 1024;
  o.heads_step = 8;
  // PatrickStar has no gradient accumulation: each GPU runs its batch as one micro-batch, 8
  // sequences here as in configs/plans/patrickstar-12b-v100-chunks.yaml (the default 4Mi-token
  // batch would be 512 sequences per GPU at once).
  o.global_batch = 64;
  o.search.space = system_variant(kind).space;
  o.search.top_k = 1;
  return max_model_size(c, o);
}

TEST(Reproduction, PatrickStarStyleTrainsThePublished18BAndZeroOffloadIsBoundByTheHost) {
  const auto rows = read_csv(data("patrickstar_max_model_scale_and_configs.csv"));
  double published_max = 0;
  for (const auto& r : rows)
    if (r.size() > 7 && r[0] == "max_model_scale" && r[3].find("V100") != std::string::npos)
      published_max = std::max(published_max, std::stod(r[7]) * 1e9);
  ASSERT_DOUBLE_EQ(published_max, 18e9);
  const MaxSizeResult chunked = patrickstar_setting(VariantKind::patrickstar);
  const MaxSizeResult offload = patrickstar_setting(VariantKind::zero_offload);
  ASSERT_TRUE(chunked.found);
  ASSERT_TRUE(offload.found);
  const double ratio = static_cast<double>(chunked.parameters) / offload.parameters;
  std::printf("PatrickStar setting: PatrickStar-style %.2fB (%s, then %s: %s), ZeRO-Offload %.2fB (%s, then %s: %s), "
              "ratio %.2f; published 18B and 2.27-2.5x\n",
              chunked.parameters / 1e9, chunked.best.rows.front().label().c_str(), constraint_name(chunked.binding),
              chunked.binding_detail.c_str(), offload.parameters / 1e9, offload.best.rows.front().label().c_str(),
              constraint_name(offload.binding), offload.binding_detail.c_str(), ratio);
  // One truth: both answers are plans the simulator ran and accepted.
  EXPECT_TRUE(has_simulated_answer(chunked.best));
  EXPECT_TRUE(has_simulated_answer(offload.best));
  // The chunk runtime uses the GPU's margin for the optimizer states the host cannot hold (at
  // the warm-up as after it), so PatrickStar-style reaches the published 18B, beyond what the
  // host alone holds at 14 bytes per parameter (fp16 params + fp32 master, momentum, variance).
  // PatrickStar's benchmark builds GPT2ForSequenceClassification (examples/model_builder.py): no
  // vocabulary-sized logits. Starfish's GPT keeps its LM head, whose loss holds 12 bytes per
  // logit in the executor (sim/cost/framework.h, loss_kernel): 8 sequences x 1,024 tokens x 50,257
  // logits take ~5 GB of each 32 GB GPU that PatrickStar's runs did not spend. Within 3% of 18B
  // with that head; the classification head is not expressible yet.
  const double host_bytes = 240e9 - 16.0 * (1LL << 30);
  EXPECT_GE(chunked.parameters, 0.97 * published_max);
  EXPECT_GT(chunked.parameters, host_bytes / 14.0);
  const Plan& ps = chunked.best.rows.front().plan;
  EXPECT_EQ(ps.tp, 1);
  EXPECT_EQ(ps.pp, 1);
  EXPECT_TRUE(ps.chunked());
  // ZeRO-Offload keeps on the host, per parameter, the fp32 master (4), its 16-bit copy (2), the
  // fp32 gradients (4) and CPU Adam's moments (8), the first three pinned and so rounded up to
  // powers of two (sim/cost/framework.h, zero_offload_host_bytes): below the host at 18 bytes.
  EXPECT_EQ(offload.binding, Constraint::cpu_memory);
  EXPECT_LT(offload.parameters, host_bytes / 18.0);
  // Published: PatrickStar 2.27-2.5x DeepSpeed's largest (arXiv 2108.05818), so DeepSpeed reached
  // 18B / 2.5 = 7.2B to 18B / 2.27 = 7.9B. Stated tolerance: within 25% of that range, for the
  // size and for the ratio.
  EXPECT_GE(offload.parameters, 0.75 * published_max / 2.5);
  EXPECT_LE(offload.parameters, 1.25 * published_max / 2.27);
  EXPECT_GE(ratio, 0.75 * 2.27);
  EXPECT_LE(ratio, 1.25 * 2.5);
}

}  // namespace
}  // namespace starfish::search

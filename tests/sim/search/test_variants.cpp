// Each training system's plan space (variants.h) holds only what that system can run, and holds
// the plan it is known for.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "sim/search/search.h"
#include "sim/search/variants.h"
#include "sim/spec/job.h"
#include "support.h"

namespace starfish::search {
namespace {

std::vector<Candidate> plans_of(VariantKind kind, bool chunk_nvme = false) {
  return enumerate_plans(search_test::small_gpt(), search_test::small_cluster(), search_test::fp16_training(16),
                         system_variant(kind, chunk_nvme).space);
}

bool has_nvme(const Candidate& k) {
  return k.params == Tier::nvme || k.grads == Tier::nvme || k.optimizer == Tier::nvme;
}

TEST(Variants, PatrickStarIsDataParallelChunksOverGpuAndCpuWithNvmeOnlyWhenAsked) {
  const auto plans = plans_of(VariantKind::patrickstar);
  ASSERT_FALSE(plans.empty());
  bool dp8 = false;
  for (const Candidate& k : plans) {
    EXPECT_EQ(k.tp, 1);
    EXPECT_EQ(k.pp, 1);
    EXPECT_GT(k.chunk_elements, 0);
    EXPECT_EQ(k.zero_stage, 3);
    EXPECT_FALSE(has_nvme(k)) << short_label(k);
    EXPECT_NE(k.recompute, Recompute::selective);
    dp8 |= k.dp == 8 && k.optimizer == Tier::cpu && k.chunk_elements == (int64_t{1} << 26);
  }
  EXPECT_TRUE(dp8) << "PatrickStar's own shape: DP over every GPU, 64Mi-element chunks, optimizer on the CPU";
  bool nvme = false;
  for (const Candidate& k : plans_of(VariantKind::patrickstar, true)) nvme |= has_nvme(k);
  EXPECT_TRUE(nvme);
}

// PatrickStar's use_cpu_embedding, where make_job admits it: an untied model (a tied head
// needs the embedding on the GPU); every other system keeps its embeddings where its other
// parameters are.
TEST(Variants, OnlyPatrickStarPutsTheEmbeddingsOnTheCpuAndOnlyForAnUntiedModel) {
  Model untied = search_test::small_gpt();
  untied.tied_embeddings = false;
  const Cluster c = search_test::small_cluster();
  const Training t = search_test::fp16_training(16);
  for (const SystemVariant& v : all_system_variants()) {
    int on_cpu = 0, in_chunks = 0;
    for (const Candidate& k : enumerate_plans(untied, c, t, v.space)) {
      (k.cpu_embedding ? on_cpu : in_chunks) += k.chunk_elements > 0;
      if (k.cpu_embedding) {
        EXPECT_EQ(plan_invalid_reason(untied, c, t, k.to_plan()), nullptr) << short_label(k);
        EXPECT_NE(short_label(k).find(" cpu-emb"), std::string::npos);
      }
    }
    if (v.kind == VariantKind::patrickstar) {
      EXPECT_GT(on_cpu, 0);
      EXPECT_EQ(on_cpu, in_chunks) << "each chunked plan with and without the CPU embedding";
    } else {
      EXPECT_EQ(on_cpu, 0) << v.name;
    }
    for (const Candidate& k : enumerate_plans(search_test::small_gpt(), c, t, v.space))
      EXPECT_FALSE(k.cpu_embedding) << v.name << ": " << short_label(k) << " with a tied head";
  }
  Plan tied = Plan{};
  tied.chunk_elements = 1 << 26;
  tied.micro_batch = 2;  // 16 sequences over DP 8, one micro-batch
  tied.cpu_embedding = true;
  EXPECT_STREQ(plan_invalid_reason(search_test::small_gpt(), c, t, tied), "the CPU embedding cannot serve a tied output head");
  EXPECT_TRUE(to_candidate(tied).to_plan().cpu_embedding);
}

TEST(Variants, ZeroInfinityIsStaticZero3OverEveryTierWithoutPipelines) {
  bool nvme = false, tp = false;
  for (const Candidate& k : plans_of(VariantKind::zero_infinity)) {
    EXPECT_EQ(k.chunk_elements, 0);
    EXPECT_EQ(k.zero_stage, 3);
    EXPECT_EQ(k.pp, 1);
    nvme |= k.params == Tier::nvme && k.optimizer == Tier::nvme;
    tp |= k.tp > 1;
  }
  EXPECT_TRUE(nvme);
  EXPECT_TRUE(tp);
}

TEST(Variants, Megatron3dKeepsEveryStateOnTheGpuWithAtMostTheDistributedOptimizer) {
  bool pp = false, tp = false, distributed = false;
  for (const Candidate& k : plans_of(VariantKind::megatron_3d)) {
    EXPECT_EQ(k.chunk_elements, 0);
    EXPECT_LE(k.zero_stage, 1);
    EXPECT_FALSE(k.params != Tier::gpu || k.grads != Tier::gpu || k.optimizer != Tier::gpu) << short_label(k);
    pp |= k.pp > 1;
    tp |= k.tp > 1;
    distributed |= k.zero_stage == 1;
  }
  EXPECT_TRUE(pp && tp && distributed);
}

TEST(Variants, EachVariantsPlansAreRunByItsFramework) {
  const Model m = search_test::small_gpt();
  const Cluster c = search_test::small_cluster();
  for (const auto& [kind, framework] : {std::pair{VariantKind::patrickstar, Framework::starfish},
                                        std::pair{VariantKind::zero_offload, Framework::deepspeed},
                                        std::pair{VariantKind::megatron_3d, Framework::megatron_lm}}) {
    SearchOptions o;
    o.space = system_variant(kind).space;
    o.top_k = 3;
    o.threads = 1;
    const SearchResult r = search(m, c, search_test::fp16_training(8), o);
    ASSERT_FALSE(r.rows.empty()) << system_variant(kind).name;
    for (const Row& row : r.rows) {
      EXPECT_EQ(row.plan.framework, framework) << system_variant(kind).name;
      EXPECT_EQ(r.job(row).plan.framework, framework);
    }
  }
}

TEST(Variants, AllVariantsHaveDistinctKeysForTheirFiles) {
  std::set<std::string> keys;
  for (const SystemVariant& v : all_system_variants()) keys.insert(v.key);
  EXPECT_EQ(keys, (std::set<std::string>{"any", "patrickstar", "zero-offload", "zero-infinity", "megatron-3d"}));
}

}  // namespace
}  // namespace starfish::search

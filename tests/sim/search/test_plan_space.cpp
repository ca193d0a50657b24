// The enumerator yields only valid plans, and every valid plan of the space (brute force).
#include <gtest/gtest.h>

#include <set>
#include <tuple>

#include "sim/search/plan_space.h"
#include "sim/search/variants.h"
#include "sim/spec/error.h"
#include "sim/spec/job.h"
#include "support.h"

namespace starfish::search {
namespace {

using Key = std::tuple<int, int, int, int, int, int64_t, int, int, int, bool, int, int, int, int>;
Key key(const Plan& p) {
  return {p.tp, p.pp, p.dp, p.virtual_stages, p.micro_batch, p.chunk_elements, p.zero_stage,
          static_cast<int>(p.schedule), static_cast<int>(p.recompute), p.sequence_parallel,
          static_cast<int>(p.offload.params), static_cast<int>(p.offload.grads), static_cast<int>(p.offload.optimizer),
          static_cast<int>(p.framework)};
}

bool make_job_accepts(const Model& m, const Cluster& c, const Training& t, const Plan& p) {
  try {
    make_job(m, c, t, p);
    return true;
  } catch (const SpecError&) {
    return false;
  }
}

// Every combination of the raw axes, far beyond what is valid. The structural axes (TP, PP, v,
// micro-batch, schedule) are crossed first with a neutral rest; `expand(plan)` says whether to
// cross that structure with every ZeRO stage, offload triple, chunk size, recompute and SP too
// (crossing all of them everywhere would be 30 M make_job calls). `visit` sees each plan, dp 0.
template <typename E, typename F>
void brute_force(const Model& m, const SearchSpace& s, int64_t batch, int max_tp, E expand, F visit) {
  const Tier tiers[] = {Tier::gpu, Tier::cpu, Tier::nvme};
  for (int tp = 1; tp <= max_tp; ++tp)
    for (int pp = 1; pp <= m.layers; ++pp)
      for (int v = 1; v <= m.layers; ++v)
        for (int b = 1; b <= batch; ++b)
          for (Schedule sc : {Schedule::gpipe, Schedule::one_f_one_b, Schedule::interleaved}) {
            Plan base;
            base.tp = tp;
            base.pp = pp;
            base.virtual_stages = v;
            base.micro_batch = b;
            base.schedule = sc;
            if (!expand(base)) {
              visit(base);
              continue;
            }
            for (int z = 0; z <= 3; ++z)
              for (Tier tp_ : tiers)
                for (Tier tg : tiers)
                  for (Tier to : tiers)
                    for (int64_t chunk : s.chunk_elements)
                      for (Recompute rc : {Recompute::none, Recompute::selective, Recompute::full})
                        for (bool sp : {false, true}) {
                          Plan p = base;
                          p.zero_stage = z;
                          p.offload = Offload{tp_, tg, to};
                          p.chunk_elements = chunk;
                          p.recompute = rc;
                          p.sequence_parallel = sp;
                          // Every framework that runs the placement (the search hands the
                          // space's framework's leftovers to the one that can).
                          for (Framework f : {Framework::megatron_lm, Framework::deepspeed, Framework::fsdp,
                                              Framework::starfish}) {
                            p.framework = f;
                            if (f == Framework::megatron_lm || placement_problem(p).why.empty()) visit(p);
                          }
                        }
          }
}

TEST(PlanSpace, EveryEnumeratedPlanPassesMakeJob) {
  const Model m = search_test::small_gpt();
  const Cluster c = search_test::small_cluster();
  const Training t = search_test::fp16_training(16);
  const auto plans = enumerate_plans(m, c, t, SearchSpace{});
  ASSERT_GT(plans.size(), 1000u);
  for (const Candidate& k : plans) {
    Plan p = k.to_plan();
    const Job job = make_job(m, c, t, p);  // throws on an invalid plan
    EXPECT_EQ(job.plan.dp, k.dp);
    EXPECT_EQ(key(job.plan), key(p));
  }
}

TEST(PlanSpace, EnumerationEqualsBruteForceOfTheSmallCase) {
  const Model m = search_test::small_gpt();
  const Cluster c = search_test::small_cluster();
  const Training t = search_test::fp16_training(16);
  SearchSpace s;
  s.chunk_elements = {0, 1 << 20};
  std::set<Key> enumerated;
  for (const Candidate& k : enumerate_plans(m, c, t, s)) EXPECT_TRUE(enumerated.insert(key(k.to_plan())).second);
  std::set<Key> brute;
  auto structure_valid = [&](const Plan& p) { return make_job_accepts(m, c, t, p); };
  brute_force(m, s, t.global_batch, 8, structure_valid, [&](Plan p) {
    if (!make_job_accepts(m, c, t, p)) return;
    p.dp = c.total_gpus() / (p.tp * p.pp);
    if (is_enumerated_shape(p, c, s)) brute.insert(key(p));
  });
  EXPECT_EQ(enumerated.size(), brute.size());
  EXPECT_TRUE(enumerated == brute);
}

// bf16 layers (Plan::bf16_layers) need fp8 GEMMs: the precheck refuses them as make_job does.
TEST(PlanSpace, PrecheckRefusesBf16LayersWithoutFp8) {
  const Model m = search_test::small_gpt(6, 384, 6);
  const Cluster c = search_test::small_cluster(1);
  const Training t = search_test::fp16_training(8);
  Plan p;
  p.bf16_layers = {1, 1};
  EXPECT_FALSE(make_job_accepts(m, c, t, p));
  EXPECT_STREQ(plan_invalid_reason(m, c, t, p), "quantized GEMMs cannot run");
  p.dp = c.total_gpus();
  EXPECT_FALSE(is_enumerated_shape(p, c, SearchSpace{}));  // the space keeps every layer in fp8
  p.bf16_layers = {};
  EXPECT_EQ(plan_invalid_reason(m, c, t, p), nullptr);
  EXPECT_TRUE(is_enumerated_shape(p, c, SearchSpace{}));
}

TEST(PlanSpace, PrecheckAgreesWithMakeJob) {
  const Model m = search_test::small_gpt(6, 384, 6);
  Cluster c = search_test::small_cluster(1);
  c.node.nvme.reset();  // so offload to NVMe is invalid
  const Training t = search_test::fp16_training(8);
  SearchSpace s;
  s.chunk_elements = {0, 512, 4096};
  int64_t valid = 0, checked = 0, expanded_invalid = 0;
  // Cross the rest with every valid structure and with the first 30 invalid ones.
  auto expand = [&](const Plan& p) { return make_job_accepts(m, c, t, p) || expanded_invalid++ < 30; };
  brute_force(m, s, t.global_batch, 6, expand, [&](const Plan& p) {
    const bool ok = make_job_accepts(m, c, t, p);
    EXPECT_EQ(plan_invalid_reason(m, c, t, p) == nullptr, ok);
    valid += ok;
    ++checked;
  });
  EXPECT_GT(valid, 100);
  EXPECT_GT(checked, valid * 10);
}

// The space proposes nothing make_job refuses: on 3 nodes of 4 GPUs a 6-head model admits TP 3
// and 6 by the GPU count, but their groups would straddle nodes; and a chunked plan runs the
// rank's batch as one micro-batch.
TEST(PlanSpace, NoTpThatStraddlesNodesAndOneMicroBatchPerChunkedPlan) {
  const Model m = search_test::small_gpt(6, 384, 6);
  const Cluster c = search_test::small_cluster(3);  // 12 GPUs
  const Training t = search_test::fp16_training(24);
  const auto plans = enumerate_plans(m, c, t, SearchSpace{});
  ASSERT_FALSE(plans.empty());
  std::set<int> tps;
  for (const Candidate& k : plans) {
    tps.insert(k.tp);
    if (k.chunk_elements > 0) {
      EXPECT_EQ(int64_t{k.micro_batch} * k.dp, t.global_batch);
    }
    make_job(m, c, t, k.to_plan());  // throws on a plan make_job refuses
  }
  EXPECT_EQ(tps, (std::set<int>{1, 2}));
  Plan p;
  p.tp = 3;
  EXPECT_STREQ(plan_invalid_reason(m, c, t, p), "TP groups would straddle nodes");
}

TEST(PlanSpace, ZeroOffloadKeepsParamsOnTheGpuAndGradsAndOptimizerOnTheCpu) {
  const Model m = search_test::small_gpt();
  const Cluster c = search_test::small_cluster();
  for (const Candidate& k : enumerate_plans(m, c, search_test::fp16_training(16), system_variant(VariantKind::zero_offload).space)) {
    EXPECT_EQ(k.chunk_elements, 0);
    EXPECT_EQ(k.params, Tier::gpu);
    EXPECT_EQ(k.grads, Tier::cpu);
    EXPECT_EQ(k.optimizer, Tier::cpu);
    EXPECT_EQ(k.zero_stage, 2);
    EXPECT_EQ(k.pp, 1);
  }
}

TEST(PlanSpace, APipelineThatDoesNotDivideTheLayersGetsLighterEnds) {
  // 6 layers on 8 GPUs: PP4 does not divide them, so the search proposes 1 + 2 + 2 + 1 (Megatron-
  // core's first/last stage layers) and make_job accepts every such plan as it is.
  const Model m = search_test::small_gpt(6, 384, 6);
  const Cluster c = search_test::small_cluster();
  const Training t = search_test::fp16_training(8);
  int uneven = 0;
  for (const Candidate& k : enumerate_plans(m, c, t, SearchSpace{})) {
    if (k.pp != 4) {
      EXPECT_EQ(k.first_stage_layers + k.last_stage_layers, 0);
      continue;
    }
    ++uneven;
    EXPECT_EQ(k.first_stage_layers, 1);
    EXPECT_EQ(k.last_stage_layers, 1);
    EXPECT_EQ(plan_invalid_reason(m, c, t, k.to_plan()), nullptr);
    if (uneven == 1) {
      EXPECT_NO_THROW(make_job(m, c, t, k.to_plan()));
    }
  }
  EXPECT_GT(uneven, 0);
}

// The search reduces gradients overlapped where the framework does: Megatron-core's ZeRO-0/1 plans
// (as Megatron-Bridge's recipes run them) and FSDP's ZeRO-2 (SHARD_GRAD_OP reduce-scatters each
// unit on its post-backward stream, always); DeepSpeed's stay off (overlap_comm's default for
// ZeRO-1/2), and an enumerated shape holds a plan to the rule.
TEST(PlanSpace, TheSearchOverlapsGradientReductionWhereTheFrameworkDoes) {
  const Model m = search_test::small_gpt(4, 384, 6);
  const Cluster c = search_test::small_cluster();
  const Training t = search_test::fp16_training(8);
  for (Framework f : {Framework::megatron_core, Framework::fsdp, Framework::deepspeed}) {
    SearchSpace space;
    space.framework = f;
    std::set<int> overlapped_stages, plain_stages;
    for (const Candidate& k : enumerate_plans(m, c, t, space)) {
      const Plan p = k.to_plan();
      if (p.chunked() || p.framework != f) continue;  // (a space's offload plans run under DeepSpeed)
      (p.overlap_grad_reduce ? overlapped_stages : plain_stages).insert(p.zero_stage);
    }
    if (f == Framework::megatron_core) {
      EXPECT_TRUE(overlapped_stages.count(1));
      EXPECT_TRUE(plain_stages.count(2));  // no ZeRO-2 of its own to say otherwise
      EXPECT_FALSE(plain_stages.count(0) || plain_stages.count(1));
    } else if (f == Framework::fsdp) {
      EXPECT_TRUE(overlapped_stages.count(2));
      EXPECT_FALSE(plain_stages.count(2));
    } else {
      EXPECT_TRUE(overlapped_stages.empty()) << to_string(f);
    }
  }
}

TEST(PlanSpace, InterleavingThatDoesNotDivideTheLayersCountsTheEmbeddingAndLoss) {
  // 6 layers over PP2 x VP2 (4 virtual stages): 6 do not divide, 6 + the embedding's and the
  // loss's slots do (2 each, 1 in the first and last), as Megatron-Bridge's recipes run Llama 3.1
  // 405B; VP3 divides evenly, VP4 would leave an end without a layer. Megatron-core spaces only.
  const Model m = search_test::small_gpt(6, 384, 6);
  const Cluster c = search_test::small_cluster();
  const Training t = search_test::fp16_training(8);
  SearchSpace space;
  space.framework = Framework::megatron_core;
  space.pp = {2};
  space.schedules = {Schedule::interleaved};
  std::set<int> slotted, even;
  for (const Candidate& k : enumerate_plans(m, c, t, space)) {
    ASSERT_EQ(k.embedding_slot, k.loss_slot);
    (k.embedding_slot ? slotted : even).insert(k.virtual_stages);
    EXPECT_EQ(plan_invalid_reason(m, c, t, k.to_plan()), nullptr) << short_label(k);
    if (k.embedding_slot) {
      EXPECT_NE(short_label(k).find(" slots:emb+loss"), std::string::npos) << short_label(k);
    }
  }
  EXPECT_EQ(slotted, (std::set<int>{2}));
  EXPECT_EQ(even, (std::set<int>{3}));
  Candidate k;
  k.pp = 2;
  k.virtual_stages = 2;
  k.schedule = Schedule::interleaved;
  k.embedding_slot = k.loss_slot = true;
  EXPECT_EQ(to_candidate(k.to_plan()).embedding_slot, true);
  space.framework = Framework::megatron_lm;
  for (const Candidate& any : enumerate_plans(m, c, t, space)) EXPECT_FALSE(any.embedding_slot || any.loss_slot);
}

TEST(PlanSpace, MixtureOfExpertsPlansSpanExpertParallelismAndPassMakeJob) {
  // 8 experts on 8 GPUs: EP in {1, 2, 4, 8} within TP x DP, SP whenever TP > 1, no ZeRO-3, no
  // chunks; every candidate is one make_job accepts.
  Model m = search_test::small_gpt(4, 384, 6);
  m.moe = Moe{8, 2, 0, 768, 0, 1, 0};
  const Cluster c = search_test::small_cluster();
  const Training t = search_test::fp16_training(16);
  std::set<int> eps;
  const std::vector<Candidate> all = enumerate_plans(m, c, t, SearchSpace{});
  ASSERT_FALSE(all.empty());
  for (size_t i = 0; i < all.size(); ++i) {
    const Candidate& k = all[i];
    eps.insert(k.ep);
    EXPECT_LT(k.zero_stage, 3);
    EXPECT_EQ(k.chunk_elements, 0);
    if (k.tp > 1) {
      EXPECT_TRUE(k.sequence_parallel);
    }
    EXPECT_EQ(plan_invalid_reason(m, c, t, k.to_plan()), nullptr) << short_label(k);
    if (i % 97 == 0) {
      EXPECT_NO_THROW(make_job(m, c, t, k.to_plan())) << short_label(k);
    }
  }
  EXPECT_EQ(eps, (std::set<int>{1, 2, 4, 8}));
}

TEST(PlanSpace, MoeSelectiveRecomputationAlsoRedoesTheExpertsActivationAndNorm) {
  // Under Megatron-core an MoE model's selective recomputation is tried with the attention core
  // alone and with the experts' activation and the pre-MLP norm (Megatron-Bridge's GPT-OSS
  // recipes); every such plan is one make_job accepts. A dense model, or another framework, has
  // the attention core only.
  namespace rm = recompute_module;
  Model m = search_test::small_gpt(4, 384, 6);
  m.moe = Moe{8, 2, 0, 768, 0, 1, 0};
  const Cluster c = search_test::small_cluster();
  const Training t = search_test::fp16_training(16);
  SearchSpace space;
  space.framework = Framework::megatron_core;
  space.recompute = {Recompute::selective};
  std::set<int> modules;
  int checked = 0;
  for (const Candidate& k : enumerate_plans(m, c, t, space)) {
    modules.insert(k.recompute_modules);
    if (k.recompute_modules != rm::core_attn && checked++ % 13 == 0) {
      EXPECT_NO_THROW(make_job(m, c, t, k.to_plan())) << short_label(k);
      EXPECT_NE(short_label(k).find("rc-selective(core_attn,moe_act,layernorm)"), std::string::npos) << short_label(k);
    }
  }
  EXPECT_EQ(modules, (std::set<int>{rm::core_attn, rm::core_attn | rm::moe_act | rm::layernorm}));
  EXPECT_GT(checked, 0);
  space.framework = Framework::megatron_lm;
  for (const Candidate& k : enumerate_plans(m, c, t, space)) EXPECT_EQ(k.recompute_modules, rm::core_attn);
  space.framework = Framework::megatron_core;
  for (const Candidate& k : enumerate_plans(search_test::small_gpt(4, 384, 6), c, t, space))
    EXPECT_EQ(k.recompute_modules, rm::core_attn);
}

TEST(PlanSpace, ABatchThatAdmitsNoPlanIsAnEmptySpaceAndZeroBatchAnError) {
  const Model m = search_test::small_gpt(6, 384, 6);
  // 8 GPUs, TP 1: PP in {1, 2, 4} (at most the 6 layers; PP4 as 1 + 2 + 2 + 1), so DP in {2, 4, 8}.
  const Cluster c = search_test::small_cluster();
  SearchSpace tp1;
  tp1.tp = {1};
  EXPECT_TRUE(enumerate_plans(m, c, search_test::fp16_training(3), tp1).empty());
  // TP2 x PP4 on uneven stages leaves DP 1, which takes any batch.
  EXPECT_FALSE(enumerate_plans(m, c, search_test::fp16_training(3), SearchSpace{}).empty());
  try {
    enumerate_plans(m, c, search_test::fp16_training(0), SearchSpace{});
    FAIL() << "no error";
  } catch (const SpecError& e) {
    EXPECT_STREQ(e.what(), "search: the global batch must be at least 1 sequence");
  }
}

}  // namespace
TEST(PlanSpace, ContextParallelismIsTriedForLongSequencesUnderMegatronCore) {
  Model m = search_test::small_gpt(4, 512, 8);
  m.seq_len = 16384;
  SearchSpace s;
  s.chunk_elements = {0, 1 << 20};
  EXPECT_EQ(context_parallel_degrees(m, s), (std::vector<int>{1}));  // Megatron-LM: no ring attention
  s.framework = Framework::megatron_core;
  // Powers of two that leave each rank at least 4096 tokens, their 2 x CP chunks dividing 16384.
  EXPECT_EQ(context_parallel_degrees(m, s), (std::vector<int>{1, 2, 4}));
  Model short_seq = m;
  short_seq.seq_len = 4096;
  EXPECT_EQ(context_parallel_degrees(short_seq, s), (std::vector<int>{1}));
  const Cluster c = search_test::small_cluster();  // 8 GPUs
  const Training t = search_test::fp16_training(16);
  int64_t with_cp = 0;
  for (const Candidate& k : enumerate_plans(m, c, t, s)) {
    if (k.cp == 1) continue;
    ++with_cp;
    EXPECT_EQ(k.chunk_elements, 0);
    EXPECT_EQ(int64_t{k.tp} * k.cp * k.pp * k.dp, c.total_gpus());
    Plan p = k.to_plan();
    p.framework = s.framework;
    EXPECT_EQ(plan_invalid_reason(m, c, t, p), nullptr) << short_label(k);
    if (with_cp % 53 == 1) {
      EXPECT_NO_THROW(make_job(m, c, t, p)) << short_label(k);
    }
    EXPECT_NE(short_label(k).find(" CP" + std::to_string(k.cp) + " "), std::string::npos) << short_label(k);
  }
  EXPECT_GT(with_cp, 100);
  // The precheck refuses what make_job refuses.
  Plan bad;
  bad.cp = 3;  // 2 x 3 does not divide 16384
  bad.framework = Framework::megatron_core;
  EXPECT_FALSE(make_job_accepts(m, c, t, bad));
  EXPECT_STREQ(plan_invalid_reason(m, c, t, bad), "2 x CP does not divide the sequence");
  bad.cp = 2;
  bad.framework = Framework::megatron_lm;
  EXPECT_FALSE(make_job_accepts(m, c, t, bad));
  EXPECT_STREQ(plan_invalid_reason(m, c, t, bad), "context parallelism is modelled under Megatron-core only");
}

TEST(PlanSpace, Fp8GemmsAreTriedUnderMegatronCoreOnAGpuWithAnFp8Peak) {
  const Model m = search_test::small_gpt(4, 384, 6);
  Cluster c = search_test::small_cluster();
  const Training t = search_test::fp16_training(16);
  SearchSpace s;
  s.chunk_elements = {0, 1 << 20};
  s.framework = Framework::megatron_core;
  int64_t with_params = 0;
  auto count_fp8 = [&](const SearchSpace& space) {
    int64_t n = 0, all = 0;
    for (const Candidate& k : enumerate_plans(m, c, t, space)) {
      ++all;
      if (k.fp8 == Fp8::none) continue;
      ++n;
      EXPECT_EQ(k.chunk_elements, 0);
      Plan p = k.to_plan();
      p.framework = space.framework;
      EXPECT_EQ(plan_invalid_reason(m, c, t, p), nullptr) << short_label(k);
      if (n % 97 == 1) {
        EXPECT_NO_THROW(make_job(m, c, t, p)) << short_label(k);
      }
      EXPECT_NE(short_label(k).find(" fp8-hybrid"), std::string::npos);
      EXPECT_TRUE(is_enumerated_shape(p, c, space));
      // fp8 params where the distributed optimizer gathers them (Megatron-Bridge's fp8 recipes),
      // and only there: the other setting is not a plan the space holds.
      const bool gathered = (p.zero_stage == 1 || p.zero_stage == 2) && p.offload.params == Tier::gpu;
      EXPECT_EQ(p.fp8_params, gathered) << short_label(k);
      with_params += p.fp8_params ? 1 : 0;
      p.fp8_params = !p.fp8_params;
      EXPECT_FALSE(is_enumerated_shape(p, c, space)) << short_label(k);
    }
    return std::make_pair(n, all);
  };
  EXPECT_EQ(count_fp8(s).first, 0);  // no fp8 peak on this GPU
  c.node.gpu.peak_flops[DType::fp8] = 2 * c.node.gpu.peak_flops.at(DType::fp16);
  const auto [fp8, all] = count_fp8(s);
  EXPECT_GT(fp8, 0);
  EXPECT_GT(with_params, 0);
  s.framework = Framework::megatron_lm;  // TransformerEngine's fp8 is modelled under Megatron-core only
  EXPECT_EQ(count_fp8(s).first, 0);
  s.framework = Framework::megatron_core;
  s.fp8 = {Fp8::none};  // --no-fp8
  EXPECT_EQ(count_fp8(s).first, 0);
  // Each static plan once without and once with fp8; chunked plans without only.
  EXPECT_EQ(count_fp8(s).second + fp8, all);
}

}  // namespace starfish::search

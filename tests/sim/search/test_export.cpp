// Exporters: Megatron-LM arguments, DeepSpeed config and the plan file, for known plans.
#include <gtest/gtest.h>

#include "sim/search/plan_export.h"
#include "sim/spec/error.h"
#include "sim/spec/spec_io.h"
#include "support.h"

namespace starfish::search {
namespace {

Job job_with(const Plan& p, int64_t batch = 64) {
  Model m = search_test::small_gpt(8, 512, 8);
  return make_job(m, search_test::small_cluster(4), search_test::fp16_training(batch), p);  // 16 GPUs
}

TEST(Export, MegatronArgumentsOfAnInterleavedZero1Plan) {
  Plan p;
  p.tp = 2;
  p.pp = 2;
  p.virtual_stages = 2;
  p.schedule = Schedule::interleaved;
  p.micro_batch = 2;
  p.sequence_parallel = true;
  p.recompute = Recompute::full;
  p.zero_stage = 1;
  p.overlap_grad_reduce = true;
  const std::string a = megatron_arguments(job_with(p));
  for (const char* expected :
       {"  --tensor-model-parallel-size 2 \\\n", "  --pipeline-model-parallel-size 2 \\\n",
        "  --num-layers-per-virtual-pipeline-stage 2 \\\n", "  --micro-batch-size 2 \\\n",
        "  --global-batch-size 64 \\\n", "  --sequence-parallel \\\n", "  --recompute-granularity full \\\n",
        "  --recompute-method uniform \\\n", "  --use-distributed-optimizer \\\n", "  --overlap-grad-reduce \\\n", "  --fp16 \\\n",
        "  --num-layers 8 \\\n", "  --hidden-size 512 \\\n", "  --seq-length 512 \\\n"})
    EXPECT_NE(a.find(expected), std::string::npos) << expected << " missing in\n" << a;
  EXPECT_EQ(a.find("--bf16"), std::string::npos);
  EXPECT_EQ(a.substr(a.size() - 2), "0\n");  // the last line has no continuation
}

TEST(Export, MegatronCarriesUnevenStagesAsMegatronCoreFlags) {
  // 8 layers over PP2 as 3 + 5: Megatron-core's first/last stage layer counts.
  Plan p;
  p.pp = 2;
  p.stage_layers.first = 3;
  p.stage_layers.last = 5;
  const std::string a = megatron_arguments(job_with(p));
  EXPECT_NE(a.find("  --decoder-first-pipeline-num-layers 3 \\\n"), std::string::npos) << a;
  EXPECT_NE(a.find("  --decoder-last-pipeline-num-layers 5 \\\n"), std::string::npos) << a;
  // Interleaved: the chunks per stage, not a layer count per chunk (they differ by stage).
  p.schedule = Schedule::interleaved;
  p.virtual_stages = 2;
  p.stage_layers.first = 2;
  p.stage_layers.last = 6;
  const std::string i = megatron_arguments(job_with(p));
  EXPECT_NE(i.find("  --num-virtual-stages-per-pipeline-rank 2 \\\n"), std::string::npos) << i;
  EXPECT_EQ(i.find("--num-layers-per-virtual-pipeline-stage"), std::string::npos) << i;
  // A per-stage list has no Megatron flag Starfish writes; DeepSpeed partitions by its own method.
  p = Plan{};
  p.pp = 2;
  p.stage_layers.per_stage = {3, 5};
  EXPECT_NE(megatron_unsupported(job_with(p)).find("per-stage layer lists"), std::string::npos);
  EXPECT_NE(deepspeed_unsupported(job_with(p)).find("partition_method"), std::string::npos);
}

TEST(Export, MegatronCarriesTheExpertsAndTheirLayout) {
  Model m = search_test::small_gpt(4, 512, 8);
  m.moe = Moe{8, 2, 1, 1024, 1, 1, 1.25};
  Plan p;
  p.tp = 2;
  p.sequence_parallel = true;
  p.ep = 4;
  p.etp = 1;
  const Job j = make_job(m, search_test::small_cluster(4), search_test::fp16_training(64), p);
  const std::string a = megatron_arguments(j);
  for (const char* expected :
       {"  --num-experts 8 \\\n", "  --moe-router-topk 2 \\\n", "  --moe-ffn-hidden-size 1024 \\\n",
        "  --moe-shared-expert-intermediate-size 1024 \\\n", "  --moe-layer-freq \"[0,1,1,1]\" \\\n",
        "  --moe-expert-capacity-factor 1.25 \\\n", "  --expert-model-parallel-size 4 \\\n",
        "  --expert-tensor-parallel-size 1 \\\n", "  --moe-grouped-gemm \\\n"})
    EXPECT_NE(a.find(expected), std::string::npos) << expected << " missing in\n" << a;
  EXPECT_NE(deepspeed_unsupported(j).find("DeepSpeed-MoE"), std::string::npos);
}

TEST(Export, MegatronRefusesZero3AndOffload) {
  Plan p;
  p.zero_stage = 3;
  try {
    megatron_arguments(job_with(p));
    FAIL();
  } catch (const SpecError& e) {
    EXPECT_STREQ(e.what(), "--megatron: Megatron-LM has no ZeRO stage 3 (its distributed optimizer is ZeRO-1)");
  }
  p.zero_stage = 1;
  p.offload.optimizer = Tier::cpu;
  EXPECT_EQ(megatron_unsupported(job_with(p)), "Megatron-LM does not offload model states to CPU or NVMe");
}

TEST(Export, DeepSpeedConfigOfZeroInfinity) {
  Plan p;
  p.zero_stage = 3;
  p.micro_batch = 2;
  p.offload = Offload{Tier::cpu, Tier::nvme, Tier::nvme};
  const Job job = job_with(p);
  ASSERT_EQ(job.micro_batches(), 2);  // 64 / (2 x 16)
  const std::string c = deepspeed_config(job);
  for (const char* expected :
       {"\"train_batch_size\": 64", "\"train_micro_batch_size_per_gpu\": 2", "\"gradient_accumulation_steps\": 2",
        "\"stage\": 3", "\"offload_optimizer\": {\n      \"device\": \"nvme\"", "\"offload_param\": {\n      \"device\": \"cpu\"",
        "\"fp16\": {\n    \"enabled\": true"})
    EXPECT_NE(c.find(expected), std::string::npos) << expected << " missing in\n" << c;
}

TEST(Export, DeepSpeedRefusesChunks) {
  Plan p;
  p.chunk_elements = 1 << 20;
  p.micro_batch = 4;  // 64 sequences over 16 ranks: the chunk runtime's one micro-batch
  EXPECT_EQ(deepspeed_unsupported(job_with(p)), "DeepSpeed has no chunk runtime (PatrickStar-style chunks)");
}

TEST(Export, PlanFileRoundTrips) {
  Plan p;
  p.tp = 4;
  p.zero_stage = 2;
  p.chunk_elements = 1 << 20;
  p.micro_batch = 16;  // 64 sequences over DP 4: one micro-batch
  p.offload.params = Tier::cpu;
  p.offload.grads = Tier::cpu;
  p.offload.optimizer = Tier::cpu;
  const Job job = job_with(p);
  const PlanFile f = parse_plan_file_text(plan_file_yaml(job, "m.yaml", "h.yaml"));
  EXPECT_EQ(f.plan, job.plan);
  EXPECT_EQ(f.training, job.training);
  EXPECT_EQ(f.model_path.value_or(""), "m.yaml");
  EXPECT_EQ(f.hardware_path.value_or(""), "h.yaml");
}

}  // namespace
}  // namespace starfish::search

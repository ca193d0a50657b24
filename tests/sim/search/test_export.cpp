// Exporters: Megatron-LM arguments, DeepSpeed config and the plan file. Every argument and key
// written is checked against the framework's own schema, extracted from its source into
// configs/frameworks/ (scripts/extract-*.py); every combination a framework refuses gives a
// one-line reason naming the plan field.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "sim/cost/framework.h"
#include "sim/cost/params.h"
#include "sim/search/plan_export.h"
#include "sim/search/search.h"
#include "sim/spec/error.h"
#include "sim/spec/json_reader.h"
#include "sim/spec/spec_io.h"
#include "support.h"

namespace starfish::search {
namespace {

Job job_with(const Plan& p, int64_t batch = 64) {
  Model m = search_test::small_gpt(8, 512, 8);
  return make_job(m, search_test::small_cluster(4), search_test::fp16_training(batch), p);  // 16 GPUs
}

// A Megatron-core plan training in bf16, the base of the precision and Megatron-Bridge cases.
Job megatron_core_bf16_job() {
  Job job = job_with(Plan{});
  job.plan.framework = Framework::megatron_core;
  job.training.dtype = DType::bf16;
  return job;
}

// The job of `p` as an export sees it, also where make_job refuses the plan (the framework's
// rules, job.h): an export's own refusal must hold without make_job's.
Job export_job(const Plan& p) {
  Plan base;
  base.framework = p.framework == Framework::starfish ? Framework::megatron_lm : p.framework;
  Job job = job_with(base);
  const int dp = job.plan.dp / (p.tp * p.pp * p.cp);
  job.plan = p;
  job.plan.dp = dp;
  return job;
}

Job job_with_model(const Model& m) {
  return make_job(m, search_test::small_cluster(4), search_test::fp16_training(64), Plan{});
}

Plan deepspeed_plan() {
  Plan p;
  p.framework = Framework::deepspeed;
  return p;
}

std::string framework_file(const std::string& name) {
  return std::string(STARFISH_SOURCE_DIR) + "/configs/frameworks/" + name;
}

// configs/frameworks/megatron-lm-arguments.txt: "--name flag" or "--name value [choices]".
struct MegatronArgument {
  bool flag = false;
  std::set<std::string> choices;  // empty: any value
};
const std::map<std::string, MegatronArgument>& megatron_schema() {
  static const std::map<std::string, MegatronArgument> schema = [] {
    std::map<std::string, MegatronArgument> s;
    std::ifstream in(framework_file("megatron-lm-arguments.txt"));
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty() || line[0] == '#') continue;
      std::istringstream words(line);
      std::string name, kind, choices;
      words >> name >> kind >> choices;
      MegatronArgument a;
      a.flag = kind == "flag";
      std::istringstream list(choices);
      for (std::string c; std::getline(list, c, ',');) a.choices.insert(c);
      s[name] = a;
    }
    return s;
  }();
  return schema;
}

const std::set<std::string>& deepspeed_schema() {
  static const std::set<std::string> keys = [] {
    std::set<std::string> k;
    std::ifstream in(framework_file("deepspeed-config-keys.txt"));
    for (std::string line; std::getline(in, line);)
      if (!line.empty() && line[0] != '#') k.insert(line);
    return k;
  }();
  return keys;
}

void expect_megatron_accepts(const Job& job) {
  ASSERT_GT(megatron_schema().size(), 500u) << "configs/frameworks/megatron-lm-arguments.txt unreadable";
  for (const auto& [name, value] : megatron_argument_list(job)) {
    const auto it = megatron_schema().find(name);
    ASSERT_NE(it, megatron_schema().end()) << name << " is no Megatron-LM argument";
    EXPECT_EQ(it->second.flag, value.empty()) << name << (it->second.flag ? " takes no value" : " needs a value");
    if (!it->second.choices.empty()) {
      EXPECT_TRUE(it->second.choices.count(value)) << name << " " << value;
    }
  }
}

void expect_keys_in_schema(const JsonValue& v, const std::string& path) {
  for (const auto& [key, child] : v.object) {
    const std::string dotted = path.empty() ? key : path + "." + key;
    if (deepspeed_schema().count(path + ".*")) continue;  // free-form (optimizer params)
    EXPECT_TRUE(deepspeed_schema().count(dotted)) << dotted << " is no DeepSpeed config key";
    if (child.type == JsonValue::Type::object) {
      expect_keys_in_schema(child, dotted);
    }
  }
}

void expect_deepspeed_accepts(const Job& job) {
  ASSERT_GT(deepspeed_schema().size(), 100u) << "configs/frameworks/deepspeed-config-keys.txt unreadable";
  expect_keys_in_schema(parse_json(deepspeed_config(job)), "");
}

// configs/frameworks/megatron-bridge-overrides.txt: "section.field [choices]" per line.
const std::map<std::string, std::set<std::string>>& bridge_schema() {
  static const std::map<std::string, std::set<std::string>> schema = [] {
    std::map<std::string, std::set<std::string>> s;
    std::ifstream in(framework_file("megatron-bridge-overrides.txt"));
    for (std::string line; std::getline(in, line);) {
      if (line.empty() || line[0] == '#') continue;
      std::istringstream words(line);
      std::string key, choices;
      words >> key >> choices;
      std::istringstream list(choices);
      auto& set = s[key];
      for (std::string c; std::getline(list, c, ',');) set.insert(c);
    }
    return s;
  }();
  return schema;
}

void expect_bridge_accepts(const Job& job) {
  ASSERT_GT(bridge_schema().size(), 300u) << "configs/frameworks/megatron-bridge-overrides.txt unreadable";
  const auto overrides = megatron_bridge_overrides(job);
  ASSERT_FALSE(overrides.empty());
  for (const auto& [key, value] : overrides) {
    const auto it = bridge_schema().find(key);
    ASSERT_NE(it, bridge_schema().end()) << key << " is no Megatron-Bridge ConfigContainer field";
    if (!it->second.empty()) {
      EXPECT_TRUE(it->second.count(value)) << key << "=" << value;
    }
  }
}

std::string bridge_value(const Job& job, const std::string& key) {
  for (const auto& [k, v] : megatron_bridge_overrides(job))
    if (k == key) return v;
  return "";
}

// configs/frameworks/torchtitan-config.txt: "from MODULE import NAME" and
// "CALLABLE.keyword [choices]" lines.
struct TorchtitanSchema {
  std::set<std::string> imports;                            // "from M import N"
  std::map<std::string, std::set<std::string>> keywords;    // "Callable.keyword" -> choices (empty: any)
  std::string commit;
};
const TorchtitanSchema& torchtitan_schema() {
  static const TorchtitanSchema schema = [] {
    TorchtitanSchema s;
    std::ifstream in(framework_file("torchtitan-config.txt"));
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("# commit: ", 0) == 0) s.commit = line.substr(10, 40);
      if (line.empty() || line[0] == '#') continue;
      if (line.rfind("from ", 0) == 0) {
        s.imports.insert(line);
        continue;
      }
      std::istringstream words(line);
      std::string name, choices;
      words >> name >> choices;
      std::istringstream list(choices);
      auto& set = s.keywords[name];
      for (std::string c; std::getline(list, c, ',');) set.insert(c);
    }
    return s;
  }();
  return schema;
}

std::string unquoted(const std::string& v) {
  return v.size() >= 2 && v.front() == '"' && v.back() == '"' ? v.substr(1, v.size() - 2) : v;
}

void expect_torchtitan_accepts(const Job& job) {
  const TorchtitanSchema& schema = torchtitan_schema();
  ASSERT_GT(schema.keywords.size(), 80u) << "configs/frameworks/torchtitan-config.txt unreadable";
  const TorchtitanRecipe r = torchtitan_recipe(job);
  ASSERT_FALSE(r.imports.empty());
  for (const auto& [module, name] : r.imports)
    EXPECT_TRUE(schema.imports.count("from " + module + " import " + name)) << module << "." << name << " is not in torchtitan";
  ASSERT_FALSE(r.keywords.empty());
  for (const auto& k : r.keywords) {
    const auto it = schema.keywords.find(k.callee + "." + k.name);
    ASSERT_NE(it, schema.keywords.end()) << k.callee << " takes no keyword " << k.name;
    if (!it->second.empty() && k.value.front() == '"') {  // a literal, not a parameter passed on
      EXPECT_TRUE(it->second.count(unquoted(k.value))) << k.callee << "." << k.name << " " << k.value;
    }
  }
}

// The value the recipe passes for `callee`'s keyword `name` ("" when it passes none).
std::string torchtitan_value(const Job& job, const std::string& callee, const std::string& name) {
  for (const auto& k : torchtitan_recipe(job).keywords)
    if (k.callee == callee && k.name == name) return k.value;
  return "";
}

// A small LLaMA-style model (what torchtitan's llama3 decoder builds), 8 layers.
Model small_llama() {
  Model m = search_test::small_gpt(8, 512, 8);
  m.name = "small-llama";
  m.kv_heads = 4;
  m.ffn_hidden = 1376;
  m.activation = Activation::swiglu;
  m.norm = Norm::rmsnorm;
  m.position = PositionEmbedding::rope;
  m.rope_base = 500000;
  m.bias = false;
  m.dropout = false;
  m.tied_embeddings = false;
  return m;
}

Job torchtitan_job(const Plan& p, int64_t batch = 64) {
  Plan plan = p;
  plan.framework = Framework::fsdp;
  Training t = search_test::fp16_training(batch);
  t.dtype = DType::bf16;
  t.optimizer = Optimizer::adamw;
  Cluster c = search_test::small_cluster(4);  // 16 GPUs
  c.node.gpu.peak_flops[DType::bf16] = c.node.gpu.peak_flops.at(DType::fp16);
  return make_job(small_llama(), c, t, plan);
}

bool has_argument(const Job& job, const std::string& name, const std::string& value = "") {
  for (const auto& [n, v] : megatron_argument_list(job))
    if (n == name && v == value) return true;
  return false;
}

// TP 2, PP 2 interleaved over 2 virtual stages, micro-batch 2, SP, full recompute, ZeRO-1 with
// the reduction overlapped.
Plan interleaved_zero1_plan(Framework framework = Framework::megatron_lm) {
  Plan p;
  p.framework = framework;
  p.tp = 2;
  p.pp = 2;
  p.virtual_stages = 2;
  p.schedule = Schedule::interleaved;
  p.micro_batch = 2;
  p.sequence_parallel = true;
  p.recompute = Recompute::full;
  p.zero_stage = 1;
  p.overlap_grad_reduce = true;
  return p;
}

// Block recomputation: Megatron's --recompute-method block with the plan's layer count, and the
// same as Megatron-Bridge's model overrides.
TEST(Export, BlockRecomputeIsMegatronsBlockMethod) {
  Plan p = interleaved_zero1_plan(Framework::megatron_core);
  p.recompute_layers = 3;
  const Job job = job_with(p);
  EXPECT_TRUE(has_argument(job, "--recompute-granularity", "full"));
  EXPECT_TRUE(has_argument(job, "--recompute-method", "block"));
  EXPECT_TRUE(has_argument(job, "--recompute-num-layers", "3"));
  expect_megatron_accepts(job);
  EXPECT_EQ(bridge_value(job, "model.recompute_method"), "block");
  EXPECT_EQ(bridge_value(job, "model.recompute_num_layers"), "3");
  EXPECT_TRUE(has_argument(job_with(interleaved_zero1_plan()), "--recompute-num-layers", "1"));
}

TEST(Export, MegatronArgumentsOfAnInterleavedZero1Plan) {
  const Plan p = interleaved_zero1_plan();
  const std::string a = megatron_arguments(job_with(p));
  for (const char* expected :
       {"  --tensor-model-parallel-size 2 \\\n", "  --pipeline-model-parallel-size 2 \\\n",
        "  --num-layers-per-virtual-pipeline-stage 2 \\\n", "  --micro-batch-size 2 \\\n",
        "  --global-batch-size 64 \\\n", "  --sequence-parallel \\\n", "  --recompute-granularity full \\\n",
        "  --recompute-method uniform \\\n", "  --use-distributed-optimizer \\\n", "  --overlap-grad-reduce \\\n",
        "  --overlap-param-gather \\\n", "  --fp16 \\\n", "  --num-layers 8 \\\n", "  --hidden-size 512 \\\n",
        "  --seq-length 512 \\\n", "  --vocab-size 8000 \\\n"})
    EXPECT_NE(a.find(expected), std::string::npos) << expected << " missing in\n" << a;
  EXPECT_EQ(a.find("--bf16"), std::string::npos);
  EXPECT_EQ(a.substr(a.size() - 2), "4\n");  // the last line (--seed 1234) has no continuation
  expect_megatron_accepts(job_with(p));
}

// ZeRO-2/3 under Megatron-core are Megatron FSDP: its sharding strategy, the checkpoint format
// arguments.py asserts for it, and Megatron-Bridge's ddp switches; Megatron-LM (2021-22) has none.
TEST(Export, MegatronCoreZeroThreeIsMegatronFsdp) {
  for (int zero : {2, 3}) {
    Plan p = interleaved_zero1_plan(Framework::megatron_core);
    p.zero_stage = zero;
    const Job job = job_with(p);
    EXPECT_TRUE(has_argument(job, "--use-megatron-fsdp", ""));
    EXPECT_TRUE(has_argument(job, "--data-parallel-sharding-strategy", zero == 3 ? "optim_grads_params" : "optim_grads"));
    EXPECT_TRUE(has_argument(job, "--ckpt-format", "fsdp_dtensor"));
    EXPECT_TRUE(has_argument(job, "--overlap-param-gather", ""));
    EXPECT_FALSE(has_argument(job, "--use-distributed-optimizer", ""));
    expect_megatron_accepts(job);
    expect_bridge_accepts(job);
    EXPECT_EQ(bridge_value(job, "ddp.use_megatron_fsdp"), "true");
    EXPECT_EQ(bridge_value(job, "ddp.data_parallel_sharding_strategy"), zero == 3 ? "optim_grads_params" : "optim_grads");
  }
  Plan lm = interleaved_zero1_plan();
  lm.zero_stage = 3;
  EXPECT_EQ(megatron_unsupported(export_job(lm)).rfind("field 'plan.zero_stage': Megatron-LM (2021-22) shards the optimizer only", 0), 0u)
      << megatron_unsupported(export_job(lm));
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
  // The embedding and the loss counted as layers: 14 + 2 slots over PP2 x VP2, 4 a virtual stage
  // (3 in the first and last), Megatron-core's account-for flags with the chunks per stage.
  p = Plan{};
  p.pp = 2;
  p.schedule = Schedule::interleaved;
  p.virtual_stages = 2;
  p.framework = Framework::megatron_core;
  p.stage_layers.embedding_slot = p.stage_layers.loss_slot = true;
  const Job slots =
      make_job(search_test::small_gpt(14, 512, 8), search_test::small_cluster(4), search_test::fp16_training(64), p);
  const std::string e = megatron_arguments(slots);
  EXPECT_NE(e.find("  --account-for-embedding-in-pipeline-split \\\n"), std::string::npos) << e;
  EXPECT_NE(e.find("  --account-for-loss-in-pipeline-split \\\n"), std::string::npos) << e;
  EXPECT_NE(e.find("  --num-virtual-stages-per-pipeline-rank 2 \\\n"), std::string::npos) << e;
  EXPECT_EQ(e.find("--num-layers-per-virtual-pipeline-stage"), std::string::npos) << e;
  expect_bridge_accepts(slots);
  EXPECT_EQ(bridge_value(slots, "model.account_for_embedding_in_pipeline_split"), "true");
  EXPECT_EQ(bridge_value(slots, "model.account_for_loss_in_pipeline_split"), "true");
  EXPECT_EQ(bridge_value(slots, "model.virtual_pipeline_model_parallel_size"), "2");
  // A per-stage list has no Megatron flag Starfish writes; DeepSpeed partitions by its own method.
  p = Plan{};
  p.pp = 2;
  p.stage_layers.per_stage = {3, 5};
  EXPECT_NE(megatron_unsupported(job_with(p)).find("per-stage layer lists"), std::string::npos);
  p.framework = Framework::deepspeed;
  EXPECT_NE(deepspeed_unsupported(job_with(p)).find("partition_method"), std::string::npos);
}

TEST(Export, MegatronCarriesTheRecomputeModules) {
  Model m = search_test::small_gpt(4, 512, 8);
  m.moe = Moe{8, 2, 1, 1024, 1, 1, 1.25};
  Plan p;
  p.framework = Framework::megatron_core;
  p.recompute = Recompute::selective;
  p.recompute_modules = recompute_module::moe_act | recompute_module::layernorm;
  const Job j = make_job(m, search_test::small_cluster(4), search_test::fp16_training(64), p);
  const std::string a = megatron_arguments(j);
  EXPECT_NE(a.find("  --recompute-granularity selective \\\n  --recompute-modules moe_act layernorm \\\n"),
            std::string::npos) << a;
  expect_bridge_accepts(j);
  EXPECT_EQ(bridge_value(j, "model.recompute_modules"), "[moe_act,layernorm]");
  // Selective recomputation of the attention core alone is Megatron's default: no modules flag.
  p.recompute_modules = recompute_module::core_attn;
  EXPECT_EQ(megatron_arguments(make_job(m, search_test::small_cluster(4), search_test::fp16_training(64), p))
                .find("--recompute-modules"), std::string::npos);
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
  Job ds = j;
  ds.plan.framework = Framework::deepspeed;
  EXPECT_NE(deepspeed_unsupported(ds).find("plan.sequence_parallel"), std::string::npos) << deepspeed_unsupported(ds);
  ds.plan.sequence_parallel = false;  // the experts are refused next
  EXPECT_NE(deepspeed_unsupported(ds).find("DeepSpeed-MoE"), std::string::npos) << deepspeed_unsupported(ds);
}

TEST(Export, MegatronCarriesContextParallelism) {
  // TP2 x CP4 x DP2 on 16 GPUs: Megatron-core's --context-parallel-size with TransformerEngine's
  // p2p ring (the one simulated), every argument one Megatron-LM has; DeepSpeed has no CP.
  Model m = search_test::small_gpt(8, 512, 8);
  m.seq_len = 4096;
  Plan p;
  p.tp = 2;
  p.cp = 4;
  p.sequence_parallel = true;
  p.framework = Framework::megatron_core;
  const Job j = make_job(m, search_test::small_cluster(4), search_test::fp16_training(64), p);
  EXPECT_EQ(j.plan.dp, 2);
  EXPECT_TRUE(has_argument(j, "--context-parallel-size", "4"));
  EXPECT_TRUE(has_argument(j, "--cp-comm-type", "p2p"));
  expect_megatron_accepts(j);
  Job ds = j;
  ds.plan.framework = Framework::deepspeed;
  EXPECT_NE(deepspeed_unsupported(ds).find("plan.context_parallel"), std::string::npos) << deepspeed_unsupported(ds);
  EXPECT_FALSE(has_argument(job_with(Plan{}), "--context-parallel-size", "1"));  // CP 1: Megatron's default, not written
}

TEST(Export, MegatronCarriesMultiHeadLatentAttention) {
  Model m = search_test::small_gpt(8, 512, 8);
  m.bias = false;
  m.mla = Mla{128, 64, 32, 16, 32};
  const Job j = job_with_model(m);
  EXPECT_TRUE(has_argument(j, "--multi-latent-attention"));
  EXPECT_TRUE(has_argument(j, "--q-lora-rank", "128"));
  EXPECT_TRUE(has_argument(j, "--kv-lora-rank", "64"));
  EXPECT_TRUE(has_argument(j, "--qk-head-dim", "32"));
  EXPECT_TRUE(has_argument(j, "--qk-pos-emb-head-dim", "16"));
  EXPECT_TRUE(has_argument(j, "--v-head-dim", "32"));
  expect_megatron_accepts(j);
}

TEST(Export, NumbersAreWrittenExactly) {
  Job job = job_with(Plan{});
  job.training.learning_rate = 3e-7;
  job.training.weight_decay = 0.1;
  job.training.grad_clip = 0;
  EXPECT_TRUE(has_argument(job, "--lr", "3e-07"));
  EXPECT_TRUE(has_argument(job, "--weight-decay", "0.1"));
  EXPECT_TRUE(has_argument(job, "--clip-grad", "0"));  // clipping off, not Megatron's default 1.0
  job.plan.framework = Framework::deepspeed;
  const JsonValue c = parse_json(deepspeed_config(job));
  EXPECT_EQ(c.number_at("optimizer.params.lr").value_or(0), 3e-7);
}

TEST(Export, PrecisionFlagsForEveryMixedPrecision) {
  Job job = megatron_core_bf16_job();
  job.plan.fp8 = Fp8::hybrid;
  EXPECT_TRUE(has_argument(job, "--bf16"));
  EXPECT_TRUE(has_argument(job, "--fp8-format", "hybrid"));
  EXPECT_TRUE(has_argument(job, "--fp8-recipe", "delayed"));
  expect_megatron_accepts(job);
  // Megatron-Bridge's "FP8-CS": E4M3 throughout, current (tensorwise) scaling.
  job.plan.fp8 = Fp8::e4m3;
  job.plan.fp8_recipe = Fp8Recipe::tensorwise;
  EXPECT_TRUE(has_argument(job, "--fp8-format", "e4m3"));
  EXPECT_TRUE(has_argument(job, "--fp8-recipe", "tensorwise"));
  EXPECT_FALSE(has_argument(job, "--fp8-param-gather"));
  expect_megatron_accepts(job);
  job.plan.zero_stage = 1;
  job.plan.fp8_params = true;
  EXPECT_TRUE(has_argument(job, "--fp8-param-gather"));
  expect_megatron_accepts(job);
  job.plan.fp8_params = false;
  job.plan.zero_stage = 0;
  // MXFP8 (Blackwell's block scaling) and NVFP4: their own recipe and format arguments.
  job.plan.fp8_recipe = Fp8Recipe::mxfp8;
  EXPECT_TRUE(has_argument(job, "--fp8-recipe", "mxfp8"));
  expect_megatron_accepts(job);
  job.plan.fp8 = Fp8::none;
  job.plan.fp4 = Fp4::nvfp4;
  EXPECT_TRUE(has_argument(job, "--fp4-format", "e2m1"));
  EXPECT_TRUE(has_argument(job, "--fp4-recipe", "nvfp4"));
  EXPECT_FALSE(has_argument(job, "--fp8-format", "e4m3"));
  expect_megatron_accepts(job);
  job.plan.fp4 = Fp4::none;
  EXPECT_FALSE(has_argument(job, "--fp8-format", "e4m3"));
  EXPECT_FALSE(has_argument(job, "--fp4-format", "e2m1"));
  job.plan.framework = Framework::deepspeed;
  const JsonValue c = parse_json(deepspeed_config(job));
  EXPECT_TRUE(c.find("bf16")->find("enabled")->boolean);
  EXPECT_FALSE(c.find("fp16")->find("enabled")->boolean);
}

// Qwen2's q/k/v biases and Qwen3's q/k norms are Megatron-LM arguments and Bridge overrides; the
// layer variants Megatron's transformer layer cannot build are refused naming the field.
TEST(Export, LayerVariantsAreCarriedOrRefusedByField) {
  Job job = job_with(Plan{});
  job.plan.framework = Framework::megatron_core;
  job.model.bias = false;
  job.model.qkv_bias = true;
  job.model.qk_norm = true;
  EXPECT_TRUE(has_argument(job, "--add-qkv-bias", ""));
  EXPECT_TRUE(has_argument(job, "--qk-layernorm", ""));
  EXPECT_TRUE(has_argument(job, "--disable-bias-linear", ""));
  expect_megatron_accepts(job);
  expect_bridge_accepts(job);
  bool qkv = false, qk = false;
  for (const auto& [key, value] : megatron_bridge_overrides(job)) {
    qkv = qkv || (key == "model.add_qkv_bias" && value == "true");
    qk = qk || (key == "model.qk_layernorm" && value == "true");
  }
  EXPECT_TRUE(qkv && qk);
  Model llama = job.model;  // otherwise torchtitan's llama3 decoder
  llama.norm = Norm::rmsnorm;
  llama.activation = Activation::swiglu;
  llama.position = PositionEmbedding::rope;
  llama.dropout = false;
  EXPECT_EQ(torchtitan_model_unsupported(llama).rfind("field 'model.qkv_bias': ", 0), 0u);
  for (bool Model::*variant : {&Model::post_norms, &Model::shared_input_norm, &Model::embedding_norm}) {
    Model m = job.model;
    m.*variant = true;
    const std::string why = megatron_model_unsupported(m);
    EXPECT_EQ(why.rfind("field 'model.", 0), 0u) << why;
    EXPECT_EQ(megatron_bridge_model_unsupported(m), why);
  }
  // A sliding window (GPT-OSS's 128 tokens on every other layer): TransformerEngine's (left,
  // right) window of 127 keys back, every second layer full; Bridge's TransformerConfig fields.
  Job swa = job;
  swa.model.sliding_window = SlidingWindow{128, 2};
  EXPECT_TRUE(has_argument(swa, "--window-size", "127,0"));
  EXPECT_TRUE(has_argument(swa, "--window-attn-skip-freq", "2"));
  expect_megatron_accepts(swa);
  expect_bridge_accepts(swa);
  int window_fields = 0;
  for (const auto& [key, value] : megatron_bridge_overrides(swa))
    window_fields += (key == "model.window_size" && value == "[127,0]") + (key == "model.window_attn_skip_freq" && value == "2");
  EXPECT_EQ(window_fields, 2);
  swa.model.sliding_window.full_every = 0;  // every layer windowed (Mistral 7B v0.1): no skip frequency
  EXPECT_FALSE(has_argument(swa, "--window-attn-skip-freq", "2"));
  Model llama_swa = llama;
  llama_swa.qkv_bias = llama_swa.qk_norm = false;
  llama_swa.sliding_window = SlidingWindow{4096, 0};
  EXPECT_EQ(torchtitan_model_unsupported(llama_swa).rfind("field 'model.sliding_window': ", 0), 0u)
      << torchtitan_model_unsupported(llama_swa);
  // A learned table longer than the sequence (GPT-2 trained at 512) keeps its rows.
  Job gpt2 = job_with(Plan{});
  gpt2.model.max_positions = gpt2.model.seq_len * 2;
  EXPECT_TRUE(has_argument(gpt2, "--max-position-embeddings", std::to_string(gpt2.model.seq_len * 2)));
}

TEST(Export, ModelDetailsTheRunNeeds) {
  Job job = job_with(Plan{});
  job.model.position = PositionEmbedding::rope;
  job.model.rope_base = 500000;
  job.model.dropout = false;
  EXPECT_TRUE(has_argument(job, "--rotary-base", "500000"));
  EXPECT_TRUE(has_argument(job, "--attention-dropout", "0"));
  EXPECT_TRUE(has_argument(job, "--tokenizer-type", "NullTokenizer"));
  // The attention kernel the plan was simulated with: megatron-lm's default is unfused,
  // megatron-core's (TransformerEngine) flash, and a plan's own choice wins.
  EXPECT_TRUE(has_argument(job, "--attention-backend", "unfused"));
  job.plan.framework = Framework::megatron_core;
  EXPECT_TRUE(has_argument(job, "--attention-backend", "flash"));
  job.plan.attention = Attention::unfused;
  EXPECT_TRUE(has_argument(job, "--attention-backend", "unfused"));
  expect_megatron_accepts(job);
}

TEST(Export, MegatronOffloadsTheOptimizerToTheCpuUnderItsDistributedOptimizer) {
  Plan p;
  p.zero_stage = 1;
  p.offload.optimizer = Tier::cpu;
  const Job job = job_with(p);
  EXPECT_TRUE(has_argument(job, "--optimizer-cpu-offload"));
  EXPECT_TRUE(has_argument(job, "--use-precision-aware-optimizer"));
  expect_megatron_accepts(job);
}

// Each combination Megatron-LM cannot run as planned: one line naming the field.
TEST(Export, MegatronRefusalsNameTheField) {
  struct Case {
    const char* field;
    Plan plan;
    Optimizer optimizer = Optimizer::adam;
  };
  std::vector<Case> cases;
  auto add = [&](const char* field, auto change, Optimizer o = Optimizer::adam) {
    Plan p;
    change(p);
    cases.push_back({field, p, o});
  };
  add("plan.zero_stage", [](Plan& p) { p.zero_stage = 2; });
  add("plan.zero_stage", [](Plan& p) { p.zero_stage = 3; });
  add("plan.offload.params", [](Plan& p) { p.zero_stage = 1, p.offload = {Tier::cpu, Tier::cpu, Tier::cpu}; });
  add("plan.offload.grads", [](Plan& p) { p.zero_stage = 1, p.offload = {Tier::gpu, Tier::cpu, Tier::cpu}; });
  add("plan.offload.optimizer", [](Plan& p) { p.zero_stage = 1, p.offload.optimizer = Tier::nvme; });
  add("plan.offload.optimizer", [](Plan& p) { p.offload.optimizer = Tier::cpu; });
  add("plan.chunk_size", [](Plan& p) { p.chunk_elements = 1 << 20, p.micro_batch = 4; });
  add("plan.schedule", [](Plan& p) { p.pp = 2, p.schedule = Schedule::gpipe; });
  add("plan.framework", [](Plan& p) { p.framework = Framework::deepspeed; });
  add("training.optimizer", [](Plan& p) { p.zero_stage = 1; }, Optimizer::sgd);
  add("plan.attention", [](Plan& p) { p.attention = Attention::flash1; });
  add("plan.loss", [](Plan& p) { p.loss = Loss::pytorch; });
  for (const Case& c : cases) {
    Job job = export_job(c.plan);
    job.training.optimizer = c.optimizer;
    const std::string why = megatron_unsupported(job);
    EXPECT_EQ(why.rfind(std::string("field '") + c.field + "': ", 0), 0u) << c.field << ": " << why;
    EXPECT_EQ(why.find('\n'), std::string::npos);
    try {
      megatron_arguments(job);
      ADD_FAILURE() << c.field << " exported";
    } catch (const SpecError& e) {
      EXPECT_EQ(std::string(e.what()), "--megatron: " + why);
    }
  }
}

TEST(Export, MegatronAndBridgeCarryTheGradientReductionsPrecision) {
  Plan p;
  p.framework = Framework::megatron_core;
  Job job = job_with(p);
  job.training.dtype = DType::bf16;
  EXPECT_FALSE(has_argument(job, "--grad-reduce-in-bf16"));  // fp32, forced under bf16
  job.plan.grad_reduce = GradReduce::training;
  EXPECT_TRUE(has_argument(job, "--grad-reduce-in-bf16"));
  expect_megatron_accepts(job);
  EXPECT_EQ(bridge_value(job, "ddp.grad_reduce_in_fp32"), "false");
  expect_bridge_accepts(job);
  job.training.dtype = DType::fp16;
  job.plan.grad_reduce = GradReduce::fp32;
  EXPECT_TRUE(has_argument(job, "--accumulate-allreduce-grads-in-fp32"));
  expect_megatron_accepts(job);
}

// TransformerEngine's in-place cross-entropy is Megatron's fused loss with impl te; its native
// fused kernel keeps an fp32 copy of the logits (as vocab-parallel): flash-attn's is neither.
TEST(Export, MegatronFusesTheLossWhenThePlanDoes) {
  Plan p;
  p.loss = Loss::te;
  Job job = job_with(p);
  EXPECT_TRUE(has_argument(job, "--cross-entropy-loss-fusion"));
  EXPECT_TRUE(has_argument(job, "--cross-entropy-fusion-impl", "te"));
  expect_megatron_accepts(job);
  job.plan.framework = Framework::megatron_core;
  EXPECT_EQ(bridge_value(job, "model.cross_entropy_loss_fusion"), "true");
  EXPECT_EQ(bridge_value(job, "model.cross_entropy_fusion_impl"), "te");
  expect_bridge_accepts(job);
  EXPECT_EQ(megatron_arguments(job_with(Plan{})).find("--cross-entropy-loss-fusion"), std::string::npos);
  p.loss = Loss::fused;
  EXPECT_EQ(megatron_unsupported(job_with(p)).rfind("field 'plan.loss': flash-attn's fused cross-entropy is not Megatron's", 0),
            0u)
      << megatron_unsupported(job_with(p));
}

TEST(Export, DeepSpeedConfigOfZeroInfinity) {
  Plan p = deepspeed_plan();
  p.zero_stage = 3;
  p.micro_batch = 2;
  p.offload = Offload{Tier::cpu, Tier::nvme, Tier::nvme};
  const Job job = job_with(p);
  ASSERT_EQ(job.micro_batches(), 2);  // 64 / (2 x 16)
  ExportOptions options;
  options.nvme_path = "/scratch/nvme0";
  const JsonValue c = parse_json(deepspeed_config(job, options));
  EXPECT_EQ(c.number_at("train_batch_size").value_or(0), 64);
  EXPECT_EQ(c.number_at("train_micro_batch_size_per_gpu").value_or(0), 2);
  EXPECT_EQ(c.number_at("gradient_accumulation_steps").value_or(0), 2);
  EXPECT_EQ(c.number_at("zero_optimization.stage").value_or(0), 3);
  // ZeRO-3's reduce-scatters overlap the backward in both tiers, the plan's overlap_grad_reduce
  // aside: the config says so (with false DeepSpeed reduces on the compute's stream).
  ASSERT_FALSE(p.overlap_grad_reduce);
  EXPECT_TRUE(c.find("zero_optimization")->find("overlap_comm")->boolean);
  EXPECT_EQ(c.string_at("zero_optimization.offload_optimizer.nvme_path").value_or(""), "/scratch/nvme0");
  EXPECT_EQ(c.string_at("zero_optimization.offload_param.device").value_or(""), "cpu");
  EXPECT_TRUE(c.find("fp16")->find("enabled")->boolean);
  EXPECT_EQ(c.find("starfish"), nullptr);  // no invented block: DeepSpeed ignores unknown keys silently
  expect_deepspeed_accepts(job);
}

TEST(Export, DeepSpeedZeroWithAnUntestedOptimizerIsAllowedExplicitly) {
  Plan p = deepspeed_plan();
  p.zero_stage = 1;
  Job job = job_with(p);
  job.training.optimizer = Optimizer::sgd;
  EXPECT_TRUE(parse_json(deepspeed_config(job)).find("zero_allow_untested_optimizer")->boolean);
  job.training.optimizer = Optimizer::adamw;
  EXPECT_EQ(parse_json(deepspeed_config(job)).find("zero_allow_untested_optimizer"), nullptr);
}

TEST(Export, DeepSpeedRefusalsNameTheField) {
  std::vector<std::pair<const char*, Plan>> cases;
  auto add = [&](const char* field, auto change) {
    Plan p = deepspeed_plan();
    change(p);
    cases.emplace_back(field, p);
  };
  add("plan.chunk_size", [](Plan& p) { p.chunk_elements = 1 << 20, p.micro_batch = 4; });
  add("plan.schedule", [](Plan& p) { p.pp = 2, p.virtual_stages = 2, p.schedule = Schedule::interleaved; });
  add("plan.schedule", [](Plan& p) { p.pp = 2, p.schedule = Schedule::gpipe; });
  add("plan.zero_stage", [](Plan& p) { p.pp = 2, p.zero_stage = 2; });
  add("plan.zero_stage", [](Plan& p) { p.pp = 2, p.zero_stage = 3; });
  add("plan.offload.params", [](Plan& p) { p.zero_stage = 2, p.offload = {Tier::cpu, Tier::cpu, Tier::cpu}; });
  add("plan.offload.optimizer", [](Plan& p) { p.offload.optimizer = Tier::cpu; });
  add("plan.offload.optimizer", [](Plan& p) { p.zero_stage = 2, p.offload.optimizer = Tier::nvme; });
  add("plan.offload.grads", [](Plan& p) { p.zero_stage = 3, p.offload = {Tier::gpu, Tier::cpu, Tier::nvme}; });
  add("plan.framework", [](Plan& p) { p.framework = Framework::megatron_lm; });
  add("plan.grad_reduce_dtype", [](Plan& p) { p.grad_reduce = GradReduce::fp32; });
  for (const auto& [field, plan] : cases) {
    const std::string why = deepspeed_unsupported(export_job(plan));
    EXPECT_EQ(why.rfind(std::string("field '") + field + "': ", 0), 0u) << field << ": " << why;
    EXPECT_EQ(why.find('\n'), std::string::npos);
    EXPECT_THROW(deepspeed_config(export_job(plan)), SpecError) << field;
  }
  Job fp8 = job_with(deepspeed_plan());
  fp8.plan.fp8 = Fp8::hybrid;
  EXPECT_EQ(deepspeed_unsupported(fp8).rfind("field 'plan.fp8': ", 0), 0u) << deepspeed_unsupported(fp8);
  Job fp4 = job_with(deepspeed_plan());
  fp4.plan.fp4 = Fp4::nvfp4;
  EXPECT_EQ(deepspeed_unsupported(fp4).rfind("field 'plan.fp4': ", 0), 0u) << deepspeed_unsupported(fp4);
}

// A plan read from a file: the reason starts with the field's file:line:column.
TEST(Export, RefusalOfAPlanFileNamesItsLine) {
  const std::string dir = std::string(STARFISH_SOURCE_DIR) + "/configs/plans/";
  const PlanFile f = load_plan_file(dir + "consumer-gpt2-xl-zero3-offload.yaml");
  const Model m = load_model(std::filesystem::path(dir) / *f.model_path);
  Cluster c = load_cluster(std::filesystem::path(dir) / *f.hardware_path);
  if (f.nodes) c.nodes = *f.nodes;
  const Job job = make_job(m, c, f.training, f.plan);
  const std::string why = megatron_unsupported(job);
  EXPECT_EQ(why.rfind(dir + "consumer-gpt2-xl-zero3-offload.yaml:", 0), 0u) << why;
  // The plan names no framework: its ZeRO-3 offload is DeepSpeed's (job.h placement_framework).
  EXPECT_NE(why.find(": field 'plan.framework': the plan was simulated as deepspeed runs it"), std::string::npos) << why;
}

// The bundled plans, and the search's top plans for bundled models, each as the framework runs
// it: every export is in the framework's schema, or refused in one line naming the field.
TEST(Export, BundledPlansExportInTheFrameworksSchemaOrAreRefused) {
  const std::string dir = std::string(STARFISH_SOURCE_DIR) + "/configs/plans/";
  std::map<Framework, int> exported;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const PlanFile f = load_plan_file(entry.path().string());
    const Model m = load_model(entry.path().parent_path() / *f.model_path);
    Cluster c = load_cluster(entry.path().parent_path() / *f.hardware_path);
    if (f.nodes) c.nodes = *f.nodes;
    for (Framework fw : {Framework::megatron_core, Framework::deepspeed, Framework::fsdp}) {
      Plan p = f.plan;
      p.framework = fw;
      if (fw == Framework::fsdp) p.fp8 = Fp8::none;  // Megatron-core's alone
      SCOPED_TRACE(entry.path().filename().string() + " as " + to_string(fw));
      Job job;
      try {
        job = make_job(m, c, f.training, p);
      } catch (const SpecError& e) {  // a plan that framework cannot run at all (context parallelism under DeepSpeed)
        EXPECT_NE(std::string(e.what()).find("field '"), std::string::npos) << e.what();
        continue;
      }
      const std::string why = fw == Framework::deepspeed ? deepspeed_unsupported(job)
                              : fw == Framework::fsdp    ? torchtitan_unsupported(job)
                                                         : megatron_unsupported(job);
      if (!why.empty()) {
        EXPECT_NE(why.find("field '"), std::string::npos) << why;
        EXPECT_EQ(why.find('\n'), std::string::npos) << why;
        continue;
      }
      ++exported[fw];
      if (fw == Framework::megatron_core) {
        const std::string bridge_why = megatron_bridge_unsupported(job);
        if (bridge_why.empty()) expect_bridge_accepts(job);
        else EXPECT_EQ(bridge_why.find('\n'), std::string::npos) << bridge_why;
      }
      if (fw == Framework::deepspeed) expect_deepspeed_accepts(job);
      else if (fw == Framework::fsdp) expect_torchtitan_accepts(job);
      else expect_megatron_accepts(job);
    }
  }
  // Megatron and DeepSpeed run some of them as they are (torchtitan none: the one LLaMA plan is
  // ZeRO-1, which FSDP2 has no form of; the search's top plans below cover its exports).
  EXPECT_GT(exported[Framework::megatron_core], 0);
  EXPECT_GT(exported[Framework::deepspeed], 0);
}

// Every bundled model (configs/models/*.yaml, whatever is added there) runs on DGX H100 nodes,
// as many as its model states need: the fewest power of two of nodes whose GPUs hold 32 bytes per
// parameter (mixed-precision Adam's 16 bytes of params, grads and optimizer states, as much again
// for activations and buffers). So the search finds plans that fit without ZeRO-3 or offload
// being forced on it. H100s have an fp8 peak, so Megatron-core's fp8 plans are in the space.
Cluster cluster_for(const Model& m) {
  Cluster c = load_cluster(std::string(STARFISH_SOURCE_DIR) + "/hwprofiles/dgx-h100.yaml");
  const double node_bytes = static_cast<double>(c.node.gpus) * static_cast<double>(c.node.gpu.memory_bytes);
  const double needed = 32.0 * static_cast<double>(count_parameters(m).total);
  c.nodes = 1;
  while (c.nodes * node_bytes < needed) c.nodes *= 2;
  return c;
}

// Whether no node count fits the model under a target: its default attention kernel is unfused
// (Megatron-LM's and DeepSpeed's, sim/cost/framework.h; the search has no attention axis), and
// one layer's attention scores at the largest TP (a node's GPUs), heads / TP x seq^2 in 16 bits,
// are more than a GPU holds. Of the bundled models only Llama 3.1 405B at 128K tokens is such
// (about 550 GB): it fits as Megatron-core runs it, with flash attention and context parallelism.
bool unfused_scores_exceed_a_gpu(const Model& m, const Cluster& c, Framework fw) {
  Plan p;
  p.framework = fw;
  if (attention_kernel(p) != Attention::unfused) return false;
  const double seq = m.seq_len;
  const double scores = static_cast<double>(m.heads) / c.node.gpus * seq * seq * 2;
  return scores > static_cast<double>(c.node.gpu.memory_bytes);
}

std::vector<std::filesystem::path> bundled_models() {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(STARFISH_SOURCE_DIR) + "/configs/models/"))
    if (entry.path().extension() == ".yaml") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

// What the target cannot build of the model (GPT-2 is not torchtitan's llama3; DeepSpeed and
// torchtitan exports write no MoE; Megatron-Bridge's overrides no MLA), whatever the plan.
std::string model_refusal(const Model& m, Framework fw) {
  return fw == Framework::fsdp            ? torchtitan_model_unsupported(m)
         : fw == Framework::deepspeed     ? deepspeed_model_unsupported(m)
         : fw == Framework::megatron_core ? megatron_bridge_model_unsupported(m)
                                          : std::string();
}

// One top plan through its target's exports: every name in the schema, the whole text written
// (a throw is a failure), and the plan file read back to the same plan. A Megatron-core plan also
// launches through Megatron-LM's own arguments.
void expect_plan_exports(const Job& job) {
  const Framework fw = job.plan.framework;
  if (fw == Framework::deepspeed) expect_deepspeed_accepts(job);
  else if (fw == Framework::fsdp) expect_torchtitan_accepts(job);
  else expect_megatron_accepts(job);
  if (fw == Framework::megatron_core) expect_bridge_accepts(job);
  try {
    if (fw == Framework::deepspeed) deepspeed_config(job);
    else if (fw == Framework::fsdp) torchtitan_recipe(job), torchtitan_launch(job);
    else megatron_arguments(job);
    if (fw == Framework::megatron_core) megatron_bridge_command(job);
    const PlanFile f = parse_plan_file_text(plan_file_yaml(job, "m.yaml", "h.yaml"));
    EXPECT_EQ(f.plan, job.plan);
    EXPECT_EQ(f.training, job.training);
  } catch (const std::exception& e) {
    ADD_FAILURE() << e.what();
  }
}

// The search's top plans (as many as it lists by default) for one model as one target runs them.
void expect_top_plans_export(const Model& m, const Cluster& c, Framework fw) {
  const Training t = default_search_training(m, c);
  SearchOptions o;
  o.threads = 2;
  o.space.framework = fw;
  o.space.chunk_elements = {0};  // every target refuses chunked plans: left out of the space
  o.admit = [&](const Plan& p) {
    return (fw == Framework::deepspeed       ? deepspeed_unsupported(p, t)
            : fw == Framework::fsdp          ? torchtitan_unsupported(p, t, m)
            : fw == Framework::megatron_core ? megatron_bridge_unsupported(p, t)
                                             : megatron_unsupported(p, t))
        .empty();
  };
  const SearchResult r = search(m, c, t, o);
  if (unfused_scores_exceed_a_gpu(m, c, fw)) {
    EXPECT_TRUE(r.rows.empty()) << r.rows.front().label();
    EXPECT_EQ(r.binding_constraint(), Constraint::gpu_memory);
    return;
  }
  ASSERT_FALSE(r.rows.empty());
  // The export's filter is in play; a DeepSpeed space enumerates only what its engine runs
  // (job.h's placement and schedule rules), which may leave the filter nothing to refuse.
  if (fw != Framework::deepspeed) {
    EXPECT_GT(r.not_admitted, 0);
  }
  for (const Row& row : r.rows) {
    SCOPED_TRACE(row.label());
    EXPECT_EQ(row.plan.framework, fw);
    expect_plan_exports(r.job(row));
  }
}

TEST(Export, TopPlansOfBundledModelsExportInTheFrameworksSchema) {
  // Dense GPT and LLaMA shapes, GQA, MLA, MoE and 128K contexts: every bundled model, each through
  // every target.
  const std::vector<std::filesystem::path> files = bundled_models();
  ASSERT_GE(files.size(), 45u);
  for (const std::filesystem::path& file : files) {
    const Model m = load_model(file.string());
    const Cluster c = cluster_for(m);
    for (Framework fw : {Framework::megatron_lm, Framework::megatron_core, Framework::deepspeed, Framework::fsdp}) {
      SCOPED_TRACE(m.name + " on " + std::to_string(c.nodes) + " nodes as " + to_string(fw) +
                   (fw == Framework::megatron_core ? " (Megatron-Bridge)" : ""));
      if (const std::string why = model_refusal(m, fw); !why.empty()) {
        EXPECT_EQ(why.rfind("field 'model.", 0), 0u) << why;
        EXPECT_EQ(why.find('\n'), std::string::npos) << why;
        continue;
      }
      expect_top_plans_export(m, c, fw);
    }
  }
}

TEST(Export, MegatronBridgeOverridesOfAnInterleavedFp8Plan) {
  Plan p = interleaved_zero1_plan(Framework::megatron_core);
  p.fp8 = Fp8::hybrid;
  Cluster c = search_test::small_cluster(4);  // 16 GPUs, with a bf16 and an fp8 peak
  c.node.gpu.peak_flops[DType::bf16] = c.node.gpu.peak_flops[DType::fp8] = 100e12;
  Training t = search_test::fp16_training(64);
  t.dtype = DType::bf16;
  Job job = make_job(search_test::small_gpt(8, 512, 8), c, t, p);
  job.training.weight_decay = 0.1;
  job.training.learning_rate = 3e-7;
  const std::map<std::string, std::string> expected = {
      {"model.tensor_model_parallel_size", "2"},
      {"model.pipeline_model_parallel_size", "2"},
      {"model.virtual_pipeline_model_parallel_size", "2"},
      {"model.sequence_parallel", "true"},
      {"train.micro_batch_size", "2"},
      {"train.global_batch_size", "64"},
      {"model.recompute_granularity", "full"},
      {"model.recompute_method", "uniform"},
      {"ddp.use_distributed_optimizer", "true"},
      {"optimizer.use_distributed_optimizer", "true"},
      {"ddp.overlap_grad_reduce", "true"},
      {"ddp.overlap_param_gather", "true"},
      {"mixed_precision", "bf16_with_fp8_delayed_scaling_mixed"},
      {"model.attention_backend", "flash"},
      {"model.num_layers", "8"},
      {"model.seq_length", "512"},
      {"dataset.seq_length", "512"},
      {"model.vocab_size", "8000"},
      {"tokenizer.vocab_size", "8000"},
      {"tokenizer.tokenizer_type", "NullTokenizer"},
      {"model.activation_func", "gelu"},  // GPT: the base's defaults written out
      {"model.share_embeddings_and_output_weights", "true"},
      {"optimizer.lr", "3e-07"},
      {"optimizer.weight_decay", "0.1"},
      {"scheduler.start_weight_decay", "0.1"},  // the recipe's scheduler sets it each step
      {"scheduler.end_weight_decay", "0.1"},
      {"rng.seed", "1234"},
  };
  for (const auto& [key, value] : expected) EXPECT_EQ(bridge_value(job, key), value) << key;
  const std::string command = megatron_bridge_command(job);
  EXPECT_EQ(command.rfind("python scripts/training/run_recipe.py --recipe vanilla_gpt_pretrain_config --mode pretrain", 0), 0u);
  EXPECT_NE(command.find(" \\\n  model.tensor_model_parallel_size=2 \\\n"), std::string::npos) << command;
  expect_bridge_accepts(job);
}

TEST(Export, MegatronBridgeCarriesLlamaShapesExpertsAndPadsTheVocabularyForTp) {
  Job job = megatron_core_bf16_job();
  job.model = load_model(std::string(STARFISH_SOURCE_DIR) + "/configs/models/llama2-7b.yaml");
  job.model.vocab = 32001;
  job.plan.tp = 4;
  job.plan.dp = 4;
  job.plan.sequence_parallel = true;
  EXPECT_EQ(bridge_value(job, "model.activation_func"), "silu");
  EXPECT_EQ(bridge_value(job, "model.gated_linear_unit"), "true");
  EXPECT_EQ(bridge_value(job, "model.normalization"), "RMSNorm");
  EXPECT_EQ(bridge_value(job, "model.position_embedding_type"), "rope");
  EXPECT_EQ(bridge_value(job, "model.rotary_base"), "10000");
  EXPECT_EQ(bridge_value(job, "model.add_bias_linear"), "false");
  EXPECT_EQ(bridge_value(job, "model.share_embeddings_and_output_weights"), "false");
  EXPECT_EQ(bridge_value(job, "model.hidden_dropout"), "0");
  EXPECT_EQ(bridge_value(job, "model.num_query_groups"), "32");
  EXPECT_EQ(bridge_value(job, "tokenizer.vocab_size"), "32001");
  EXPECT_EQ(bridge_value(job, "model.vocab_size"), "32004");  // a multiple of TP 4, as Megatron-LM pads
  expect_bridge_accepts(job);
  Model moe = search_test::small_gpt(4, 512, 8);
  moe.moe = Moe{8, 2, 1, 1024, 1, 1, 1.25};
  Plan p;
  p.framework = Framework::megatron_core;
  p.tp = 2;
  p.sequence_parallel = true;
  p.ep = 4;
  p.etp = 1;
  const Job m = make_job(moe, search_test::small_cluster(4), search_test::fp16_training(64), p);
  EXPECT_EQ(bridge_value(m, "model.num_moe_experts"), "8");
  EXPECT_EQ(bridge_value(m, "model.moe_layer_freq"), "[0,1,1,1]");
  EXPECT_EQ(bridge_value(m, "model.expert_model_parallel_size"), "4");
  EXPECT_EQ(bridge_value(m, "mixed_precision"), "fp16_mixed");
  expect_bridge_accepts(m);
}

// Megatron-Bridge's block-scaled recipes (training/mixed_precision.py): E4M3 with MXFP8 scaling,
// and NVFP4 under bf16; the recipe is the precision, no fp8/fp4 override beside it.
TEST(Export, MegatronBridgeNamesTheBlockScaledRecipes) {
  Job job = megatron_core_bf16_job();
  job.plan.fp8 = Fp8::e4m3;
  job.plan.fp8_recipe = Fp8Recipe::mxfp8;
  EXPECT_EQ(bridge_value(job, "mixed_precision"), "bf16_with_mxfp8_mixed");
  expect_bridge_accepts(job);
  job.training.dtype = DType::fp16;
  EXPECT_EQ(bridge_value(job, "mixed_precision"), "fp16_with_mxfp8_mixed");
  job.training.dtype = DType::bf16;
  job.plan.fp8 = Fp8::none;
  job.plan.fp4 = Fp4::nvfp4;
  EXPECT_EQ(bridge_value(job, "mixed_precision"), "bf16_with_nvfp4_mixed");
  EXPECT_EQ(megatron_bridge_command(job).find("model.fp4"), std::string::npos) << megatron_bridge_command(job);
  expect_bridge_accepts(job);
}

// Megatron's first / last layers in bf16 under fp8 current scaling (Plan::bf16_layers): its
// three arguments; Megatron-Bridge's current-scaling recipe keeps exactly 1 and 1, so that plan
// exports as the recipe and other counts are refused (run_recipe.py takes a recipe's name).
TEST(Export, Bf16LayersAreMegatronsArgumentsAndBridgesCurrentScalingRecipe) {
  Job job = megatron_core_bf16_job();
  job.plan.fp8 = Fp8::hybrid;
  job.plan.fp8_recipe = Fp8Recipe::tensorwise;
  job.plan.bf16_layers = {1, 1};
  EXPECT_TRUE(has_argument(job, "--first-last-layers-bf16", ""));
  EXPECT_TRUE(has_argument(job, "--num-layers-at-start-in-bf16", "1"));
  EXPECT_TRUE(has_argument(job, "--num-layers-at-end-in-bf16", "1"));
  expect_megatron_accepts(job);
  EXPECT_EQ(bridge_value(job, "mixed_precision"), "bf16_with_fp8_current_scaling_mixed");
  expect_bridge_accepts(job);
  job.plan.bf16_layers = {2, 1};
  EXPECT_TRUE(has_argument(job, "--num-layers-at-start-in-bf16", "2"));
  EXPECT_EQ(megatron_bridge_unsupported(job).rfind("field 'plan.fp8': ", 0), 0u) << megatron_bridge_unsupported(job);
  job.plan.bf16_layers = {0, 0};
  EXPECT_FALSE(has_argument(job, "--first-last-layers-bf16", ""));
}

TEST(Export, MegatronBridgeRefusalsNameTheField) {
  std::vector<std::pair<const char*, Job>> cases;
  auto add = [&](const char* field, auto change) {
    Job job = megatron_core_bf16_job();
    change(job);
    cases.emplace_back(field, job);
  };
  add("plan.framework", [](Job& j) { j.plan.framework = Framework::megatron_lm; });
  // Megatron-core's own refusals (its ZeRO-3 is Megatron FSDP, exported: MegatronCoreZeroThreeIsMegatronFsdp).
  add("plan.offload.grads", [](Job& j) { j.plan.zero_stage = 1, j.plan.offload = {Tier::gpu, Tier::cpu, Tier::cpu}; });
  add("training.dtype", [](Job& j) { j.training.dtype = DType::fp32; });
  add("plan.fp8", [](Job& j) { j.plan.fp8 = Fp8::e4m3, j.plan.fp8_recipe = Fp8Recipe::tensorwise; });
  add("plan.fp8", [](Job& j) { j.plan.fp8 = Fp8::hybrid, j.plan.fp8_recipe = Fp8Recipe::tensorwise; });
  add("plan.fp8", [](Job& j) { j.plan.fp8 = Fp8::hybrid, j.plan.fp8_recipe = Fp8Recipe::mxfp8; });
  add("plan.fp4", [](Job& j) { j.plan.fp4 = Fp4::nvfp4, j.training.dtype = DType::fp16; });
  // Multi-head latent attention: the schema has no MLA ranks (DeepSeek-V3 crashed the export).
  add("model.mla", [](Job& j) { j.model.mla = Mla{1536, 512, 128, 64, 128}; });
  for (const auto& [field, job] : cases) {
    const std::string why = megatron_bridge_unsupported(job);
    EXPECT_EQ(why.rfind(std::string("field '") + field + "': ", 0), 0u) << field << ": " << why;
    EXPECT_EQ(why.find('\n'), std::string::npos);
    try {
      megatron_bridge_overrides(job);
      ADD_FAILURE() << field << " exported";
    } catch (const SpecError& e) {
      EXPECT_EQ(std::string(e.what()), "--megatron-bridge: " + why);
    }
  }
}

TEST(Export, TorchtitanRecipeOfAnFsdp2TpPpPlan) {
  Plan p;
  p.tp = 2;
  p.sequence_parallel = true;
  p.pp = 2;
  p.virtual_stages = 2;
  p.schedule = Schedule::interleaved;
  p.micro_batch = 2;
  p.zero_stage = 3;
  p.recompute = Recompute::full;
  const Job job = torchtitan_job(p);
  ASSERT_EQ(job.plan.dp, 4);             // 16 GPUs / (TP 2 x PP 2)
  ASSERT_EQ(job.micro_batches(), 8);     // 64 / (2 x 4)
  EXPECT_EQ(torchtitan_value(job, "ParallelismConfig", "data_parallel_shard_degree"), "4");
  EXPECT_EQ(torchtitan_value(job, "ParallelismConfig", "data_parallel_replicate_degree"), "1");
  EXPECT_EQ(torchtitan_value(job, "ParallelismConfig", "fsdp_reshard_after_forward"), "\"always\"");
  EXPECT_EQ(torchtitan_value(job, "ParallelismConfig", "tensor_parallel_degree"), "2");
  EXPECT_EQ(torchtitan_value(job, "ParallelismConfig", "enable_sequence_parallel"), "True");
  EXPECT_EQ(torchtitan_value(job, "ParallelismConfig", "pipeline_parallel_degree"), "2");
  EXPECT_EQ(torchtitan_value(job, "ParallelismConfig", "pipeline_parallel_schedule"), "\"Interleaved1F1B\"");
  EXPECT_EQ(torchtitan_value(job, "ParallelismConfig", "num_pp_microbatches"), "8");
  // 8 layers in 4 model chunks of 2, chunk k on rank k % 2; the embedding with the first, the
  // final norm and the head with the last.
  const std::string parts = torchtitan_value(job, "ParallelismConfig", "module_fqns_per_model_part");
  for (const char* chunk : {"[\"tok_embeddings\", \"layers.0\", \"layers.1\"],", "[\"layers.2\", \"layers.3\"],",
                            "[\"layers.4\", \"layers.5\"],", "[\"layers.6\", \"layers.7\", \"norm\", \"lm_head\"],"})
    EXPECT_NE(parts.find(chunk), std::string::npos) << chunk << " missing in " << parts;
  // Tokens: a micro-batch of 2 x 512 per DP rank, 64 x 512 per step; CUDA graphs off under PP.
  EXPECT_EQ(torchtitan_value(job, "TrainingConfig", "num_tokens_per_microbatch_per_dp_rank"), "1024");
  EXPECT_EQ(torchtitan_value(job, "TrainingConfig", "num_tokens_per_train_step"), "32768");
  EXPECT_EQ(torchtitan_value(job, "TrainingConfig", "max_context_length"), "512");
  EXPECT_EQ(torchtitan_value(job, "TrainingConfig", "mixed_precision_param"), "\"bfloat16\"");
  EXPECT_EQ(torchtitan_value(job, "TrainingConfig", "disable_cuda_graphs"), "True");
  EXPECT_EQ(torchtitan_value(job, "Trainer.Config", "activation_checkpoint"), "FullAC.Config()");
  // The model at its shape.
  EXPECT_EQ(torchtitan_value(job, "llama3._build_llama3_layers", "n_layers"), "8");
  EXPECT_EQ(torchtitan_value(job, "llama3._build_llama3_layers", "n_kv_heads"), "4");
  EXPECT_EQ(torchtitan_value(job, "llama3._build_llama3_layers", "hidden_dim"), "1376");
  EXPECT_EQ(torchtitan_value(job, "ComplexRoPE.Config", "theta"), "500000");
  EXPECT_EQ(torchtitan_value(job, "ComplexRoPE.Config", "dim"), "64");
  EXPECT_EQ(torchtitan_value(job, "Llama3Model.Config", "vocab_size"), "8000");
  const std::string text = torchtitan_recipe(job).text;
  EXPECT_NE(text.find("def starfish_plan() -> Trainer.Config:\n"), std::string::npos) << text;
  EXPECT_NE(text.find("torchrun --nnodes=4 --nproc_per_node=4 "), std::string::npos) << text;
  expect_torchtitan_accepts(job);
}

TEST(Export, TorchtitanMapsZeroStagesToFsdp2) {
  Plan p;
  p.zero_stage = 2;
  Job job = torchtitan_job(p);
  EXPECT_EQ(torchtitan_value(job, "ParallelismConfig", "fsdp_reshard_after_forward"), "\"never\"");
  EXPECT_EQ(torchtitan_value(job, "ParallelismConfig", "data_parallel_shard_degree"), "16");
  EXPECT_EQ(torchtitan_value(job, "ParallelismConfig", "module_fqns_per_model_part"), "");  // no PP
  EXPECT_EQ(torchtitan_value(job, "Trainer.Config", "activation_checkpoint"), "None");
  expect_torchtitan_accepts(job);
  p.zero_stage = 0;  // no sharding: replicas (FSDP2 over a mesh of one, its all-reduce)
  job = torchtitan_job(p);
  EXPECT_EQ(torchtitan_value(job, "ParallelismConfig", "data_parallel_replicate_degree"), "16");
  EXPECT_EQ(torchtitan_value(job, "ParallelismConfig", "data_parallel_shard_degree"), "1");
  EXPECT_EQ(torchtitan_value(job, "ParallelismConfig", "fsdp_reshard_after_forward"), "");
  expect_torchtitan_accepts(job);
  p.zero_stage = 3;
  p.offload = {Tier::cpu, Tier::cpu, Tier::cpu};
  job = torchtitan_job(p);
  EXPECT_EQ(torchtitan_value(job, "TrainingConfig", "enable_cpu_offload"), "True");
  expect_torchtitan_accepts(job);
}

TEST(Export, TorchtitanNumbersAreExact) {
  Job job = torchtitan_job(Plan{});
  job.training.learning_rate = 3e-7;
  job.training.weight_decay = 0.1;
  job.training.grad_clip = 0;  // off: torchtitan would scale the gradients to 0 with max_norm 0
  EXPECT_EQ(torchtitan_value(job, "ParamGroupConfig", "optimizer_kwargs"), "{\"lr\": 3e-07, \"weight_decay\": 0.1}");
  EXPECT_EQ(torchtitan_value(job, "ParamGroupConfig", "optimizer_name"), "\"AdamW\"");
  EXPECT_EQ(torchtitan_value(job, "TrainingConfig", "max_norm"), "float(\"inf\")");
  job.training.grad_clip = 0.5;
  job.training.optimizer = Optimizer::adam;
  EXPECT_EQ(torchtitan_value(job, "TrainingConfig", "max_norm"), "0.5");
  EXPECT_EQ(torchtitan_value(job, "ParamGroupConfig", "optimizer_name"), "\"Adam\"");
  job.training.dtype = DType::fp32;
  EXPECT_EQ(torchtitan_value(job, "TrainingConfig", "mixed_precision_param"), "\"float32\"");
}

// The recipe names the commit its schema was extracted from.
TEST(Export, TorchtitanRecipeNamesTheSchemasCommit) {
  EXPECT_EQ(torchtitan_schema().commit, kTorchtitanCommit);
  EXPECT_NE(torchtitan_recipe(torchtitan_job(Plan{})).text.find(std::string(kTorchtitanCommit).substr(0, 12)),
            std::string::npos);
}

TEST(Export, TorchtitanRefusalsNameTheField) {
  std::vector<std::pair<const char*, Job>> cases;
  auto add = [&](const char* field, auto change) {
    Job job = torchtitan_job(Plan{});
    change(job);
    cases.emplace_back(field, job);
  };
  add("plan.framework", [](Job& j) { j.plan.framework = Framework::megatron_core; });
  add("plan.chunk_size", [](Job& j) { j.plan.chunk_elements = 1 << 20, j.plan.micro_batch = 4; });
  add("plan.zero_stage", [](Job& j) { j.plan.zero_stage = 1; });
  add("plan.offload.optimizer", [](Job& j) { j.plan.zero_stage = 3, j.plan.offload.optimizer = Tier::cpu; });
  add("plan.offload.params", [](Job& j) { j.plan.zero_stage = 3, j.plan.offload = {Tier::nvme, Tier::nvme, Tier::nvme}; });
  add("plan.offload.params", [](Job& j) { j.plan.zero_stage = 2, j.plan.offload = {Tier::cpu, Tier::cpu, Tier::cpu}; });
  add("plan.recompute", [](Job& j) { j.plan.recompute = Recompute::selective; });
  add("plan.attention", [](Job& j) { j.plan.attention = Attention::unfused; });
  add("plan.loss", [](Job& j) { j.plan.loss = Loss::fused; });
  add("plan.train_metric_passes", [](Job& j) { j.plan.train_metric_passes = 2; });
  add("training.dtype", [](Job& j) { j.training.dtype = DType::fp16; });
  add("training.optimizer", [](Job& j) { j.training.optimizer = Optimizer::sgd; });
  add("plan.grad_reduce_dtype", [](Job& j) { j.plan.grad_reduce = GradReduce::training; });
  add("model.norm", [](Job& j) { j.model.norm = Norm::layernorm; });
  add("model.activation", [](Job& j) { j.model.activation = Activation::gelu; });
  add("model.position", [](Job& j) { j.model.position = PositionEmbedding::learned; });
  add("model.bias", [](Job& j) { j.model.bias = true; });
  add("model.dropout", [](Job& j) { j.model.dropout = true; });
  add("model.moe", [](Job& j) { j.model.moe = Moe{8, 2, 0, 1024, 0, 1, 0}; });
  add("model.tied_embeddings", [](Job& j) { j.model.tied_embeddings = true, j.plan.pp = 2, j.plan.dp = 8; });
  for (const auto& [field, job] : cases) {
    const std::string why = torchtitan_unsupported(job);
    EXPECT_EQ(why.rfind(std::string("field '") + field + "': ", 0), 0u) << field << ": " << why;
    EXPECT_EQ(why.find('\n'), std::string::npos);
    try {
      torchtitan_recipe(job);
      ADD_FAILURE() << field << " exported";
    } catch (const SpecError& e) {
      EXPECT_EQ(std::string(e.what()), "--torchtitan: " + why);
    }
  }
  // Tied embeddings without PP are torchtitan's enable_weight_tying.
  Job tied = torchtitan_job(Plan{});
  tied.model.tied_embeddings = true;
  EXPECT_EQ(torchtitan_value(tied, "Llama3Model.Config", "enable_weight_tying"), "True");
  expect_torchtitan_accepts(tied);
}

TEST(Export, PlanFileRoundTrips) {
  Plan p;
  p.zero_stage = 2;
  p.chunk_elements = 1 << 20;
  p.framework = Framework::starfish;
  p.micro_batch = 4;  // 64 sequences over DP 16: one micro-batch
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

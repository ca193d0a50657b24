#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "sim/spec/spec_io.h"

namespace starfish {
namespace {

TEST(RoundTrip, ClusterSavesAndLoadsToTheSameValue) {
  const Cluster c = load_cluster(std::string(STARFISH_SOURCE_DIR) + "/hwprofiles/dgx-a100-80gb.yaml");
  const std::string text = to_yaml(c);
  const Cluster back = parse_cluster_text(text, "saved.yaml");
  EXPECT_EQ(back, c) << text;
  EXPECT_EQ(to_yaml(back), text);
}

TEST(RoundTrip, NvlinkTopologyIsWrittenAsTopology) {
  // A mesh (AMD MI300X's xGMI) and a ring read from the older `switched: false` are both saved
  // as `topology:` and load back to the same value.
  const Cluster mesh = load_cluster(std::string(STARFISH_SOURCE_DIR) + "/hwprofiles/amd-mi300x.yaml");
  ASSERT_TRUE(mesh.node.nvlink);
  EXPECT_EQ(mesh.node.nvlink->topology, NvlinkTopology::mesh);
  const std::string text = to_yaml(mesh);
  EXPECT_NE(text.find("topology: mesh"), std::string::npos) << text;
  EXPECT_EQ(text.find("switched"), std::string::npos) << text;
  EXPECT_EQ(parse_cluster_text(text, "saved.yaml"), mesh) << text;
  Cluster ring = load_cluster(std::string(STARFISH_SOURCE_DIR) + "/hwprofiles/dgx-a100-80gb.yaml");
  ring.node.nvlink->topology = NvlinkTopology::ring;
  const std::string ring_text = to_yaml(ring);
  EXPECT_NE(ring_text.find("topology: ring"), std::string::npos) << ring_text;
  EXPECT_EQ(parse_cluster_text(ring_text, "saved.yaml"), ring) << ring_text;
}

TEST(RoundTrip, CpuHostKeepsItsDispatchCosts) {
  // The CPU host's per-op dispatch costs (sim/cost/dispatch.h) are read and written back exactly.
  const Cluster c = load_cluster(std::string(STARFISH_SOURCE_DIR) + "/hwprofiles/cpu-host.yaml");
  EXPECT_DOUBLE_EQ(c.node.host.op_dispatch_s, 0.62e-6);
  EXPECT_DOUBLE_EQ(c.node.host.backward_op_dispatch_s, 0.68e-6);
  const std::string text = to_yaml(c);
  EXPECT_NE(text.find("op_dispatch: "), std::string::npos) << text;
  EXPECT_EQ(parse_cluster_text(text, "saved.yaml"), c) << text;
}

TEST(RoundTrip, ModelAndPlanFile) {
  Model m;
  m.name = "llama-ish";
  m.family = "llama";
  m.layers = 32;
  m.hidden = 4096;
  m.heads = 32;
  m.kv_heads = 8;
  m.ffn_hidden = 11008;
  m.seq_len = 4096;
  m.vocab = 32000;
  m.activation = Activation::swiglu;
  m.norm = Norm::rmsnorm;
  m.position = PositionEmbedding::rope;
  m.tied_embeddings = false;
  m.bias = false;
  m.dropout = false;
  EXPECT_EQ(parse_model_text(to_yaml(m)), m);
  m.attention_head_dim = 256;
  m.moe = Moe{64, 6, 2, 1408, 1, 1, 1.25};
  EXPECT_EQ(parse_model_text(to_yaml(m)), m) << to_yaml(m);
  m.qkv_bias = m.qk_norm = m.post_norms = m.embedding_norm = true;
  EXPECT_EQ(parse_model_text(to_yaml(m)), m) << to_yaml(m);
  m.post_norms = false;
  m.shared_input_norm = true;
  m.position = PositionEmbedding::learned;
  m.max_positions = 4098;
  EXPECT_EQ(parse_model_text(to_yaml(m)), m) << to_yaml(m);
  m.sliding_window = SlidingWindow{128, 0};  // every layer windowed: full_every is not written
  EXPECT_EQ(parse_model_text(to_yaml(m)), m) << to_yaml(m);
  m.sliding_window.full_every = 2;
  EXPECT_EQ(parse_model_text(to_yaml(m)), m) << to_yaml(m);

  PlanFile p;
  p.model_path = "../models/x.yaml";
  p.nodes = 16;
  p.training.global_batch = 512;
  p.training.learning_rate = 3e-4;
  p.plan.tp = 8;
  p.plan.pp = 4;
  p.plan.dp = 16;
  p.plan.virtual_stages = 2;
  p.plan.schedule = Schedule::interleaved;
  p.plan.zero_stage = 1;
  p.plan.offload.optimizer = Tier::cpu;
  p.plan.chunk_elements = 64LL << 20;
  p.plan.recompute = Recompute::selective;
  p.plan.sequence_parallel = true;
  p.plan.overlap_grad_reduce = true;
  p.plan.framework = Framework::deepspeed;
  p.plan.attention = Attention::flash;
  const PlanFile back = parse_plan_file_text(to_yaml(p));
  EXPECT_EQ(back, p) << to_yaml(p);
  p.plan.stage_layers.first = 7;
  p.plan.stage_layers.last = 7;
  EXPECT_EQ(parse_plan_file_text(to_yaml(p)), p) << to_yaml(p);
  p.plan.ep = 8;
  p.plan.etp = 1;
  p.plan.moe_load_imbalance = 1.2;
  p.plan.stage_layers = StageLayout{0, 0, {7, 8, 8, 7}};
  EXPECT_EQ(parse_plan_file_text(to_yaml(p)), p) << to_yaml(p);
  p.plan.stage_layers = StageLayout{};
  p.plan.stage_layers.embedding_slot = p.plan.stage_layers.loss_slot = true;
  EXPECT_NE(to_yaml(p).find("embedding_in_pipeline_split: true"), std::string::npos) << to_yaml(p);
  EXPECT_EQ(parse_plan_file_text(to_yaml(p)), p) << to_yaml(p);
  p.plan.recompute = Recompute::full;
  p.plan.recompute_layers = 3;
  EXPECT_NE(to_yaml(p).find("recompute_layers: 3"), std::string::npos) << to_yaml(p);
  EXPECT_EQ(parse_plan_file_text(to_yaml(p)), p) << to_yaml(p);
  p.plan.fp8 = Fp8::e4m3;
  p.plan.fp8_recipe = Fp8Recipe::tensorwise;
  EXPECT_EQ(parse_plan_file_text(to_yaml(p)), p) << to_yaml(p);
  p.plan.fp8_params = true;
  EXPECT_NE(to_yaml(p).find("fp8_params: true"), std::string::npos) << to_yaml(p);
  EXPECT_EQ(parse_plan_file_text(to_yaml(p)), p) << to_yaml(p);
  p.plan.bf16_layers = {1, 2};
  EXPECT_NE(to_yaml(p).find("bf16_layers: {first: 1, last: 2}"), std::string::npos) << to_yaml(p);
  EXPECT_EQ(parse_plan_file_text(to_yaml(p)), p) << to_yaml(p);
  p.plan.bf16_layers = {};
  p.plan.fp8_params = false;
  p.plan.fp8_recipe = Fp8Recipe::mxfp8;
  EXPECT_EQ(parse_plan_file_text(to_yaml(p)), p) << to_yaml(p);
  p.plan.fp8 = Fp8::none;
  p.plan.fp8_recipe = Fp8Recipe::delayed;  // a recipe without fp8 is not written (it means nothing)
  p.plan.fp4 = Fp4::nvfp4;
  EXPECT_NE(to_yaml(p).find("fp4: nvfp4"), std::string::npos) << to_yaml(p);
  EXPECT_EQ(parse_plan_file_text(to_yaml(p)), p) << to_yaml(p);
  p.plan.cpu_embedding = true;
  EXPECT_NE(to_yaml(p).find("cpu_embedding: true"), std::string::npos) << to_yaml(p);
  EXPECT_EQ(parse_plan_file_text(to_yaml(p)), p) << to_yaml(p);
  p.plan.recompute = Recompute::selective;
  p.plan.recompute_layers = 0;
  p.plan.recompute_modules = recompute_module::moe_act | recompute_module::layernorm;
  EXPECT_NE(to_yaml(p).find("recompute_modules: [moe_act, layernorm]"), std::string::npos) << to_yaml(p);
  EXPECT_EQ(parse_plan_file_text(to_yaml(p)), p) << to_yaml(p);
  p.plan.cp = 4;
  EXPECT_EQ(parse_plan_file_text(to_yaml(p)), p) << to_yaml(p);
  EXPECT_NE(to_yaml(p).find("context_parallel: 4"), std::string::npos) << to_yaml(p);
  for (GradReduce g : {GradReduce::fp32, GradReduce::training}) {
    p.plan.grad_reduce = g;
    EXPECT_NE(to_yaml(p).find(std::string("grad_reduce_dtype: ") + to_string(g)), std::string::npos) << to_yaml(p);
    EXPECT_EQ(parse_plan_file_text(to_yaml(p)), p) << to_yaml(p);
  }
}

TEST(RoundTrip, SaveRefusesToOverwriteAndWritesAtomically) {
  const auto dir = std::filesystem::temp_directory_path() / ("starfish_rt_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "a.yaml").string();
  save_text_file(path, "one\n", false);
  EXPECT_THROW(save_text_file(path, "two\n", false), SpecError);
  std::ifstream in(path);
  std::string content((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(content, "one\n");  // the user's file is untouched
  save_text_file(path, "two\n", true);
  std::ifstream in2(path);
  std::string content2((std::istreambuf_iterator<char>(in2)), {});
  EXPECT_EQ(content2, "two\n");
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace starfish

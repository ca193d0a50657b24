// Every class of bad input gives one line naming file:line:column and the field.
#include <gtest/gtest.h>

#include <string>

#include "sim/spec/job.h"
#include "sim/spec/spec_io.h"
#include "support/cluster_yaml.h"
#include "support/error_of.h"

namespace starfish {
namespace {

const char* kModel = R"(name: m
layers: 24
hidden: 1024
heads: 16
seq_len: 1024
vocab: 50257
)";

using ::starfish::testing::kCluster;

using ::starfish::testing::error_of;

// The error of kModel with `extra` lines appended.
std::string model_error(const std::string& extra) {
  return error_of([&] { parse_model_text(std::string(kModel) + extra, "m.yaml"); });
}

std::string replace(std::string s, const std::string& from, const std::string& to) {
  const size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return s.replace(at, from.size(), to);
}

TEST(SpecErrors, ValidInputsParse) {
  const Model m = parse_model_text(kModel, "m.yaml");
  EXPECT_EQ(m.ffn_hidden, 4096);
  EXPECT_EQ(m.kv_heads, 16);
  const Cluster c = parse_cluster_text(kCluster, "hw.yaml");
  EXPECT_EQ(c.total_gpus(), 8);
  EXPECT_DOUBLE_EQ(c.node.gpu.matmul_efficiency.at(1e9), 0.5);
}

TEST(SpecErrors, MissingField) {
  EXPECT_EQ(error_of([] { parse_model_text(replace(kModel, "vocab: 50257\n", ""), "m.yaml"); }),
            "m.yaml:1:1: field 'vocab': missing required field");
  EXPECT_EQ(error_of([] { parse_cluster_text(replace(kCluster, "    memory: 80GiB\n", ""), "hw.yaml"); }),
            "hw.yaml:6:5: field 'node.gpu.memory': missing required field");
}

TEST(SpecErrors, WrongType) {
  EXPECT_EQ(error_of([] { parse_model_text(replace(kModel, "layers: 24", "layers: many"), "m.yaml"); }),
            "m.yaml:2:1: field 'layers': expected a whole number, got 'many' (no number in 'many')");
  EXPECT_EQ(error_of([] { parse_model_text(replace(kModel, "layers: 24", "layers: [1, 2]"), "m.yaml"); }),
            "m.yaml:2:1: field 'layers': expected a single value, got a list");
  EXPECT_EQ(error_of([] { parse_cluster_text(replace(kCluster, "80GiB", "eighty"), "hw.yaml"); }),
            "hw.yaml:7:5: field 'node.gpu.memory': expected a size like 80GiB, got 'eighty' (no number in 'eighty')");
}

TEST(SpecErrors, NegativeSize) {
  EXPECT_EQ(error_of([] { parse_cluster_text(replace(kCluster, "80GiB", "-80GiB"), "hw.yaml"); }),
            "hw.yaml:7:5: field 'node.gpu.memory': expected a size like 80GiB, got '-80GiB' (negative value '-80GiB')");
  EXPECT_EQ(error_of([] { parse_model_text(replace(kModel, "hidden: 1024", "hidden: -1024"), "m.yaml"); }),
            "m.yaml:3:1: field 'hidden': must be at least 1, got '-1024'");
}

TEST(SpecErrors, UnknownKey) {
  EXPECT_EQ(model_error("layres: 3\n").substr(0, 52),
            "m.yaml:7:1: field 'layres': unknown field (expected ");
  const std::string e = error_of([] { parse_cluster_text(replace(kCluster, "memory: 1TiB", "memroy: 1TiB"), "hw.yaml"); });
  EXPECT_EQ(e.substr(0, 40), "hw.yaml:12:5: field 'node.host.memory': ") << e;
}

TEST(SpecErrors, UnknownUnitAndChoice) {
  EXPECT_EQ(error_of([] { parse_cluster_text(replace(kCluster, "300GB/s", "300GB"), "hw.yaml"); }),
            "hw.yaml:17:12: field 'node.nvlink.bandwidth': expected a bandwidth like 900GB/s, got '300GB' (unknown unit "
            "'GB' for a bandwidth (use B/s, KB/s, MB/s, GB/s, TB/s, KiB/s, MiB/s, GiB/s, TiB/s, b/s, Kb/s, Mb/s, Gb/s, "
            "Tb/s, bps, Kbps, Mbps, Gbps, Tbps))");
  EXPECT_EQ(model_error("activation: relu\n"),
            "m.yaml:7:1: field 'activation': 'relu' is not one of: gelu, swiglu");
}

TEST(SpecErrors, LinkEfficiencyIsAFractionOfTheRatedRate) {
  const Cluster c = parse_cluster_text(replace(kCluster, "{bandwidth: 300GB/s}", "{bandwidth: 300GB/s, efficiency: 0.8}"), "hw.yaml");
  EXPECT_DOUBLE_EQ(c.node.nvlink->achieved_Bps(), 240e9);
  EXPECT_DOUBLE_EQ(parse_cluster_text(kCluster, "hw.yaml").node.nvlink->achieved_Bps(), 300e9);  // absent: the rated rate
  EXPECT_EQ(error_of([] {
              parse_cluster_text(replace(kCluster, "{bandwidth: 300GB/s}", "{bandwidth: 300GB/s, efficiency: 80%}"), "hw.yaml");
            }),
            "hw.yaml:17:32: field 'node.nvlink.efficiency': expected a number, got '80%' (unexpected unit '%')");
  EXPECT_EQ(error_of([] {
              parse_cluster_text(replace(kCluster, "{bandwidth: 300GB/s}", "{bandwidth: 300GB/s, efficiency: 1.2}"), "hw.yaml");
            }),
            "hw.yaml:17:32: field 'node.nvlink.efficiency': must be within [0.05, 1], got 1.2");
}

TEST(SpecErrors, NvlinkTopologyIsSwitchRingOrMeshAndTheOlderSwitchedStillReads) {
  auto topology_of = [](const std::string& fields) {
    return parse_cluster_text(replace(kCluster, "{bandwidth: 300GB/s}", "{bandwidth: 300GB/s" + fields + "}"), "hw.yaml")
        .node.nvlink->topology;
  };
  EXPECT_EQ(topology_of(""), NvlinkTopology::switched);  // absent: an NVSwitch, as before the field
  EXPECT_EQ(topology_of(", topology: switch"), NvlinkTopology::switched);
  EXPECT_EQ(topology_of(", topology: ring"), NvlinkTopology::ring);
  EXPECT_EQ(topology_of(", topology: mesh"), NvlinkTopology::mesh);
  EXPECT_EQ(topology_of(", switched: true"), NvlinkTopology::switched);  // profiles written before topology
  EXPECT_EQ(topology_of(", switched: false"), NvlinkTopology::ring);
  EXPECT_EQ(error_of([] {
              parse_cluster_text(replace(kCluster, "{bandwidth: 300GB/s}", "{bandwidth: 300GB/s, topology: star}"), "hw.yaml");
            }),
            "hw.yaml:17:32: field 'node.nvlink.topology': 'star' is not one of: switch, ring, mesh");
  EXPECT_EQ(error_of([] {
              parse_cluster_text(replace(kCluster, "{bandwidth: 300GB/s}", "{bandwidth: 300GB/s, topology: mesh, switched: true}"),
                                 "hw.yaml");
            }),
            "hw.yaml:17:48: field 'node.nvlink.switched': give topology: switch | ring | mesh, or the older switched: true "
            "| false, not both");
  EXPECT_EQ(error_of([] {
              parse_cluster_text(
                  replace(kCluster, "{bandwidth: 300GB/s}", "{bandwidth: 300GB/s, topology: mesh, domain_nodes: 2}"), "hw.yaml");
            }),
            "hw.yaml:17:48: field 'node.nvlink.domain_nodes': an NVLink domain across nodes needs topology: switch");
}

TEST(SpecErrors, AttentionEfficiencyIsAMeasuredFractionPerKernelGenerationAndPass) {
  const std::string curve = "matmul_efficiency: [[1GFLOP, 0.5], [1TFLOP, 0.9]]";
  const Cluster c = parse_cluster_text(
      replace(kCluster, curve, curve + "\n    attention_efficiency: {flash1: 0.4, flash1_backward: 0.26, flash2: 0.73}"),
      "hw.yaml");
  const AttentionEfficiency& a = c.node.gpu.attention_efficiency;
  EXPECT_DOUBLE_EQ(a.forward(true), 0.4);
  EXPECT_DOUBLE_EQ(a.backward(true), 0.26);
  EXPECT_DOUBLE_EQ(a.forward(false), 0.73);
  EXPECT_DOUBLE_EQ(a.backward(false), 0.73);  // no backward figure: the forward's
  EXPECT_EQ(parse_cluster_text(to_yaml(c), "again.yaml"), c);  // written and read back exactly
  EXPECT_DOUBLE_EQ(parse_cluster_text(kCluster, "hw.yaml").node.gpu.attention_efficiency.flash2, 0);  // absent: not measured
  EXPECT_EQ(error_of([&] {
              parse_cluster_text(replace(kCluster, curve, curve + "\n    attention_efficiency: {flash2: 1.5}"), "hw.yaml");
            }),
            "hw.yaml:11:28: field 'node.gpu.attention_efficiency.flash2': must be within [0.01, 1], got 1.5");
  const std::string e = error_of([&] {
    parse_cluster_text(replace(kCluster, curve, curve + "\n    attention_efficiency: {flash3: 0.7}"), "hw.yaml");
  });
  EXPECT_EQ(e.rfind("hw.yaml:11:28: field 'node.gpu.attention_efficiency.flash3': unknown field", 0), 0u) << e;
}

TEST(SpecErrors, ElementwiseTimesArePerKernelForwardAndBackward) {
  const std::string curve = "matmul_efficiency: [[1GFLOP, 0.5], [1TFLOP, 0.9]]";
  const std::string times = "\n    elementwise: {activation: {forward: 5.6ns, backward: 4.6ns}, loss: {forward: 2ns, backward: 3ns}}";
  const Cluster c = parse_cluster_text(replace(kCluster, curve, curve + times), "hw.yaml");
  EXPECT_DOUBLE_EQ(c.node.gpu.elementwise.activation.forward_s, 5.6e-9);
  EXPECT_DOUBLE_EQ(c.node.gpu.elementwise.activation.backward_s, 4.6e-9);
  EXPECT_DOUBLE_EQ(c.node.gpu.elementwise.loss.backward_s, 3e-9);
  EXPECT_DOUBLE_EQ(c.node.gpu.elementwise.norm.forward_s, 0);  // absent: memory-bound only
  EXPECT_EQ(parse_cluster_text(to_yaml(c), "again.yaml"), c);   // written and read back exactly
  EXPECT_FALSE(parse_cluster_text(kCluster, "hw.yaml").node.gpu.elementwise.any());
  std::string e = error_of([&] {
    parse_cluster_text(replace(kCluster, curve, curve + "\n    elementwise: {gelu: {forward: 1ns, backward: 1ns}}"), "hw.yaml");
  });
  EXPECT_EQ(e.rfind("hw.yaml:11:19: field 'node.gpu.elementwise.gelu': unknown field", 0), 0u) << e;
  e = error_of([&] {
    parse_cluster_text(replace(kCluster, curve, curve + "\n    elementwise: {norm: {forward: 1ns}}"), "hw.yaml");
  });
  EXPECT_EQ(e.rfind("hw.yaml:11:25: field 'node.gpu.elementwise.norm.backward'", 0), 0u) << e;
}

TEST(SpecErrors, NcclCommunicatorBytesAreMeasuredPerPairAndGroup) {
  const std::string curve = "matmul_efficiency: [[1GFLOP, 0.5], [1TFLOP, 0.9]]";
  const Cluster c = parse_cluster_text(
      replace(kCluster, curve, curve + "\n    nccl_communicator: {pair: 544MiB, group: 688MiB}"), "hw.yaml");
  EXPECT_EQ(c.node.gpu.nccl_communicator.pair, 544LL << 20);
  EXPECT_EQ(c.node.gpu.nccl_communicator.group, 688LL << 20);
  EXPECT_EQ(parse_cluster_text(to_yaml(c), "again.yaml"), c);  // written and read back exactly
  EXPECT_EQ(parse_cluster_text(kCluster, "hw.yaml").node.gpu.nccl_communicator.group, 0);  // absent: in `reserved`
  const std::string missing = error_of([&] {
    parse_cluster_text(replace(kCluster, curve, curve + "\n    nccl_communicator: {pair: 544MiB}"), "hw.yaml");
  });
  EXPECT_NE(missing.find("hw.yaml:11:24: field 'node.gpu.nccl_communicator.group'"), std::string::npos) << missing;
  const std::string huge = error_of([&] {
    parse_cluster_text(replace(kCluster, curve, curve + "\n    nccl_communicator: {pair: 1MiB, group: 1TiB}"), "hw.yaml");
  });
  EXPECT_NE(huge.find("field 'node.gpu.nccl_communicator.group': must be at least 0 and below memory"), std::string::npos)
      << huge;
}

TEST(SpecErrors, SyntaxError) {
  EXPECT_EQ(error_of([] { parse_model_text("name: [unclosed\n", "m.yaml"); }).substr(0, 24), "m.yaml:2:1: invalid YAML");
  EXPECT_EQ(error_of([] { load_model("/nonexistent/m.yaml"); }), "/nonexistent/m.yaml: no such file");
}

TEST(SpecErrors, ModelConsistency) {
  EXPECT_EQ(error_of([] { parse_model_text(replace(kModel, "heads: 16", "heads: 15"), "m.yaml"); }),
            "m.yaml:4:1: field 'heads': 15 heads do not divide hidden 1024 (give head_dim when the heads have their own "
            "width)");
  EXPECT_EQ(model_error("head_dim: 131072\n"),
            "m.yaml:7:1: field 'head_dim': 16 heads x 131072 is above 131072, the widest attention Starfish models");
  EXPECT_EQ(model_error("moe: {experts: 8, top_k: 9}\n"),
            "m.yaml:7:19: field 'moe.top_k': routes each token to 9 of only 8 experts");
  EXPECT_EQ(model_error("moe: {experts: 8, top_k: 2, first_dense_layers: 24}\n"),
            "m.yaml:7:29: field 'moe.first_dense_layers': 24 dense layers leave no MoE layer of the 24");
  EXPECT_EQ(model_error("kv_heads: 3\n"),
            "m.yaml:7:1: field 'kv_heads': 3 must divide heads 16");
  EXPECT_EQ(model_error("activation: swiglu\n"),
            "m.yaml:1:1: field 'ffn_hidden': required with activation swiglu (LLaMA sizes are not 4*hidden)");
  const std::string mla = "mla: {kv_lora_rank: 128, qk_nope_head_dim: 64, qk_rope_head_dim: 32, v_head_dim: 64}\n";
  EXPECT_EQ(model_error("bias: false\nkv_heads: 4\n" + mla),
            "m.yaml:8:1: field 'kv_heads': multi-head latent attention projects keys and values for every head: kv_heads "
            "must be heads (16)");
  EXPECT_EQ(model_error(mla),
            "m.yaml:1:1: field 'bias': multi-head latent attention is modelled without biases (DeepSeek's has none): set "
            "bias: false");
  EXPECT_EQ(error_of([] {
              parse_model_text(std::string(kModel) + "bias: false\nmla: {kv_lora_rank: 128, qk_rope_head_dim: 32, v_head_dim: 64}\n",
                               "m.yaml");
            }),
            "m.yaml:8:6: field 'mla.qk_nope_head_dim': missing required field");
}

TEST(SpecErrors, LayerVariantsThatContradictTheModel) {
  EXPECT_EQ(model_error("qkv_bias: true\n"),
            "m.yaml:7:1: field 'qkv_bias': applies with bias: false (bias: true already adds query/key/value biases)");
  EXPECT_EQ(model_error("post_norms: true\nshared_input_norm: true\n"),
            "m.yaml:8:1: field 'shared_input_norm': a parallel layer with one input norm has no post_norms in any model "
            "Starfish knows");
  EXPECT_EQ(model_error("max_positions: 1000\n"),
            "m.yaml:7:1: field 'max_positions': the learned positions end at 1000 tokens, below seq_len 1024");
  EXPECT_EQ(model_error("position: rope\nmax_positions: 2048\n"),
            "m.yaml:8:1: field 'max_positions': applies only with position: learned");
  const std::string mla = "mla: {kv_lora_rank: 128, qk_nope_head_dim: 64, qk_rope_head_dim: 32, v_head_dim: 64}\n";
  EXPECT_EQ(model_error("bias: false\nqk_norm: true\n" + mla),
            "m.yaml:8:1: field 'qk_norm': multi-head latent attention normalises its latents instead (mla)");
  EXPECT_EQ(model_error("embedding_norm: 1\n"),
            "m.yaml:7:1: field 'embedding_norm': expected true or false, got '1'");
}

TEST(SpecErrors, SlidingWindowsThatSayNothing) {
  EXPECT_EQ(model_error("sliding_window: {tokens: 256, full_every: 1}\n"),
            "m.yaml:7:31: field 'sliding_window.full_every': 1 makes every layer full attention: leave out "
            "sliding_window instead");
  EXPECT_EQ(model_error("sliding_window: {tokens: 256, full_every: 25}\n"),
            "m.yaml:7:31: field 'sliding_window.full_every': 25 is beyond the model's 24 layers: every layer would be "
            "windowed (leave out full_every for that)");
  EXPECT_EQ(model_error("sliding_window: {tokens: 0}\n"),
            "m.yaml:7:18: field 'sliding_window.tokens': must be at least 1, got '0'");
  EXPECT_EQ(model_error("sliding_window: {full_every: 2}\n"),
            "m.yaml:7:17: field 'sliding_window.tokens': missing required field");
  EXPECT_EQ(model_error("sliding_window: {tokens: 128, every: 2}\n"),
            "m.yaml:7:31: field 'sliding_window.every': unknown field (expected one of: full_every, tokens)");
}

struct JobParts {
  Model model = parse_model_text(kModel, "m.yaml");
  Cluster cluster = parse_cluster_text(kCluster, "hw.yaml");
};

std::string job_error(const std::string& plan_yaml) {
  JobParts parts;
  return error_of([&] {
    const PlanFile p = parse_plan_file_text(plan_yaml, "plan.yaml");
    make_job(parts.model, parts.cluster, p.training, p.plan);
  });
}

TEST(SpecErrors, PlanAgainstModelAndCluster) {
  EXPECT_EQ(job_error("training: {global_batch: 8}\nplan: {tensor_parallel: 3}\n"),
            "plan.yaml:2:8: field 'plan.tensor_parallel': 3 does not divide the 16 attention heads of model m (m.yaml)");
  EXPECT_EQ(job_error("training: {global_batch: 8}\nplan: {pipeline_parallel: 5}\n"),
            "plan.yaml:2:8: field 'plan.pipeline_parallel': pipeline_parallel 5 x virtual_stages 1 does not divide the "
            "24 layers of model m (m.yaml); for uneven stages set plan.first_stage_layers / last_stage_layers or "
            "plan.stage_layers");
  // 24 layers do not divide over 13 stages, 24 + the embedding's and the loss's slots do (2 a
  // stage): the hint names the slots. Over 26 virtual stages the ends would hold no layer.
  EXPECT_EQ(job_error("training: {global_batch: 8}\nplan: {pipeline_parallel: 13}\n"),
            "plan.yaml:2:8: field 'plan.pipeline_parallel': pipeline_parallel 13 x virtual_stages 1 does not divide the "
            "24 layers of model m (m.yaml); set plan.embedding_in_pipeline_split and plan.loss_in_pipeline_split: true "
            "(Megatron-core's --account-for-embedding/loss-in-pipeline-split: the layers and those two slots divide "
            "evenly)");
  EXPECT_EQ(job_error("training: {global_batch: 8}\nplan: {pipeline_parallel: 2, schedule: interleaved, virtual_stages: 13, "
                      "embedding_in_pipeline_split: true, loss_in_pipeline_split: true}\n"),
            "plan.yaml:2:73: field 'plan.embedding_in_pipeline_split': the first or last virtual stage would hold no "
            "layer (26 slots over 26 virtual stages); Starfish's stages each run at least one of model m (m.yaml)");
  // Megatron-core's recompute modules: what selective recomputation redoes, where the model has it.
  EXPECT_EQ(job_error("training: {global_batch: 8}\nplan: {recompute_modules: [mlp]}\n"),
            "plan.yaml:2:8: field 'plan.recompute_modules': the modules are what selective recomputation redoes: set "
            "recompute: selective (the plan says none)");
  EXPECT_EQ(job_error("training: {global_batch: 8}\nplan: {recompute: selective, recompute_modules: [core_attn, mlp]}\n"),
            "plan.yaml:2:30: field 'plan.recompute_modules': recompute modules other than core_attn are Megatron-core's "
            "(--recompute-modules): set framework: megatron-core (the plan says megatron-lm)");
  EXPECT_EQ(job_error("training: {global_batch: 8}\nplan: {framework: megatron-core, recompute: selective, "
                      "recompute_modules: [moe_act]}\n"),
            "plan.yaml:2:56: field 'plan.recompute_modules': moe_act: model m has no experts");
  EXPECT_EQ(job_error("training: {global_batch: 8}\nplan: {framework: megatron-core, recompute: selective, "
                      "recompute_modules: [core_attn, mlp]}\n"),
            "(no error)");
  EXPECT_EQ(job_error("training: {global_batch: 8}\nplan: {recompute: selective, recompute_modules: [attn]}\n"),
            "plan.yaml:2:50: field 'plan.recompute_modules': unknown module 'attn' (expected one of: core_attn, "
            "moe_act, layernorm, mla_up_proj, mlp, shared_experts)");
  EXPECT_EQ(job_error("training: {global_batch: 8}\nplan: {recompute: selective, recompute_modules: [moe]}\n"),
            "plan.yaml:2:50: field 'plan.recompute_modules': 'moe' (the whole MoE layer, its all-to-alls again) is not "
            "modelled; list its parts instead: moe_act, layernorm, shared_experts");
  EXPECT_EQ(job_error("training: {global_batch: 8}\nplan: {recompute: selective, recompute_modules: [[mlp]]}\n"),
            "plan.yaml:2:50: field 'plan.recompute_modules': each entry is a module's name (expected one of: core_attn, "
            "moe_act, layernorm, mla_up_proj, mlp, shared_experts)");
  EXPECT_EQ(job_error("training: {global_batch: 8}\nplan: {recompute: selective, recompute_modules: []}\n"),
            "plan.yaml:2:30: field 'plan.recompute_modules': lists no module (expected some of: core_attn, moe_act, "
            "layernorm, mla_up_proj, mlp, shared_experts)");
  // Uneven stages: Megatron-core's first/last stage counts, or a list.
  EXPECT_EQ(job_error("training: {global_batch: 8}\nplan: {pipeline_parallel: 4, first_stage_layers: 3, "
                      "last_stage_layers: 3}\n"),
            "(no error)");
  EXPECT_EQ(job_error("training: {global_batch: 8}\nplan: {pipeline_parallel: 4, first_stage_layers: 5}\n"),
            "plan.yaml:2:30: field 'plan.first_stage_layers': leaves 19 of the 24 layers, which do not divide evenly "
            "over the other 3 stages of model m (m.yaml)");
  EXPECT_EQ(job_error("training: {global_batch: 8}\nplan: {pipeline_parallel: 2, stage_layers: [10, 12]}\n"),
            "plan.yaml:2:30: field 'plan.stage_layers': the stages hold 22 layers in all, not the model's 24 of model m "
            "(m.yaml)");
  EXPECT_EQ(job_error("training: {global_batch: 8}\nplan: {pipeline_parallel: 2, stage_layers: [10, x]}\n"),
            "plan.yaml:2:49: field 'plan.stage_layers': each stage's layer count must be a whole number from 1 to "
            "100000");
  EXPECT_EQ(job_error("training: {global_batch: 8}\nplan: {tensor_parallel: 2, data_parallel: 2}\n"),
            "plan.yaml:2:28: field 'plan.data_parallel': tensor_parallel x pipeline_parallel x data_parallel = 4 but "
            "the cluster has 8 GPUs of cluster box (hw.yaml)");
  EXPECT_EQ(job_error("training: {global_batch: 32}\nplan: {tensor_parallel: 8, data_parallel: 4}\n"),
            "plan.yaml:2:28: field 'plan.data_parallel': tensor_parallel x pipeline_parallel x data_parallel = 32 but "
            "the cluster has 8 GPUs of cluster box (hw.yaml); that is 4 nodes: set the plan file's 'nodes:' to 4");
  EXPECT_EQ(job_error("training: {global_batch: 12}\n"),
            "plan.yaml:1:12: field 'training.global_batch': 12 is not a multiple of micro_batch 1 x data_parallel 8");
  EXPECT_EQ(job_error("training: {global_batch: 8}\nplan: {offload: {optimizer: nvme}}\n"),
            "plan.yaml:2:8: field 'plan.offload': offload to nvme, but the hardware has no node.nvme of cluster box "
            "(hw.yaml)");
  EXPECT_EQ(job_error("training: {global_batch: 8}\nplan: {zero_stage: 4}\n"),
            "plan.yaml:2:8: field 'plan.zero_stage': ZeRO stages are 0, 1, 2 and 3, got 4");
  EXPECT_EQ(job_error("training: {global_batch: 8}\nplan: {schedule: interleaved}\n"),
            "plan.yaml:2:8: field 'plan.schedule': the interleaved schedule needs virtual_stages >= 2");
  EXPECT_EQ(job_error("training: {global_batch: 8, dtype: fp16}\n"),
            "plan.yaml:1:29: field 'training.dtype': GPU G has no peak for fp16 of cluster box (hw.yaml)");
  // FP8 is the plan's GEMMs, not the training dtype (TransformerEngine keeps bf16 params).
  EXPECT_EQ(job_error("training: {global_batch: 8, dtype: fp8}\n"),
            "plan.yaml:1:29: field 'training.dtype': fp8 training keeps bf16 params and activations and runs its "
            "GEMMs in fp8: set training.dtype: bf16 and plan.fp8: hybrid");
  EXPECT_EQ(job_error("training: {global_batch: 8}\nplan: {framework: megatron-core, fp8: hybrid}\n"),
            "plan.yaml:2:34: field 'plan.fp8': GPU G has no fp8 peak of cluster box (hw.yaml)");
  EXPECT_EQ(job_error("training: {global_batch: 8}\nplan: {fp8: e4m3x}\n"),
            "plan.yaml:2:8: field 'plan.fp8': 'e4m3x' is not one of: none, hybrid, e4m3");
}

// Block recomputation: Megatron's, under full recomputation, a whole number of layers.
TEST(SpecErrors, BlockRecomputeNamesItsField) {
  EXPECT_EQ(job_error("training: {global_batch: 8}\nplan: {recompute: full, recompute_layers: 2}\n"), "(no error)");
  EXPECT_EQ(job_error("training: {global_batch: 8}\nplan: {recompute_layers: 2}\n"),
            "plan.yaml:2:8: field 'plan.recompute_layers': block recomputation redoes whole layers: set recompute: "
            "full (the plan says none)");
  EXPECT_EQ(job_error("training: {global_batch: 8}\nplan: {framework: fsdp, recompute: full, recompute_layers: 2}\n"),
            "plan.yaml:2:42: field 'plan.recompute_layers': block recomputation is Megatron's (--recompute-method block): "
            "set framework: megatron-lm or megatron-core (the plan says fsdp)");
  EXPECT_EQ(job_error("training: {global_batch: 8}\nplan: {recompute: full, recompute_layers: 0}\n"),
            "plan.yaml:2:25: field 'plan.recompute_layers': must be at least 1, got '0'");
}

// The block-scaled formats: a hwprofile's peak.mxfp8 / peak.fp4, the plan's fp8_recipe: mxfp8 and
// fp4: nvfp4, each refused where the GPU lacks it, with the file, line and field.
TEST(SpecErrors, BlockScaledPeaksAndRecipes) {
  EXPECT_EQ(error_of([] { parse_cluster_text(replace(kCluster, "{bf16: 312TFLOPS}", "{bf16: 312TFLOPS, fp4: 0TFLOPS}"), "hw.yaml"); }),
            "hw.yaml:9:29: field 'node.gpu.peak.fp4': must be positive");
  EXPECT_EQ(error_of([] { parse_cluster_text(replace(kCluster, "{bf16: 312TFLOPS}", "{bf16: 312TFLOPS, fp5: 1TFLOPS}"), "hw.yaml"); })
                .substr(0, 58),
            "hw.yaml:9:29: field 'node.gpu.peak.fp5': unknown field (ex");
  const Cluster blackwell =
      parse_cluster_text(replace(kCluster, "{bf16: 312TFLOPS}", "{bf16: 312TFLOPS, mxfp8: 624TFLOPS, fp4: 1.25PFLOPS}"), "hw.yaml");
  EXPECT_DOUBLE_EQ(blackwell.node.gpu.mxfp8_peak_flops, 624e12);
  EXPECT_DOUBLE_EQ(blackwell.node.gpu.fp4_peak_flops, 1.25e15);
  EXPECT_EQ(job_error("training: {global_batch: 8}\nplan: {framework: megatron-core, fp4: nvfp4}\n"),
            "plan.yaml:2:34: field 'plan.fp4': GPU G has no fp4 peak (peak.fp4) of cluster box (hw.yaml)");
  EXPECT_EQ(job_error("training: {global_batch: 8}\nplan: {fp4: nvfp8}\n"),
            "plan.yaml:2:8: field 'plan.fp4': 'nvfp8' is not one of: none, nvfp4");
  EXPECT_EQ(job_error("training: {global_batch: 8}\nplan: {fp8: e4m3, fp8_recipe: mx}\n"),
            "plan.yaml:2:19: field 'plan.fp8_recipe': 'mx' is not one of: delayed, tensorwise, mxfp8");
}

// fp8 params: a boolean, and only where Megatron gathers them (fp8 GEMMs, distributed optimizer).
TEST(SpecErrors, Fp8ParamsNeedFp8GemmsAndTheDistributedOptimizer) {
  EXPECT_EQ(job_error("training: {global_batch: 8}\nplan: {bf16_layers: {first: 1, middle: 2}}\n"),
            "plan.yaml:2:32: field 'plan.bf16_layers.middle': unknown field (expected one of: first, last)");
  EXPECT_EQ(job_error("training: {global_batch: 8}\nplan: {bf16_layers: {first: -1}}\n"),
            "plan.yaml:2:22: field 'plan.bf16_layers.first': must be at least 0, got '-1'");
  EXPECT_EQ(job_error("training: {global_batch: 8}\nplan: {fp8_params: yes please}\n"),
            "plan.yaml:2:8: field 'plan.fp8_params': expected true or false, got 'yes please'");
  EXPECT_EQ(job_error("training: {global_batch: 8}\nplan: {framework: megatron-core, zero_stage: 1, fp8_params: true}\n"),
            "plan.yaml:2:49: field 'plan.fp8_params': fp8 params need fp8 GEMMs: set fp8: hybrid or e4m3");
}

// The framework holds the states where the plan puts them, or the plan is refused at its field
// (job.h placement_problem); left out of the file, the framework is the one that can.
TEST(SpecErrors, TheFrameworkRunsThePlacement) {
  const std::string batch = "training: {global_batch: 8}\n";
  EXPECT_EQ(job_error(batch + "plan: {framework: megatron-lm, zero_stage: 1, offload: {grads: cpu, optimizer: cpu}}\n"),
            "plan.yaml:2:57: field 'plan.offload.grads': Megatron's DDP keeps its gradient buffer on the GPU, also under "
            "--optimizer-cpu-offload (set grads: gpu)");
  EXPECT_EQ(job_error(batch + "plan: {framework: megatron-core, offload: {optimizer: cpu}}\n"),
            "plan.yaml:2:44: field 'plan.offload.optimizer': Megatron's --optimizer-cpu-offload runs in its distributed "
            "optimizer: set zero_stage: 1 (the plan says 0)");
  EXPECT_EQ(job_error(batch + "plan: {framework: megatron-core, zero_stage: 1, offload: {optimizer: cpu}}\n"), "(no error)");
  EXPECT_EQ(job_error(batch + "plan: {framework: deepspeed, zero_stage: 2, offload: {optimizer: cpu}}\n"),
            "plan.yaml:2:45: field 'plan.offload.grads': DeepSpeed keeps the gradient partitions where its optimizer "
            "steps (offload_optimizer takes them along): set grads: cpu");
  EXPECT_EQ(job_error(batch + "plan: {framework: deepspeed, zero_stage: 2, offload: {params: cpu, grads: cpu, optimizer: cpu}}\n"),
            "plan.yaml:2:55: field 'plan.offload.params': DeepSpeed offloads params (offload_param) under ZeRO stage 3 only "
            "(the plan says zero_stage 2)");
  EXPECT_EQ(job_error(batch + "plan: {framework: fsdp, zero_stage: 3, offload: {grads: cpu, optimizer: cpu}}\n"),
            "plan.yaml:2:40: field 'plan.offload': FSDP's CPUOffload(offload_params=True) moves params and gradients to CPU "
            "memory together and steps the optimizer there: set all three to gpu or all to cpu");
  EXPECT_EQ(job_error(batch + "plan: {framework: starfish, offload: {optimizer: cpu}}\n"),
            "plan.yaml:2:29: field 'plan.offload': Starfish's executor offloads through its chunk runtime only: set "
            "chunk_size, or keep all on the gpu");
  EXPECT_EQ(job_error(batch + "plan: {framework: megatron-lm, micro_batch: 1, chunk_size: 1Mi}\n"),
            "plan.yaml:2:48: field 'plan.chunk_size': Megatron has no chunk runtime: chunked plans run on Starfish's (set "
            "framework: starfish)");
  // DeepSpeed's pipeline engine: 1F1B with ZeRO-0/1.
  EXPECT_EQ(job_error(batch + "plan: {framework: deepspeed, pipeline_parallel: 2, zero_stage: 2}\n"),
            "plan.yaml:2:52: field 'plan.zero_stage': DeepSpeed's pipeline engine runs ZeRO-0 or ZeRO-1 only (ZeRO-2 and "
            "ZeRO-3 are incompatible with pipeline parallelism, runtime/pipe/engine.py)");
  // DeepSpeed steps without Megatron's all-reduce of the sequence-parallel norms' gradients.
  EXPECT_EQ(job_error(batch + "plan: {framework: deepspeed, tensor_parallel: 2, sequence_parallel: true}\n"),
            "plan.yaml:2:50: field 'plan.sequence_parallel': DeepSpeed does not all-reduce the sequence-parallel norms' "
            "gradients over TP (Megatron's optimizer does): their weights drift apart across TP ranks; set "
            "sequence_parallel: false, or framework: megatron-core");
  EXPECT_EQ(job_error(batch + "plan: {framework: deepspeed, tensor_parallel: 2}\n"), "(no error)");
  // Left out, the framework follows the placement: DeepSpeed's ZeRO-Offload, Starfish's chunks.
  EXPECT_EQ(parse_plan_file_text(batch + "plan: {zero_stage: 2, offload: {grads: cpu, optimizer: cpu}}\n").plan.framework,
            Framework::deepspeed);
  EXPECT_EQ(parse_plan_file_text(batch + "plan: {micro_batch: 1, chunk_size: 1Mi}\n").plan.framework, Framework::starfish);
  EXPECT_EQ(parse_plan_file_text(batch + "plan: {zero_stage: 1, offload: {optimizer: cpu}}\n").plan.framework,
            Framework::megatron_lm);
  EXPECT_EQ(job_error(batch + "plan: {zero_stage: 2, offload: {grads: cpu, optimizer: cpu}}\n"), "(no error)");
  // Megatron-LM 2021-22 shards the optimizer only: its ZeRO-3 is DeepSpeed's (or Megatron-core's FSDP).
  EXPECT_EQ(job_error(batch + "plan: {framework: megatron-lm, zero_stage: 3}\n"),
            "plan.yaml:2:32: field 'plan.zero_stage': Megatron-LM (2021-22) shards the optimizer only (its distributed "
            "optimizer is ZeRO-1): ZeRO-3 runs on DeepSpeed (set framework: deepspeed) or Megatron-core's FSDP "
            "(framework: megatron-core)");
  EXPECT_EQ(job_error(batch + "plan: {framework: megatron-core, zero_stage: 3}\n"), "(no error)");
  EXPECT_EQ(parse_plan_file_text(batch + "plan: {zero_stage: 3}\n").plan.framework, Framework::deepspeed);
}

// TP 3 on 8-GPU nodes: some tensor-parallel groups straddle two nodes (the simulator used to
// refuse the resulting uneven data-parallel groups in the middle of a collective).
TEST(SpecErrors, TensorParallelMustBeAlignedToTheNodes) {
  const Model m = parse_model_text(replace(replace(kModel, "heads: 16", "heads: 24"), "hidden: 1024", "hidden: 1536"), "m.yaml");
  const Cluster c = parse_cluster_text(replace(replace(kCluster, "nodes: 1", "nodes: 3"), "  pcie:", "  nic: {count: 8, bandwidth: 200Gb/s}\n  pcie:"),
                                       "hw.yaml");  // 24 GPUs
  auto error = [&](const std::string& plan) {
    return error_of([&] {
      const PlanFile p = parse_plan_file_text(plan, "plan.yaml");
      make_job(m, c, p.training, p.plan);
    });
  };
  EXPECT_EQ(error("training: {global_batch: 24}\nplan: {tensor_parallel: 3}\n"),
            "plan.yaml:2:8: field 'plan.tensor_parallel': 3 neither divides the 8 GPUs per node nor is a multiple of "
            "them, so tensor-parallel groups would straddle nodes of cluster box (hw.yaml)");
  EXPECT_EQ(error("training: {global_batch: 24}\nplan: {tensor_parallel: 6, pipeline_parallel: 4}\n"),
            "plan.yaml:2:8: field 'plan.tensor_parallel': 6 neither divides the 8 GPUs per node nor is a multiple of "
            "them, so tensor-parallel groups would straddle nodes of cluster box (hw.yaml)");
  EXPECT_EQ(error("training: {global_batch: 24}\nplan: {tensor_parallel: 8}\n"), "(no error)");
  EXPECT_EQ(error("training: {global_batch: 24}\nplan: {tensor_parallel: 24}\n"), "(no error)");  // whole nodes
  EXPECT_FALSE(tp_aligned_to_nodes(3, 8));
  EXPECT_TRUE(tp_aligned_to_nodes(3, 6));  // e.g. --gpus 6 of a node
  EXPECT_TRUE(tp_aligned_to_nodes(16, 8));
  EXPECT_FALSE(tp_aligned_to_nodes(12, 8));
}

// PatrickStar, and the chunk runtime, accumulate no gradients: a rank's batch is one micro-batch.
TEST(SpecErrors, AChunkPlanRunsOneMicroBatchPerIteration) {
  EXPECT_EQ(job_error("training: {global_batch: 16}\nplan: {chunk_size: 64Mi, micro_batch: 1}\n"),
            "plan.yaml:2:26: field 'plan.micro_batch': the chunk runtime runs each rank's batch as one micro-batch (no "
            "gradient accumulation, as PatrickStar): micro_batch must be global_batch / data_parallel = 2, got 1");
  EXPECT_EQ(job_error("training: {global_batch: 16}\nplan: {chunk_size: 64Mi, micro_batch: 2}\n"), "(no error)");
  EXPECT_EQ(job_error("training: {global_batch: 16}\nplan: {micro_batch: 1}\n"), "(no error)");  // static: accumulates
}

// A chunked plan runs on Starfish's executor (exec/run.cpp), which trains data parallelism
// only, as PatrickStar: no tensor, pipeline or context parallelism, no selective recomputation.
// The simulator refuses what the executor would, at the field's line.
TEST(SpecErrors, AChunkedPlanIsOneTheDataParallelExecutorRuns) {
  EXPECT_EQ(job_error("training: {global_batch: 8}\nplan: {chunk_size: 64Mi, tensor_parallel: 2, micro_batch: 2}\n"),
            "plan.yaml:2:26: field 'plan.tensor_parallel': Starfish's executor runs data parallelism only "
            "(as PatrickStar's, no tensor parallelism): set tensor_parallel: 1");
  EXPECT_EQ(job_error("training: {global_batch: 8}\nplan: {chunk_size: 64Mi, micro_batch: 1, recompute: selective}\n"),
            "plan.yaml:2:42: field 'plan.recompute': Starfish's executor recomputes whole layers (full) or nothing "
            "(none), not selective");
  EXPECT_EQ(job_error("training: {global_batch: 8}\nplan: {framework: starfish, tensor_parallel: 2, micro_batch: 2}\n"),
            "plan.yaml:2:29: field 'plan.tensor_parallel': Starfish's executor runs data parallelism only "
            "(as PatrickStar's, no tensor parallelism): set tensor_parallel: 1");
  EXPECT_EQ(job_error("training: {global_batch: 8}\nplan: {chunk_size: 64Mi, micro_batch: 1, recompute: full}\n"), "(no error)");
  // The same shape on Megatron, without chunks, runs.
  EXPECT_EQ(job_error("training: {global_batch: 8}\nplan: {tensor_parallel: 2, micro_batch: 2, recompute: selective}\n"),
            "(no error)");
}

// PatrickStar's CPU embedding: a chunk-runtime mechanism (so at TP 1, above), for one whole
// vocabulary per rank, whose weight never reaches the GPU where a tied output head would need it.
TEST(SpecErrors, TheCpuEmbeddingNeedsChunksAndAnUntiedHead) {
  EXPECT_EQ(job_error("training: {global_batch: 8}\nplan: {cpu_embedding: true}\n"),
            "plan.yaml:2:8: field 'plan.cpu_embedding': the CPU embedding is the chunk runtime's (PatrickStar's "
            "use_cpu_embedding): set chunk_size, or cpu_embedding: false");
  EXPECT_EQ(job_error("training: {global_batch: 8}\nplan: {chunk_size: 64Mi, micro_batch: 1, cpu_embedding: true}\n"),
            "plan.yaml:2:42: field 'plan.cpu_embedding': a tied output head multiplies by the word embedding on the GPU, "
            "which the CPU embedding keeps on the CPU: the model needs tied_embeddings: false");
  JobParts untied;
  untied.model.tied_embeddings = false;
  const PlanFile p = parse_plan_file_text("training: {global_batch: 8}\nplan: {chunk_size: 64Mi, micro_batch: 1, "
                                          "cpu_embedding: true}\n", "plan.yaml");
  EXPECT_TRUE(make_job(untied.model, untied.cluster, p.training, p.plan).plan.cpu_embedding);
  EXPECT_EQ(job_error("training: {global_batch: 8}\nplan: {chunk_size: 64Mi, micro_batch: 1, cpu_embedding: maybe}\n"),
            "plan.yaml:2:42: field 'plan.cpu_embedding': expected true or false, got 'maybe'");
}

TEST(SpecErrors, GradReduceDtypeIsFp32OrTheTrainingDtype) {
  EXPECT_EQ(job_error("training: {global_batch: 8, dtype: bf16}\nplan: {grad_reduce_dtype: bf16}\n"),
            "plan.yaml:2:8: field 'plan.grad_reduce_dtype': 'bf16' is not one of: default, fp32, training");
  EXPECT_EQ(job_error("training: {global_batch: 8, dtype: fp16}\nplan: {chunk_size: 64Mi, micro_batch: 1, "
                      "grad_reduce_dtype: fp32}\n"),
            "plan.yaml:2:42: field 'plan.grad_reduce_dtype': the chunk runtime reduces gradients in their chunks' "
            "dtype (fp16), not fp32");
}

TEST(SpecErrors, DataParallelIsDerived) {
  JobParts parts;
  const PlanFile p = parse_plan_file_text("training: {global_batch: 64}\nplan: {tensor_parallel: 2, pipeline_parallel: 2}\n");
  const Job job = make_job(parts.model, parts.cluster, p.training, p.plan);
  EXPECT_EQ(job.plan.dp, 2);
  EXPECT_EQ(job.micro_batches(), 32);
}

}  // namespace
}  // namespace starfish

// Mixture-of-experts layers (sim/cost/moe.h) against hand-computed cases: parameter counts,
// the grouped GEMMs' shapes, the all-to-all's volume and time, FLOPs, memory per GPU.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sim/cost/activations.h"
#include "sim/cost/collectives.h"
#include "sim/cost/estimate.h"
#include "sim/cost/flops.h"
#include "sim/cost/moe.h"
#include "sim/cost/op_time.h"
#include "sim/cost/params.h"
#include "sim/spec/job.h"
#include "test_support.h"

namespace starfish {
namespace {

// A small Mixtral-like model: 4 layers, hidden 512, SwiGLU experts of 1024, no biases; layer 0
// dense, then every 2nd layer from 1 MoE (layers 1 and 3), 8 routed experts top-2, 1 shared.
Model small_moe() {
  Model m = testing::llama2_7b();
  m.name = "moe-test";
  m.layers = 4;
  m.hidden = 512;
  m.heads = 8;
  m.kv_heads = 8;
  m.ffn_hidden = 2048;
  m.seq_len = 1024;
  m.vocab = 1000;
  m.moe = Moe{8, 2, 1, 1024, 1, 2, 0};
  return m;
}

// TP2 x DP4 with sequence parallelism, micro-batches of 2 sequences, EP 4, ETP 1.
Plan tp2_ep4_plan() {
  Plan p;
  p.tp = 2;
  p.dp = 4;
  p.micro_batch = 2;
  p.sequence_parallel = true;
  p.ep = 4;
  p.etp = 1;
  return p;
}

TEST(Moe, ParameterCountsTotalAndActiveByHand) {
  const Model m = small_moe();
  EXPECT_FALSE(m.moe_layer(0));
  EXPECT_TRUE(m.moe_layer(1));
  EXPECT_FALSE(m.moe_layer(2));
  EXPECT_TRUE(m.moe_layer(3));
  const int64_t h = 512, f = 2048, fe = 1024, V = 1000;
  const int64_t attention = 4 * h * h, norms = 2 * h;
  const int64_t dense_mlp = 3 * h * f, expert = 3 * h * fe;
  const int64_t moe_mlp = h * 8 /* router */ + 1 * expert /* shared */ + 8 * expert;
  const ParamCount c = count_parameters(m);
  EXPECT_EQ(c.moe_layers, 2);
  EXPECT_EQ(c.per_layer, attention + norms + dense_mlp);
  EXPECT_EQ(c.per_moe_layer, attention + norms + moe_mlp);
  EXPECT_EQ(c.experts_per_moe_layer, 8 * expert);
  EXPECT_EQ(c.total, 2 * V * h + h + 2 * c.per_layer + 2 * c.per_moe_layer);
  EXPECT_EQ(c.active, c.total - 2 * 6 * expert);  // each token skips 6 of the 8 routed experts
  // EP 4 x ETP 2: 2 whole experts per rank, each split in two.
  EXPECT_EQ(moe_layer_expert_params(m, 4, 2), 2 * expert / 2);
  Plan p;
  p.tp = 2;
  p.ep = 4;
  p.etp = 2;
  EXPECT_EQ(shard_parameters(m, plan_shard(p, 0)),
            V * h / 2 + 2 * ((attention + dense_mlp) / 2 + norms) +        // embedding, dense layers 0 and 2
                2 * (attention / 2 + norms + h * 8 + expert / 2 + 2 * expert / 2) +  // MoE layers 1 and 3
                h + V * h / 2);                                                // final norm, head
}

TEST(Moe, GroupedGemmsRunAtTheirRealShape) {
  // s x b = 1024 x 2 tokens, TP2 with SP: 1024 tokens per GPU, 2048 routed copies. EP 4: the
  // EP group's 4 x 2048 copies over 8 experts = 1024 rows per expert; 2 experts per GPU.
  const Model m = small_moe();
  Plan p = tp2_ep4_plan();
  const MoeLayerShape x = moe_layer_shape(m, p);
  EXPECT_DOUBLE_EQ(x.tokens, 1024);
  EXPECT_DOUBLE_EQ(x.routed, 2048);
  EXPECT_EQ(x.local_experts, 2);
  EXPECT_DOUBLE_EQ(x.tokens_per_expert, 1024);
  EXPECT_DOUBLE_EQ(x.received, 2048);
  const Cluster c = testing::dgx(1);
  const GpuSpec& g = c.node.gpu;
  std::vector<LayerOp> ops;
  append_moe_mlp_ops(ops, g, DType::bf16, m, p);
  auto find = [&](const std::string& name) {
    for (const LayerOp& op : ops)
      if (name == op.name) return op;
    ADD_FAILURE() << name;
    return LayerOp{};
  };
  // Each expert's up/gate GEMM: 1024 x 512 x 2048 (gate and up), at its own size's efficiency.
  const double in_each = 2.0 * 1024 * 512 * 2 * 1024;
  const LayerOp in = find("MoE grouped expert GEMM in");
  EXPECT_DOUBLE_EQ(in.forward_s, 2 * in_each / (g.peak(DType::bf16) * g.matmul_efficiency.at(in_each)));
  EXPECT_DOUBLE_EQ(in.backward_s, 2 * in.forward_s);
  const double out_each = 2.0 * 1024 * 1024 * 512;
  EXPECT_DOUBLE_EQ(find("MoE grouped expert GEMM out").forward_s,
                   2 * out_each / (g.peak(DType::bf16) * g.matmul_efficiency.at(out_each)));
  const double router = 2.0 * 1024 * 512 * 8;
  EXPECT_DOUBLE_EQ(find("MoE router GEMM").forward_s, router / (g.peak(DType::bf16) * g.matmul_efficiency.at(router)));
  // Two local experts: the 2048 received copies of 512 bf16 values are regrouped by expert after
  // the dispatch and back before the combine, a read and a write each, in both passes.
  const double sort_s = 2.0 * 2 * 512 * 2048 / (g.hbm_bandwidth_Bps * g.hbm_efficiency);
  EXPECT_DOUBLE_EQ(find("MoE sort chunks by expert").forward_s, sort_s);
  EXPECT_DOUBLE_EQ(find("MoE restore chunk order").backward_s, sort_s);
  // A stated imbalance of 1.25 makes the busiest rank's experts 25% longer; a capacity factor
  // of 1.1 caps it (tokens beyond capacity are dropped).
  p.moe_load_imbalance = 1.25;
  EXPECT_DOUBLE_EQ(moe_layer_shape(m, p).tokens_per_expert, 1280);
  Model capped = m;
  capped.moe.capacity_factor = 1.1;
  EXPECT_DOUBLE_EQ(moe_layer_shape(capped, p).tokens_per_expert, 1024 * 1.1);
}

TEST(Moe, AllToAllVolumeAndTime) {
  const Model m = small_moe();
  Plan p = tp2_ep4_plan();
  // 2048 routed copies x 512 x 2 bytes per dispatch buffer; each GPU sends 3/4 of it.
  const double bytes = 2048.0 * 512 * 2;
  EXPECT_DOUBLE_EQ(moe_dispatch_bytes(m, p, 2), bytes);
  const Cluster c = testing::dgx(2);  // 300 GB/s NVLink, 2 us; 8 NICs of 25 GB/s, 5 us
  EXPECT_NEAR(moe_all_to_all_time_s(c, m, p, 2), 3 * 2e-6 + bytes * 3 / 4 / 300e9, 1e-15);
  // 16 ranks one apart over two nodes: 7/16 of the buffer over NVLink, 8/16 through the GPU's
  // 25 GB/s NIC share (the slower), one latency per peer: a direct message's, the NIC's 5 us and
  // 1 us of PCIe from each GPU to its NIC.
  EXPECT_NEAR(all_to_all_time_s(c, 16, 1, bytes), 15 * (5e-6 + 2 * 1e-6) + bytes * 8 / 16 / 25e9, 1e-12);
  EXPECT_NEAR(collective_bytes_sent_per_rank(CollectiveKind::all_to_all, 4, bytes), bytes * 3 / 4, 1e-9);
}

TEST(Moe, MegatronCoreWeightsRoutedCopiesInTheExpertsAndKeepsNoExpertOutputs) {
  // The same layer under DeepSpeed (the combine weights the expert outputs and saves them) and
  // Megatron-core (the experts' SwiGLU multiplies each copy's fp32 weight in; the combine sums).
  const Model m = small_moe();
  Plan ds = tp2_ep4_plan(), core = tp2_ep4_plan();
  ds.framework = Framework::deepspeed;
  core.framework = Framework::megatron_core;
  const ActivationOptions o = plan_activation_options(ds, 2, Recompute::none);
  // 2048 routed copies of 512 bf16 values saved by DeepSpeed's combine; Megatron-core keeps the
  // 2048 received copies' fp32 weights instead.
  EXPECT_DOUBLE_EQ(moe_layer_activation_bytes(m, ds, o) - moe_layer_activation_bytes(m, core, o),
                   2048.0 * 512 * 2 - 4.0 * 2048);
  const GpuSpec& g = testing::dgx(1).node.gpu;
  auto op = [&](const Plan& p, const std::string& name) {
    std::vector<LayerOp> ops;
    append_moe_mlp_ops(ops, g, DType::bf16, m, p);
    for (const LayerOp& x : ops)
      if (name == x.name) return x;
    ADD_FAILURE() << name;
    return LayerOp{};
  };
  const double Bps = g.hbm_bandwidth_Bps * g.hbm_efficiency;
  // Unpermute backward: the gradient copied to the 2048 copies from the 1024 tokens, and under
  // DeepSpeed the 2048 expert outputs read besides, for the weights' gradient.
  EXPECT_DOUBLE_EQ(op(core, "MoE unpermute").backward_s, 2.0 * 512 * (2048 + 1024) / Bps);
  EXPECT_DOUBLE_EQ(op(ds, "MoE unpermute").backward_s, 2.0 * 512 * (2 * 2048 + 1024) / Bps);
  // The activation (2048 rows of 1024): SwiGLU's 3 x 2 bytes forward, 5 x 2 backward, plus the
  // weight read forward, and read and gradient written backward, under Megatron-core.
  const double elements = 2048.0 * 1024;
  EXPECT_DOUBLE_EQ(op(ds, "MoE expert activation").forward_s, 3 * 2 * elements / Bps);
  EXPECT_DOUBLE_EQ(op(core, "MoE expert activation").forward_s, (3 * 2 * elements + 4 * 2048) / Bps);
  EXPECT_DOUBLE_EQ(op(core, "MoE expert activation").backward_s, (5 * 2 * elements + 8 * 2048) / Bps);
}

TEST(Moe, BackwardHoldsTheExpertsGradientsBeyondTheDispatchBuffers) {
  // TP2 SP EP4 (1024 tokens on this rank, 2048 routed copies, 2048 received rows of FFN 1024),
  // Megatron-core (flash attention: no s x s gradients). The experts' SwiGLU backward holds its
  // output gradient (2048 x 1024 x 2 = 4 MiB) and its input gradient (8 MiB) with the second
  // grouped GEMM's saved input (4 MiB) freed: 8 MiB, with the arriving gradient (1024 x 512 x 2
  // = 1 MiB); the combine's exchange (4 MiB) and the second GEMM's moment (6 MiB) are less. The
  // dispatch buffers counted for the whole iteration (2 x 2 MiB) hold 4 of it: 5 MiB more.
  const Model m = small_moe();
  Plan p = tp2_ep4_plan();
  p.framework = Framework::megatron_core;
  const ActivationOptions o = plan_activation_options(p, 2, Recompute::none);
  EXPECT_DOUBLE_EQ(moe_dispatch_buffer_bytes(m, p, 2), 4.0 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(moe_layer_backward_transient_bytes(m, p, o), 5.0 * 1024 * 1024);
}

TEST(Moe, FullRecomputationRebuildsTheLargerOfADenseAndAnMoeLayer) {
  // Under full recomputation the layer being back-propagated holds what its forward rebuilds
  // beside its kept input. A stage with MoE layers rebuilds an MoE layer's (its routed copies'
  // expert activations outweigh a dense MLP's); a stage of dense layers only a dense one's.
  Model m = small_moe();
  m.moe.first_dense_layers = 0;
  m.moe.every = 1;  // every layer MoE
  Plan p = tp2_ep4_plan();
  p.framework = Framework::megatron_core;
  p.recompute = Recompute::full;
  const LayerActivations layer = plan_layer_activations(m, p, 2);
  ASSERT_GT(layer.moe_full - layer.moe_kept, layer.full - layer.kept);
  EXPECT_DOUBLE_EQ(peak_stage_activations(m, p, 4, 2, 0, layer).recompute_working_bytes, layer.moe_full - layer.moe_kept);
  // small_moe over two stages of 1 and 3 layers: the first (layer 0, dense) rebuilds a dense
  // layer's, the second (MoE, dense, MoE) an MoE layer's.
  m = small_moe();
  p.pp = 2;
  p.dp = 2;
  p.stage_layers.per_stage = {1, 3};
  EXPECT_DOUBLE_EQ(peak_stage_activations(m, p, 4, 2, 0, layer).recompute_working_bytes, layer.full - layer.kept);
  EXPECT_DOUBLE_EQ(peak_stage_activations(m, p, 4, 2, 1, layer).recompute_working_bytes, layer.moe_full - layer.moe_kept);
}

TEST(Moe, RecomputeModulesDropWhatMegatronCoreDiscardsAndRedoIt) {
  // TP2 SP EP4 in bf16 (1024 tokens on this rank, 2048 received rows of FFN 1024, one shared
  // expert of FFN 1024 split over TP on all 2048 tokens), each module against core_attn alone.
  const Model m = small_moe();
  Plan p = tp2_ep4_plan();
  p.framework = Framework::megatron_core;
  p.recompute = Recompute::selective;
  auto kept = [&](uint8_t modules) {
    Plan q = p;
    q.recompute_modules = modules;
    return moe_layer_activation_bytes(m, q, plan_activation_options(q, 2, Recompute::selective));
  };
  namespace rm = recompute_module;
  const double base = kept(rm::core_attn);
  // moe_act: fc2's saved input, the SwiGLU's output (2048 x 1024 x 2 bytes).
  EXPECT_DOUBLE_EQ(base - kept(rm::core_attn | rm::moe_act), 2048.0 * 1024 * 2);
  // layernorm: the pre-MLP norm's output, the router's saved input (1024 x 512 x 2).
  EXPECT_DOUBLE_EQ(base - kept(rm::core_attn | rm::layernorm), 1024.0 * 512 * 2);
  // shared_experts: its SwiGLU input and output (2048 tokens x 512 columns x (2 x 2 + 2)).
  EXPECT_DOUBLE_EQ(base - kept(rm::core_attn | rm::shared_experts), 2048.0 * 512 * 6);
  // mlp redoes a dense MLP only: an MoE layer keeps what it kept.
  EXPECT_DOUBLE_EQ(kept(rm::core_attn | rm::mlp), base);
  // What each module redoes in backward: the forward of its ops, and nothing else.
  const GpuSpec& g = testing::dgx(1).node.gpu;
  auto recompute_s = [&](uint8_t modules) {
    Plan q = p;
    q.recompute_modules = modules;
    return layer_time(g, DType::bf16, m, plan_layer_shape(q, true), Recompute::selective).recompute_s;
  };
  std::vector<LayerOp> ops = layer_ops(g, DType::bf16, m, plan_layer_shape(p, true));
  auto forward_of = [&](const std::string& prefix) {
    double s = 0;
    for (const LayerOp& op : ops)
      if (std::string(op.name).rfind(prefix, 0) == 0) s += op.forward_s;
    return s;
  };
  EXPECT_GT(forward_of("MoE expert activation"), 0);
  EXPECT_DOUBLE_EQ(recompute_s(rm::moe_act), forward_of("MoE expert activation"));
  EXPECT_DOUBLE_EQ(recompute_s(rm::layernorm), forward_of("MLP norm"));
  EXPECT_DOUBLE_EQ(recompute_s(rm::shared_experts), forward_of("MoE shared expert"));
  EXPECT_DOUBLE_EQ(recompute_s(rm::mlp), 0);
}

TEST(Moe, TheMlpRecomputeModuleRerunsTheDenseLayersCollectivesOnly) {
  // --ops's communication per layer kind under --recompute-modules core_attn mlp: a dense layer's
  // backward reruns its MLP's TP collectives (half a pass's), an MoE layer's does not; with SP
  // a dense backward also gathers QKV's and MLP-in's inputs again (half a pass's), an MoE layer's
  // QKV's only (a quarter); only the MoE layer exchanges tokens.
  Plan p = tp2_ep4_plan();
  p.framework = Framework::megatron_core;
  p.recompute = Recompute::selective;
  p.recompute_modules = recompute_module::core_attn | recompute_module::mlp;
  Training t;
  t.global_batch = 16;
  const PlanLayerCommunication c = layer_communication(make_job(small_moe(), testing::dgx(1), t, p));
  EXPECT_GT(c.dense.tp_forward_s, 0);
  EXPECT_DOUBLE_EQ(c.dense.tp_backward_s, 2 * c.dense.tp_forward_s);
  EXPECT_DOUBLE_EQ(c.moe.tp_backward_s, 1.25 * c.moe.tp_forward_s);
  EXPECT_EQ(c.dense.exchange_forward_s + c.dense.exchange_backward_s, 0);
  EXPECT_GT(c.moe.exchange_forward_s, 0);
}

TEST(Moe, FlopsCountActiveParameters) {
  const Model m = small_moe();
  Model dense = m;
  dense.moe = Moe{};
  const double T = 8.0 * 1024;
  const IterationFlops moe = iteration_flops(m, 8, Recompute::none);
  const IterationFlops base = iteration_flops(dense, 8, Recompute::none);
  // Per MoE layer: the dense MLP (2 T h f x 3) out, the router (2 T h E) and 2 routed + 1 shared
  // experts (2 T h fe x 3 each) in; forward + backward = 3x.
  const double h = 512, f = 2048, fe = 1024;
  const double per_layer = 2 * T * h * 8 + 3 * (2 * T * h * fe * 3) - 2 * T * h * f * 3;
  EXPECT_NEAR(moe.model - base.model, 3 * 2 * per_layer, 1e-6 * moe.model);
}

TEST(Moe, ExpertStatesShardOverExpertDataParallel) {
  // 16 GPUs, TP2 x DP8 (SP): EP 4 x ETP 1 leaves expert DP 4. ZeRO-1 shards the dense optimizer
  // states 8 ways and the experts' 4 ways.
  const Model m = small_moe();
  Plan p;
  p.tp = 2;
  p.sequence_parallel = true;
  p.ep = 4;
  p.etp = 1;
  p.zero_stage = 1;
  Training t;
  t.global_batch = 16;
  t.dtype = DType::bf16;
  const Job j = make_job(m, testing::dgx(2), t, p);
  EXPECT_EQ(expert_data_parallel(j.plan), 4);
  const Estimate e = estimate(j);
  const double n = static_cast<double>(shard_parameters(m, plan_shard(j.plan, 0)));
  const double experts = 2 * static_cast<double>(moe_layer_expert_params(m, 4, 1));
  EXPECT_DOUBLE_EQ(stage_expert_params(m, j.plan, 0), experts);
  EXPECT_DOUBLE_EQ(e.gpu.params_bytes, 2 * n);
  EXPECT_DOUBLE_EQ(e.gpu.optimizer_bytes, 12 * (n - experts) / 8 + 12 * experts / 4);
  EXPECT_GT(e.gpu.buffers_bytes, moe_dispatch_buffer_bytes(m, j.plan, 2) - 1);
}

TEST(Moe, PlansThatCannotRunSayWhy) {
  const Model m = small_moe();
  Training t;
  t.global_batch = 16;
  Plan p;
  p.ep = 3;
  EXPECT_THROW(make_job(m, testing::dgx(1), t, p), SpecError);
  p.ep = 4;
  p.tp = 2;  // TP without sequence parallelism
  try {
    make_job(m, testing::dgx(1), t, p);
    FAIL();
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("need sequence_parallel: true"), std::string::npos) << e.what();
  }
  Plan dense_ep;
  dense_ep.ep = 2;
  EXPECT_THROW(make_job(testing::llama2_7b(), testing::dgx(1), t, dense_ep), SpecError);
}

}  // namespace
}  // namespace starfish

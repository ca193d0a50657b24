// Context parallelism (sim/cost/context_parallel.h, TransformerEngine's ring attention) against
// hand-computed cases: the ring's bytes, its exposed time per step, the attention blocks, the
// activations and model states per GPU, the process groups.
#include <gtest/gtest.h>

#include "sim/cost/activations.h"
#include "sim/cost/context_parallel.h"
#include "sim/cost/estimate.h"
#include "sim/cost/framework.h"
#include "sim/cost/op_time.h"
#include "sim/spec/job.h"
#include "test_support.h"

namespace starfish {
namespace {

// Llama-3-8B-like attention: hidden 4096, 32 heads of 128, 8 key/value heads, 32K tokens.
Model long_context_model() {
  Model m = testing::llama2_7b();  // SwiGLU, RMSNorm, RoPE, no biases, no dropout
  m.layers = 4;
  m.kv_heads = 8;
  m.ffn_hidden = 14336;
  m.seq_len = 32768;
  m.vocab = 1024;
  return m;
}

Plan cp_plan(int tp, int cp) {
  Plan p;
  p.tp = tp;
  p.cp = cp;
  p.sequence_parallel = tp > 1;
  p.framework = Framework::megatron_core;
  return p;
}

TEST(ContextParallel, KvBlockIsOneRanksKeysAndValuesOfItsHeads) {
  // 2 (K, V) x micro-batch 2 x 32768 / 4 tokens x 8 x 128 / 2 (this TP rank's KV heads) x 2 bytes.
  Plan p = cp_plan(2, 4);
  p.micro_batch = 2;
  EXPECT_DOUBLE_EQ(cp_kv_block_bytes(long_context_model(), p, 2), 2.0 * 2 * 8192 * 512 * 2);
}

TEST(ContextParallel, RingExposesWhatEachStepsSendOutlastsItsBlock) {
  // TP8 x CP4 on 4 DGX nodes: CP ranks are 8 apart, one per node, so each send crosses the
  // NICs at this GPU's share, 8 x 25 GB/s / 8 GPUs = 25 GB/s, after 7 us of latency (the NIC's 5
  // and the PCIe hop between GPU and NIC on each end, 1 each).
  const Cluster c = testing::dgx(4);
  const Model m = long_context_model();
  const Plan p = cp_plan(8, 4);
  const double kv = 2.0 * 8192 * (1024 / 8) * 2;  // 4 MiB
  EXPECT_DOUBLE_EQ(cp_kv_block_bytes(m, p, 2), kv);
  const LinkParams link = cp_ring_link(c, p);
  EXPECT_TRUE(link.inter_node);
  EXPECT_DOUBLE_EQ(link.bandwidth_Bps, 25e9);
  EXPECT_DOUBLE_EQ(link.latency_s, 7e-6);
  const double send1 = 7e-6 + kv / 25e9, send2 = 7e-6 + 2 * kv / 25e9;  // 174.8 us, 342.6 us

  LayerTime lt;
  lt.core_forward_s = 4 * 100e-6;   // blocks of 100 us: every forward send shows 74.8 us
  lt.core_backward_s = 4 * 250e-6;  // blocks of 250 us: KV alone hides, KV + dKV shows 92.6 us
  const CpRing ring = cp_ring(c, m, p, 2, lt);
  EXPECT_EQ(ring.forward.send_bytes, (std::vector<double>{kv, kv, kv, 0}));
  EXPECT_EQ(ring.backward.send_bytes, (std::vector<double>{kv, 2 * kv, 2 * kv, kv}));
  const double forward = 3 * (send1 - 100e-6), backward = 2 * (send2 - 250e-6);
  EXPECT_NEAR(ring.forward_exposed_s, forward, 1e-12);
  EXPECT_NEAR(ring.layer_exposed_s, forward + backward, 1e-12);

  // Full recomputation reruns the forward, its ring with it.
  Plan full = p;
  full.recompute = Recompute::full;
  EXPECT_NEAR(cp_ring(c, m, full, 2, lt).layer_exposed_s, 2 * forward + backward, 1e-12);
  // CP 2: the backward's two steps send K, V and then dK, dV, each once.
  const CpRing two = cp_ring(c, m, cp_plan(8, 2), 2, lt);
  EXPECT_EQ(two.backward.send_bytes, (std::vector<double>{2 * kv, 2 * kv}));
  // Without CP, no ring.
  EXPECT_DOUBLE_EQ(cp_ring(c, m, cp_plan(8, 1), 2, lt).layer_exposed_s, 0);
}

TEST(ContextParallel, RingInsideANodeRunsOverNvlink) {
  const Cluster c = testing::dgx(1);
  const LinkParams link = cp_ring_link(c, cp_plan(2, 4));  // ranks 0, 2, 4, 6
  EXPECT_FALSE(link.inter_node);
  EXPECT_DOUBLE_EQ(link.bandwidth_Bps, c.intra_node_bandwidth_Bps());
}

TEST(ContextParallel, AttentionRunsAsCpBlocksOfLocalCausalSize) {
  // 32768 tokens over CP 4: each of the 4 steps is 2 (s/4)^2 d FLOPs per head (the causal
  // diagonal of the rank's two chunks, or half of one side against the whole other), 32 heads;
  // over the 4 ranks that is the whole causal product, 2 s^2 d per head.
  const Cluster c = testing::dgx(1);
  const Model m = long_context_model();
  LayerShape shape;
  shape.attention = Attention::flash;
  shape.cp = 4;
  const double each = 2.0 * 8192 * 8192 * 128;
  EXPECT_DOUBLE_EQ(4 * 4 * each, 2.0 * 32768 * 32768 * 128);
  const double expected = 4 * each * 32 / (312e12 * c.node.gpu.matmul_efficiency.at(each));
  bool found = false;
  for (const LayerOp& op : layer_ops(c.node.gpu, DType::bf16, m, shape)) {
    if (std::string(op.name) != "flash attention") continue;
    found = true;
    EXPECT_NEAR(op.forward_s / expected, 1.0, 1e-12);
    EXPECT_NEAR(op.backward_s / expected, 2.5, 1e-12);
  }
  EXPECT_TRUE(found);
  // The layer's attention core is that op: what the ring's blocks divide.
  const LayerTime lt = layer_time(c.node.gpu, DType::bf16, m, shape, Recompute::none);
  EXPECT_NEAR(lt.core_forward_s / expected, 1.0, 1e-12);
}

TEST(ContextParallel, ActivationsAndBoundaryAreDividedByCp) {
  // With fused attention every stored tensor is per token: CP 4 keeps a quarter.
  const Model m = long_context_model();
  const Plan one = cp_plan(2, 1), four = cp_plan(2, 4);
  for (Recompute rc : {Recompute::none, Recompute::selective, Recompute::full}) {
    const double a1 = layer_activation_bytes(m, 1, plan_activation_options(one, 2, rc));
    const double a4 = layer_activation_bytes(m, 1, plan_activation_options(four, 2, rc));
    EXPECT_DOUBLE_EQ(4 * a4, a1) << to_string(rc);
  }
  EXPECT_DOUBLE_EQ(boundary_bytes(m, four, 2), 2.0 * 8192 * 4096);
  // The output layer keeps its logits for a quarter of the tokens too.
  EXPECT_DOUBLE_EQ(4 * peak_stage_activations(m, four, 1, 2, 0).output_bytes,
                   peak_stage_activations(m, one, 1, 2, 0).output_bytes);
}

TEST(ContextParallel, ModelStatesShardOverDpTimesCp) {
  // 16 GPUs at TP2: CP2 x DP4 and CP1 x DP8 shard the distributed optimizer over the same 8
  // ranks (Megatron's data-parallel group with context parallelism); CP halves the activations.
  const Cluster c = testing::dgx(2);
  Training t;
  t.global_batch = 8;
  const Model m = long_context_model();
  Plan cp = cp_plan(2, 2), dp = cp_plan(2, 1);
  cp.zero_stage = dp.zero_stage = 1;
  cp.micro_batch = 2;
  dp.micro_batch = 1;
  const Job with_cp = make_job(m, c, t, cp), without = make_job(m, c, t, dp);
  EXPECT_EQ(with_cp.plan.dp, 4);
  EXPECT_EQ(without.plan.dp, 8);
  const Estimate a = estimate(with_cp), b = estimate(without);
  EXPECT_DOUBLE_EQ(a.gpu.optimizer_bytes, b.gpu.optimizer_bytes);
  EXPECT_DOUBLE_EQ(a.gpu.params_bytes, b.gpu.params_bytes);
  EXPECT_GT(a.time.dp_comm_s, 0);
  EXPECT_NEAR(a.time.dp_comm_s / b.time.dp_comm_s, 1.0, 1e-9);  // the same 8-rank reduction
}

TEST(ContextParallel, RingPeersAreTwoRankCommunicators) {
  // isend/irecv to the next and from the previous CP rank: two 2-rank communicators, one when
  // they are the same rank (CP 2); the gradient group is DP x CP.
  Plan p = cp_plan(2, 1);
  p.dp = 4;
  const Communicators none = nccl_communicators(p, 0, false);
  p.cp = 4;
  p.dp = 1;
  const Communicators four = nccl_communicators(p, 0, false);
  EXPECT_EQ(four.pairs - none.pairs, 2);
  EXPECT_EQ(four.groups, none.groups);  // DP x CP = 4 as DP 4 was
  p.cp = 2;
  p.dp = 2;
  EXPECT_EQ(nccl_communicators(p, 0, false).pairs - none.pairs, 1);
}

TEST(ContextParallel, MakeJobChecksTheRanksAndTheSequence) {
  const Cluster c = testing::dgx(2);
  Training t;
  t.global_batch = 8;
  const Model m = long_context_model();
  // TP2 x CP4 x PP1 x DP2 = 16 GPUs; rank order TP, CP, DP, PP.
  const Job j = make_job(m, c, t, cp_plan(2, 4));
  EXPECT_EQ(j.plan.dp, 2);
  EXPECT_EQ(j.global_rank(1, 0, 0, 0), 1);
  EXPECT_EQ(j.global_rank(0, 0, 0, 1), 2);
  EXPECT_EQ(j.global_rank(0, 1, 0, 0), 8);
  EXPECT_EQ(j.cp_group_ranks(1, 1, 0), (std::vector<int>{9, 11, 13, 15}));
  EXPECT_EQ(j.dp_group_ranks(0, 0), (std::vector<int>{0, 2, 4, 6, 8, 10, 12, 14}));
  auto error = [&](Model model, Plan p) {
    try {
      make_job(model, c, t, p);
    } catch (const SpecError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  Model odd = m;
  odd.seq_len = 32764;  // not a multiple of 2 x CP = 8
  EXPECT_NE(error(odd, cp_plan(2, 4)).find("plan.context_parallel"), std::string::npos);
  EXPECT_NE(error(odd, cp_plan(2, 4)).find("2 x context_parallel = 8 does not divide seq_len 32764"), std::string::npos);
  Plan lm = cp_plan(2, 4);
  lm.framework = Framework::megatron_lm;
  EXPECT_NE(error(m, lm).find("framework: megatron-core"), std::string::npos);
  Plan unfused = cp_plan(2, 4);
  unfused.attention = Attention::unfused;
  EXPECT_NE(error(m, unfused).find("plan.attention"), std::string::npos);
  Plan too_many = cp_plan(2, 4);
  too_many.dp = 4;  // 2 x 4 x 4 = 32 GPUs of 16
  EXPECT_NE(error(m, too_many).find("tensor_parallel x context_parallel x pipeline_parallel x data_parallel = 32"),
            std::string::npos);
  // TransformerEngine's p2p ring takes no sliding window; a window as long as the sequence is none.
  Model swa = m;
  swa.sliding_window = SlidingWindow{4096, 2};
  EXPECT_NE(error(swa, cp_plan(2, 4)).find("does not take a sliding window"), std::string::npos);
  swa.sliding_window.tokens = swa.seq_len;
  EXPECT_EQ(error(swa, cp_plan(2, 4)), "");
}

}  // namespace
}  // namespace starfish

#include <gtest/gtest.h>

#include "sim/cost/activations.h"
#include "sim/cost/pipeline_slots.h"
#include "test_support.h"

namespace starfish {
namespace {

// The tensor-by-tensor count must equal Korthikanti et al.'s closed forms where they apply.
TEST(Activations, EqualKorthikantiClosedFormsForGptLayers) {
  const Model m = testing::gpt(96, 12288, 96, 2048, 51200);
  for (int t : {1, 2, 4, 8})
    for (bool sp : {false, true})
      for (Recompute r : {Recompute::none, Recompute::selective, Recompute::full}) {
        if (sp && t == 1) continue;
        const ActivationOptions o{t, sp, r, 2};
        EXPECT_NEAR(layer_activation_bytes(m, 1, o) / korthikanti_layer_bytes(m, 1, o), 1.0, 1e-12)
            << "t=" << t << " sp=" << sp << " r=" << to_string(r);
      }
}

TEST(Activations, Gpt3LayerWithoutParallelismIsHandComputed) {
  // s b h (34 + 5 a s / h) = 2048 * 12288 * (34 + 5 * 96 * 2048 / 12288) = 2048*12288*114 bytes.
  const Model m = testing::gpt(96, 12288, 96, 2048, 51200);
  EXPECT_DOUBLE_EQ(layer_activation_bytes(m, 1, ActivationOptions{}), 2048.0 * 12288 * 114);
}

TEST(Activations, TheMlpRecomputeModuleKeepsOnlyTheMlpsInput) {
  // Megatron-core's mlp module (a checkpoint of the MLP, TE's fused norm and fc1 inside): a
  // LLaMA-2-7B layer on TP2 with SP, 4096 tokens, bf16, no longer keeps fc1's input (the norm's
  // output, 4096 x 4096 / 2 x 2 bytes) nor the SwiGLU's input and output (4096 x 11008 / 2 x
  // (2 x 2 + 2) bytes); the norm's input, the checkpoint's, stays.
  const Model m = testing::llama2_7b();
  ActivationOptions o{2, true, Recompute::selective, 2, Attention::flash};
  const double kept = layer_activation_bytes(m, 1, o);
  o.recompute_modules = recompute_module::core_attn | recompute_module::mlp;
  EXPECT_DOUBLE_EQ(kept - layer_activation_bytes(m, 1, o), 4096.0 * 4096 / 2 * 2 + 4096.0 * 11008 / 2 * 6);
  EXPECT_DOUBLE_EQ(mlp_activation_bytes(m, 1, o), 0);
}

TEST(Activations, BoundaryIsOneMicroBatchsHiddenStatesAndPipelinesBufferTwo) {
  const Model m = testing::gpt(16, 1024, 16, 2048, 1000);
  Plan p;
  p.micro_batch = 3;
  EXPECT_DOUBLE_EQ(boundary_bytes(m, p, 2), 2.0 * 2048 * 3 * 1024);
  EXPECT_DOUBLE_EQ(pipeline_buffer_bytes(m, p, 2), 0) << "no pipeline, no buffers";
  p.pp = 2;
  EXPECT_DOUBLE_EQ(pipeline_buffer_bytes(m, p, 2), 2 * 2.0 * 2048 * 3 * 1024) << "one received, one sent";
}

TEST(Activations, OneFOneBFirstStageHoldsPipelineDepthMicroBatches) {
  const Model m = testing::gpt(16, 1024, 16, 1024, 1000);
  Plan p;
  p.pp = 4;
  p.recompute = Recompute::full;
  const double per_layer = layer_activation_bytes(m, 1, ActivationOptions{1, false, Recompute::full, 2});
  const StageActivations first = peak_stage_activations(m, p, 32, 2, 0);
  EXPECT_DOUBLE_EQ(first.in_flight_micro_batches, 4);
  EXPECT_DOUBLE_EQ(first.layers_bytes, 4 * 4 * per_layer);  // p micro-batches x L/p layers
  EXPECT_DOUBLE_EQ(peak_stage_activations(m, p, 32, 2, 3).in_flight_micro_batches, 1);
  p.schedule = Schedule::gpipe;
  EXPECT_DOUBLE_EQ(peak_stage_activations(m, p, 32, 2, 3).in_flight_micro_batches, 32);
  p.schedule = Schedule::interleaved;
  p.virtual_stages = 2;
  // (1 + (p-1)/(p v)) = 1 + 3/8 times p micro-batches.
  EXPECT_DOUBLE_EQ(peak_stage_activations(m, p, 32, 2, 0).in_flight_micro_batches, 4 * (1 + 3.0 / 8));
}

TEST(Activations, InterleavedStagesHoldTheirWarmUpForwardsAndOneMore) {
  // Megatron's interleaved warm-up: (p - s - 1) 2 + (v - 1) p virtual-stage forwards before the
  // first backward, then one more forward. p 4, v 2: stage 0 runs 6 + 4 = 10 and holds 11
  // virtual stages (5.5 micro-batches of its layers), stage 3 runs 4 and holds 5 (2.5): the last
  // stage holds nearly as much as the first, not one micro-batch.
  EXPECT_EQ(warmup_forwards(Schedule::interleaved, 4, 0, 32, 2), 10);
  EXPECT_EQ(warmup_forwards(Schedule::interleaved, 4, 3, 32, 2), 4);
  EXPECT_EQ(warmup_forwards(Schedule::interleaved, 4, 0, 4, 2), 8) << "at most m v";
  EXPECT_EQ(warmup_forwards(Schedule::one_f_one_b, 4, 1, 32, 1), 2);
  EXPECT_EQ(warmup_forwards(Schedule::gpipe, 4, 1, 32, 2), 64);
  const Model m = testing::gpt(16, 1024, 16, 1024, 1000);
  Plan p;
  p.pp = 4;
  p.schedule = Schedule::interleaved;
  p.virtual_stages = 2;
  p.recompute = Recompute::full;
  const double per_layer = layer_activation_bytes(m, 1, ActivationOptions{1, false, Recompute::full, 2});
  for (int stage = 0; stage < 4; ++stage) {
    const double held = (2.0 * (4 - stage - 1) + 4 + 1) / 2;
    const StageActivations a = peak_stage_activations(m, p, 32, 2, stage);
    EXPECT_DOUBLE_EQ(a.in_flight_micro_batches, held) << stage;
    EXPECT_DOUBLE_EQ(a.layers_bytes, held * 4 * per_layer) << stage;
  }
}

TEST(Activations, GpipeLastStageHoldsEveryMicroBatchsOutputLayer) {
  // GPipe runs every forward, the loss included, before the first backward: the last stage holds
  // m output layers (the final norm's and head's inputs, the loss's logits), 1F1B one.
  const Model m = testing::gpt(8, 256, 4, 512, 50000);
  Plan p;
  p.pp = 2;
  const double one = 2.0 * 2 * 512 * 256 + 6.0 * 512 * 50000;
  EXPECT_DOUBLE_EQ(output_layer_activation_bytes(m, p, 2), one);
  EXPECT_DOUBLE_EQ(peak_stage_activations(m, p, 8, 2, 1).output_bytes, one);
  p.schedule = Schedule::gpipe;
  EXPECT_DOUBLE_EQ(peak_stage_activations(m, p, 8, 2, 1).output_bytes, 8 * one);
  EXPECT_DOUBLE_EQ(peak_stage_activations(m, p, 8, 2, 0).output_bytes, 0) << "the first stage has no head";
  p.schedule = Schedule::interleaved;
  p.virtual_stages = 2;
  EXPECT_DOUBLE_EQ(peak_stage_activations(m, p, 8, 2, 1).output_bytes, one);
}

TEST(Activations, TheLossAndALayersBackwardAreTwoMomentsNeverHeldTogether) {
  // A micro-batch's output layer is freed by its backward before its layers' backward begins
  // (the simulator's op order): the last stage peaks at the larger of the two moments. Under
  // GPipe the other micro-batches' output layers stay held through a layer's backward.
  const Model m = testing::gpt(8, 256, 4, 512, 50000);
  Plan p;
  p.pp = 2;
  p.recompute = Recompute::full;
  const double one = output_layer_activation_bytes(m, p, 2);
  for (const Schedule s : {Schedule::one_f_one_b, Schedule::gpipe}) {
    p.schedule = s;
    const StageActivations a = peak_stage_activations(m, p, 8, 2, 1);
    const double held = s == Schedule::gpipe ? 7 * one : 0;
    EXPECT_DOUBLE_EQ(a.output_held_in_backward_bytes, held);
    const double backward = held + a.recompute_working_bytes + a.backward_transient_bytes;
    ASSERT_GT(a.recompute_working_bytes + a.backward_transient_bytes, 0);
    EXPECT_DOUBLE_EQ(a.total(), a.layers_bytes + std::max(a.output_bytes, backward)) << to_string(s);
    EXPECT_LT(a.total(), a.layers_bytes + a.output_bytes + a.recompute_working_bytes + a.backward_transient_bytes);
  }
  // The first stage has no loss: its layer's backward is its moment.
  const StageActivations first = peak_stage_activations(m, p, 8, 2, 0);
  EXPECT_DOUBLE_EQ(first.total(), first.layers_bytes + first.embedding_bytes + first.recompute_working_bytes +
                                      first.backward_transient_bytes);
}

TEST(Activations, LastStageHoldsTheLossLogitsAtTheirMost) {
  const Model m = testing::gpt(2, 64, 4, 128, 50000);
  Plan p;
  p.tp = 1;
  // Megatron's vocab-parallel loss: the 16-bit logits and their fp32 copy, 6 bytes per logit.
  StageActivations a = peak_stage_activations(m, p, 1, 2, 0);
  EXPECT_DOUBLE_EQ(a.output_bytes, 2.0 * 2 * 128 * 64 + 6.0 * 128 * 50000);
  // PyTorch's cross_entropy: log-probabilities, their gradient and the input gradient, 12.
  p.framework = Framework::fsdp;
  a = peak_stage_activations(m, p, 1, 2, 0);
  EXPECT_DOUBLE_EQ(a.output_bytes, 2.0 * 2 * 128 * 64 + 12.0 * 128 * 50000);
}

TEST(Activations, BackwardHoldsTheAttentionScoresGradientsWhenTheyOutweighTheMlpFreedBeforeThem) {
  // GPT, h 1024, 16 heads, s 1024, GELU, dropout, unfused attention, TP 1, one sequence (bf16).
  const Model m = testing::gpt(8, 1024, 16, 1024, 1000);
  const double Mi = 1024.0 * 1024;
  // MLP: the arriving gradient (2 MiB), the dropout-add's branch gradient (2) and the second
  // GEMM's input gradient (1024 x 4096 x 2 = 8): 12 MiB. Attention, later: the dropout's and the
  // softmax's s x s gradients (2 x 16 x 1024 x 1024 x 2 = 64 MiB), the value gradient (2) and
  // the residual's (2), less the MLP's freed norm input, first-GEMM input and mask (2 + 2 + 1),
  // GELU input and second-GEMM input (8 + 8) and the projection's input (2): 45 MiB.
  EXPECT_DOUBLE_EQ(layer_backward_transient_bytes(m, 1, ActivationOptions{}), 45 * Mi);
  // Without dropout one s x s gradient (32 MiB) and no mask: 36 - 22 = 14 MiB (MLP: 10).
  Model plain = m;
  plain.dropout = false;
  EXPECT_DOUBLE_EQ(layer_backward_transient_bytes(plain, 1, ActivationOptions{}), 14 * Mi);
  // Recomputed or kept, the layer's tensors are all there when its backward starts.
  EXPECT_DOUBLE_EQ(layer_backward_transient_bytes(m, 1, ActivationOptions{1, false, Recompute::full, 2}), 45 * Mi);
}

TEST(Activations, BackwardOfASwigluMlpHoldsItsActivationsInputAndOutputGradients) {
  // Llama-like: h 4096, f 11008, SwiGLU, no dropout, flash attention; TP 8 with SP, 4096 tokens.
  const Model m = testing::llama2_7b();
  ActivationOptions o{8, true, Recompute::none, 2};
  o.attention = Attention::flash;
  const double T = 4096, f = 11008.0 / 8 * T;  // the MLP's width on this rank, in elements
  // The arriving gradient (its sequence shard), the second GEMM's input gradient and the
  // SwiGLU's input gradient (2f), less the second GEMM's saved input, freed by then.
  const double residual = 2.0 * T * 4096 / 8;
  EXPECT_DOUBLE_EQ(layer_backward_transient_bytes(m, 1, o), residual + 2 * f + 2 * 2 * f - 2 * f);
  // Under fp8 that saved input was 1 byte an element: 1 byte more of the gradients' moment.
  o.quantized_input_bytes = 1;
  EXPECT_DOUBLE_EQ(layer_backward_transient_bytes(m, 1, o), residual + 2 * f + 2 * 2 * f - 1 * f);
}

}  // namespace
}  // namespace starfish

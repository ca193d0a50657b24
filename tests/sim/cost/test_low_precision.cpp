// Quantized GEMMs (sim/cost/low_precision.h: fp8 delayed / tensorwise / MXFP8, NVFP4) against
// hand-computed cases: the GEMM time at the format's peak, the casts TransformerEngine adds per
// linear layer, the quantized weight copies in memory, and that both the estimate and the layer
// ops take them.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "sim/cost/activations.h"
#include "sim/cost/collectives.h"
#include "sim/cost/estimate.h"
#include "sim/cost/low_precision.h"
#include "sim/cost/moe.h"
#include "sim/cost/op_time.h"
#include "sim/spec/error.h"
#include "test_support.h"

namespace starfish {
namespace {

// An H100-like GPU: bf16 1000 TFLOPS, fp8 2000, the test efficiency curve (0.5 at 1 GFLOP, 0.9
// at 1 TFLOP, linear in log10 between).
Cluster fp8_cluster(int nodes = 1) {
  Cluster c = testing::dgx(nodes);
  c.node.gpu.peak_flops[DType::bf16] = 1000e12;
  c.node.gpu.peak_flops[DType::fp8] = 2000e12;
  return c;
}

// A Blackwell-like GPU besides: MXFP8 at the fp8 rate, NVFP4 at twice it.
Cluster blackwell_cluster() {
  Cluster c = fp8_cluster();
  c.node.gpu.mxfp8_peak_flops = 2000e12;
  c.node.gpu.fp4_peak_flops = 4000e12;
  return c;
}

constexpr GemmQuantization kDelayed = GemmQuantization::fp8_delayed;

double hbm_s(const GpuSpec& gpu, double bytes) { return bytes / (gpu.hbm_bandwidth_Bps * gpu.hbm_efficiency); }

const LayerOp& op_named(const std::vector<LayerOp>& ops, const std::string& name) {
  for (const LayerOp& op : ops)
    if (name == op.name) return op;
  ADD_FAILURE() << "no op " << name;
  return ops.front();
}

TEST(LowPrecision, GemmRunsAtTheFp8PeakWithTheEfficiencyOfTheSameTimeAtPeak) {
  const GpuSpec gpu = fp8_cluster().node.gpu;
  // 2 TFLOP in fp8 takes as long at peak as 1 TFLOP in bf16: efficiency 0.9.
  EXPECT_DOUBLE_EQ(quantized_matmul_time_s(gpu, DType::bf16, kDelayed, 2e12), 2e12 / (2000e12 * 0.9));
  // 2 GFLOP: as 1 GFLOP in bf16, efficiency 0.5; the same GEMM in bf16 runs at the curve's
  // value at 2 GFLOP (0.5 + 0.4 log10(2) / 3), so fp8 is less than twice as fast.
  const double fp8_s = quantized_matmul_time_s(gpu, DType::bf16, kDelayed, 2e9);
  EXPECT_DOUBLE_EQ(fp8_s, 2e9 / (2000e12 * 0.5));
  const double bf16_s = matmul_time_s(gpu, DType::bf16, 2e9);
  EXPECT_NEAR(bf16_s, 2e9 / (1000e12 * (0.5 + 0.4 * std::log10(2.0) / 3)), 1e-15);
  EXPECT_LT(bf16_s / fp8_s, 2.0);
  EXPECT_GT(bf16_s / fp8_s, 1.8);
}

// NVFP4 at the fp4 peak, with the efficiency of the bf16 GEMM as long at peak (4 TFLOP in fp4
// take as long at peak as 1 TFLOP in bf16: 0.9); MXFP8 at its own peak.
TEST(LowPrecision, Nvfp4GemmRunsAtTheFp4PeakWithTheEfficiencyOfTheSameTimeAtPeak) {
  const GpuSpec gpu = blackwell_cluster().node.gpu;
  EXPECT_DOUBLE_EQ(quantized_matmul_time_s(gpu, DType::bf16, GemmQuantization::nvfp4, 4e12), 4e12 / (4000e12 * 0.9));
  EXPECT_DOUBLE_EQ(quantized_matmul_time_s(gpu, DType::bf16, GemmQuantization::mxfp8, 2e12), 2e12 / (2000e12 * 0.9));
  // A GPU without the format: the error names the hwprofile's key.
  const GpuSpec hopper = fp8_cluster().node.gpu;
  EXPECT_THROW(quantized_matmul_time_s(hopper, DType::bf16, GemmQuantization::nvfp4, 4e12), SpecError);
  try {
    quantized_peak_flops(hopper, GemmQuantization::mxfp8);
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("peak.mxfp8"), std::string::npos) << e.what();
  }
}

TEST(LowPrecision, CastBytesPerRecipe) {
  using GQ = GemmQuantization;
  auto bytes = quantized_cast_bytes_per_element;
  EXPECT_EQ(bytes(GQ::fp8_delayed, CastSource::tensor), 4);          // read 2, write data + transpose
  EXPECT_EQ(bytes(GQ::fp8_delayed, CastSource::norm_output), 0);     // the norm writes fp8 itself
  EXPECT_EQ(bytes(GQ::fp8_tensorwise, CastSource::tensor), 6);       // + the amax pass
  EXPECT_EQ(bytes(GQ::fp8_tensorwise, CastSource::norm_output), 4);  // the amax fused into the norm
  EXPECT_EQ(bytes(GQ::mxfp8, CastSource::tensor), 2 + 2 + 2.0 / 32);  // + an E8M0 scale per 32, each way
  EXPECT_EQ(bytes(GQ::mxfp8, CastSource::norm_output), 2 + 2 + 2.0 / 32);
  EXPECT_EQ(bytes(GQ::nvfp4, CastSource::tensor), 2 + 2 + 1 + 2.0 / 16);  // amax pass, read, 4-bit data + E4M3 scales
  EXPECT_EQ(bytes(GQ::nvfp4, CastSource::norm_output), 5.125);
  EXPECT_EQ(bytes(GQ::nvfp4, CastSource::weight), 5.125);
  EXPECT_EQ(quantized_weight_bytes_per_element(GQ::fp8_tensorwise), 2);
  EXPECT_EQ(quantized_weight_bytes_per_element(GQ::mxfp8), 2.0625);
  EXPECT_EQ(quantized_weight_bytes_per_element(GQ::nvfp4), 1.125);
}

// The plan's fields name one quantization: fp4 wins (make_job refuses fp4 with fp8).
TEST(LowPrecision, PlanFieldsNameTheRecipe) {
  Plan p;
  EXPECT_EQ(gemm_quantization(p), GemmQuantization::none);
  EXPECT_FALSE(p.quantized_gemms());
  p.fp8 = Fp8::e4m3;
  EXPECT_EQ(gemm_quantization(p), GemmQuantization::fp8_delayed);
  p.fp8_recipe = Fp8Recipe::tensorwise;
  EXPECT_EQ(gemm_quantization(p), GemmQuantization::fp8_tensorwise);
  p.fp8_recipe = Fp8Recipe::mxfp8;
  EXPECT_EQ(gemm_quantization(p), GemmQuantization::mxfp8);
  p.fp8 = Fp8::none;
  p.fp4 = Fp4::nvfp4;
  EXPECT_EQ(gemm_quantization(p), GemmQuantization::nvfp4);
  EXPECT_TRUE(p.quantized_gemms());
}

// TP 2 with sequence parallelism and micro-batch 2 under Megatron-core: the layer-op tests' plan.
Plan tp2_sequence_parallel_plan() {
  Plan p;
  p.tp = 2;
  p.micro_batch = 2;
  p.sequence_parallel = true;
  p.framework = Framework::megatron_core;
  return p;
}

// A dense layer's linear ops with fp8, by hand: hidden 1024, 16 heads, FFN 4096, seq 1024,
// micro-batch 2 (T = 2048 tokens), TP 2 with sequence parallelism.
TEST(LowPrecision, DenseLayerLinearOpsAddTheirCastsToTheFp8Gemms) {
  const GpuSpec gpu = fp8_cluster().node.gpu;
  const Model m = testing::gpt(4, 1024, 16, 1024, 1000);
  Plan p = tp2_sequence_parallel_plan();
  p.fp8 = Fp8::hybrid;
  const double T = 2048, h = 1024, f = 4096, t = 2;
  const std::vector<LayerOp> ops = layer_ops(gpu, DType::bf16, m, plan_layer_shape(p));
  // MLP-out: T x f/t inputs cast (4 bytes each), output gradient T x h cast in backward.
  const double out_gemm = quantized_matmul_time_s(gpu, DType::bf16, kDelayed, 2 * T * f * h / t);
  const LayerOp& mlp_out = op_named(ops, "MLP-out GEMM");
  EXPECT_DOUBLE_EQ(mlp_out.forward_s, out_gemm + hbm_s(gpu, 4 * T * f / t));
  EXPECT_DOUBLE_EQ(mlp_out.backward_s, 2 * out_gemm + hbm_s(gpu, 4 * T * h));
  // QKV after the norm: no input cast under delayed scaling; tensorwise casts the T x h / t
  // sequence shard the norm wrote (4 bytes each: the amax comes with the norm).
  const double qkv_gemm = quantized_matmul_time_s(gpu, DType::bf16, kDelayed, 2 * T * h * 3 * h / t);
  EXPECT_DOUBLE_EQ(op_named(ops, "QKV GEMM").forward_s, qkv_gemm);
  EXPECT_DOUBLE_EQ(op_named(ops, "QKV GEMM").backward_s, 2 * qkv_gemm + hbm_s(gpu, 4 * T * 3 * h / t));
  p.fp8_recipe = Fp8Recipe::tensorwise;
  const std::vector<LayerOp> cs = layer_ops(gpu, DType::bf16, m, plan_layer_shape(p));
  EXPECT_DOUBLE_EQ(op_named(cs, "QKV GEMM").forward_s, qkv_gemm + hbm_s(gpu, 4 * T * h / t));
  // Attention's core stays in bf16: the same op as without fp8.
  p.fp8 = Fp8::none;
  const std::vector<LayerOp> bf16 = layer_ops(gpu, DType::bf16, m, plan_layer_shape(p));
  EXPECT_DOUBLE_EQ(op_named(cs, "flash attention").forward_s, op_named(bf16, "flash attention").forward_s);
  EXPECT_DOUBLE_EQ(op_named(bf16, "MLP-out GEMM").forward_s, matmul_time_s(gpu, DType::bf16, 2 * T * f * h / t));
}

// The fp8 weight copies: 2 bytes (data and transpose) per GEMM weight of the stage, plus the
// scaling state (4 GEMMs x 3 tensors x fp32 scale, inverse and one amax entry) per layer.
TEST(LowPrecision, WeightCacheIsTwoBytesPerGemmWeightOfTheStage) {
  Model m = testing::llama2_7b();
  m.layers = 8;
  Plan p;
  p.tp = 2;
  p.pp = 2;
  p.fp8 = Fp8::hybrid;
  const double h = 4096, f = 11008;
  const double per_layer = (h * 3 * h + h * h + 3 * h * f) / 2;  // MHA QKV + proj, SwiGLU (gate, up, down)
  EXPECT_DOUBLE_EQ(stage_quantized_gemm_weights(m, p, 1), 4 * per_layer);
  EXPECT_DOUBLE_EQ(quantized_weight_cache_bytes(m, p, 1), 2 * 4 * per_layer + 4 * 4 * 3 * 4 * 3);
  // MXFP8: 1 + 1 bytes and a scale byte per 32 each way, no per-tensor state.
  p.fp8_recipe = Fp8Recipe::mxfp8;
  EXPECT_DOUBLE_EQ(quantized_weight_cache_bytes(m, p, 1), 2.0625 * 4 * per_layer);
  // NVFP4: 0.5 + 0.5 bytes and an E4M3 scale per 16 each way; two fp32 amaxes per tensor.
  p.fp8 = Fp8::none;
  p.fp4 = Fp4::nvfp4;
  EXPECT_DOUBLE_EQ(quantized_weight_cache_bytes(m, p, 1), 1.125 * 4 * per_layer + 4 * 4 * 3 * 4 * 2);
  p.fp4 = Fp4::none;
  EXPECT_EQ(quantized_weight_cache_bytes(m, p, 1), 0);
}

// Four Llama 2 7B layers on TP 8 with sequence parallelism under Megatron-core, batch 16.
struct JobParts {
  Model model;
  Training training;
  Plan plan;
};
JobParts tp8_llama() {
  JobParts parts{testing::llama2_7b(), Training{}, Plan{}};
  parts.model.layers = 4;
  parts.training.global_batch = 16;
  parts.plan.tp = 8;
  parts.plan.sequence_parallel = true;
  parts.plan.framework = Framework::megatron_core;
  return parts;
}

// One truth: the estimate's GPU buffers grow by exactly the cache, and its optimizer phase by
// the weights' cast (read 2, write 2 per GEMM weight), for the same plan with fp8.
TEST(LowPrecision, EstimateCarriesTheWeightCacheAndCast) {
  const Cluster c = fp8_cluster();
  const auto [m, t, bf16_plan] = tp8_llama();
  Plan p = bf16_plan;
  const Estimate bf16 = estimate(make_job(m, c, t, p));
  p.fp8 = Fp8::hybrid;
  const Estimate fp8 = estimate(make_job(m, c, t, p));
  EXPECT_DOUBLE_EQ(fp8.gpu.buffers_bytes - bf16.gpu.buffers_bytes, quantized_weight_cache_bytes(m, p, 0));
  EXPECT_NEAR(fp8.time.optimizer_s - bf16.time.optimizer_s, hbm_s(c.node.gpu, 4 * stage_quantized_gemm_weights(m, p, 0)), 1e-15);
  // The saved GEMM inputs in fp8 (per token and layer, TP 8 with SP): the two norm outputs
  // (h each, replicated, split by SP) and MLP-out's input (f, split) 1 byte fewer each; the
  // projection's fp8 copy of the context (h) beside flash attention's 16-bit output 1 more. Both
  // peak at the loss (4 layers under 32,000 logits a token), not at a layer's backward, whose
  // gradients would be 1 byte an f element more in fp8 (layer_backward_transient_bytes).
  const double h = m.hidden, f = m.ffn_hidden, tokens = static_cast<double>(m.seq_len);
  for (const Plan& q : {bf16_plan, p}) {
    const StageActivations a = peak_stage_activations(m, make_job(m, c, t, q).plan, 1, 2, 0);
    EXPECT_GT(a.output_bytes, a.recompute_working_bytes + a.backward_transient_bytes);
  }
  EXPECT_DOUBLE_EQ(bf16.gpu.activations_bytes - fp8.gpu.activations_bytes, m.layers * tokens * (2 * h + f - h) / 8);
  EXPECT_LT(fp8.time.compute_s, bf16.time.compute_s);
  EXPECT_GT(fp8.time.compute_s, bf16.time.compute_s / 2);
  // MFU against the fp8 peak the GEMMs run at (PaLM's definition), the 16-bit one without fp8.
  EXPECT_NEAR(fp8.mfu, fp8.model_flops / fp8.time.iteration_s / 8 / 2000e12, 1e-12);
  EXPECT_NEAR(bf16.mfu, bf16.model_flops / bf16.time.iteration_s / 8 / 1000e12, 1e-12);
}

// make_job's error for a small GPT on `cluster`, or "(no error)".
std::string make_job_error(const Cluster& cluster, const Training& training, const Plan& plan) {
  try {
    make_job(testing::gpt(4, 1024, 16, 1024, 1000), cluster, training, plan);
  } catch (const SpecError& e) {
    return std::string(e.what());
  }
  return std::string("(no error)");
}

// make_job admits fp8 only as TransformerEngine runs it: Megatron-core, 16-bit mixed precision.
TEST(LowPrecision, MakeJobRefusesWhatTransformerEngineDoesNotRun) {
  Training t;
  t.global_batch = 8;
  Plan p;
  p.fp8 = Fp8::hybrid;
  auto error = [&](const Training& tr, const Plan& plan) { return make_job_error(fp8_cluster(), tr, plan); };
  EXPECT_NE(error(t, p).find("field 'plan.fp8': fp8 GEMMs are TransformerEngine's, modelled as Megatron-core runs them: "
                             "set framework: megatron-core (the plan says megatron-lm)"),
            std::string::npos)
      << error(t, p);
  p.framework = Framework::megatron_core;
  EXPECT_EQ(error(t, p), "(no error)");
  t.dtype = DType::fp32;
  EXPECT_NE(error(t, p).find("field 'plan.fp8': fp8 GEMMs run inside bf16 or fp16 mixed precision, not fp32"),
            std::string::npos)
      << error(t, p);
}

// bf16 first / last layers (Plan::bf16_layers) as Megatron takes them: under fp8 only, not with
// delayed scaling (fp8_utils.py asserts), and no more of them than the model has.
TEST(LowPrecision, MakeJobRefusesBf16LayersWhereMegatronDoesNot) {
  Training t;
  t.global_batch = 8;
  Plan p;
  p.framework = Framework::megatron_core;
  p.bf16_layers = {1, 1};
  auto error = [&](const Plan& plan) { return make_job_error(fp8_cluster(), t, plan); };
  EXPECT_EQ(error(p), "<code>: field 'plan.bf16_layers': layers kept in bf16 under fp8 GEMMs need fp8 (set fp8, or leave "
                      "bf16_layers out)");
  p.fp8 = Fp8::hybrid;
  EXPECT_EQ(error(p), "<code>: field 'plan.bf16_layers': Megatron keeps first / last layers in bf16 under current scaling "
                      "only, not delayed (fp8_utils.py get_fp8_context): set fp8_recipe: tensorwise or mxfp8");
  p.fp8_recipe = Fp8Recipe::tensorwise;
  EXPECT_EQ(error(p), "(no error)");
  p.bf16_layers = {3, 2};  // the model has 4 layers
  EXPECT_NE(error(p).find("field 'plan.bf16_layers': keeps 3 + 2 layers in bf16 but the model has 4"), std::string::npos)
      << error(p);
  p.bf16_layers = {4, 0};
  EXPECT_EQ(error(p), "(no error)");
}

// An NVFP4 dense layer by hand (the same layer as above, TP 2 with SP): MLP-out's input cast is
// 5.125 bytes per element (amax pass, read, 4-bit data with E4M3 scales each way), as the QKV
// input's after the norm (no fused norm for NVFP4), the GEMMs at the fp4 peak.
TEST(LowPrecision, Nvfp4DenseLayerOpsAddTheirCastsToTheFp4Gemms) {
  const GpuSpec gpu = blackwell_cluster().node.gpu;
  const Model m = testing::gpt(4, 1024, 16, 1024, 1000);
  Plan p = tp2_sequence_parallel_plan();
  p.fp4 = Fp4::nvfp4;
  const double T = 2048, h = 1024, f = 4096, t = 2;
  const std::vector<LayerOp> ops = layer_ops(gpu, DType::bf16, m, plan_layer_shape(p));
  const double out_gemm = quantized_matmul_time_s(gpu, DType::bf16, GemmQuantization::nvfp4, 2 * T * f * h / t);
  EXPECT_DOUBLE_EQ(out_gemm, 2 * T * f * h / t / (4000e12 * gpu.matmul_efficiency.at(2 * T * f * h / t / 4)));
  EXPECT_DOUBLE_EQ(op_named(ops, "MLP-out GEMM").forward_s, out_gemm + hbm_s(gpu, 5.125 * T * f / t));
  EXPECT_DOUBLE_EQ(op_named(ops, "MLP-out GEMM").backward_s, 2 * out_gemm + hbm_s(gpu, 5.125 * T * h));
  const double qkv_gemm = quantized_matmul_time_s(gpu, DType::bf16, GemmQuantization::nvfp4, 2 * T * h * 3 * h / t);
  EXPECT_DOUBLE_EQ(op_named(ops, "QKV GEMM").forward_s, qkv_gemm + hbm_s(gpu, 5.125 * T * h / t));
}

// An NVFP4 plan through the estimate: the cache and cast by the NVFP4 bytes, MFU against the fp4
// peak, and faster compute than the same plan's MXFP8.
TEST(LowPrecision, EstimateOfAnNvfp4PlanCarriesItsCacheCastAndPeak) {
  const Cluster c = blackwell_cluster();
  const auto [m, t, bf16_plan] = tp8_llama();
  Plan p = bf16_plan;
  const Estimate bf16 = estimate(make_job(m, c, t, p));
  p.fp8 = Fp8::e4m3;
  p.fp8_recipe = Fp8Recipe::mxfp8;
  const Estimate mx = estimate(make_job(m, c, t, p));
  p.fp8 = Fp8::none;
  p.fp4 = Fp4::nvfp4;
  const Estimate fp4 = estimate(make_job(m, c, t, p));
  EXPECT_DOUBLE_EQ(fp4.gpu.buffers_bytes - bf16.gpu.buffers_bytes, quantized_weight_cache_bytes(m, p, 0));
  EXPECT_NEAR(fp4.time.optimizer_s - bf16.time.optimizer_s,
              hbm_s(c.node.gpu, 5.125 * stage_quantized_gemm_weights(m, p, 0)), 1e-15);
  EXPECT_LT(fp4.time.compute_s, mx.time.compute_s);
  EXPECT_LT(mx.time.compute_s, bf16.time.compute_s);
  EXPECT_NEAR(fp4.mfu, fp4.model_flops / fp4.time.iteration_s / 8 / 4000e12, 1e-12);
  EXPECT_NEAR(mx.mfu, mx.model_flops / mx.time.iteration_s / 8 / 2000e12, 1e-12);
}

// make_job refuses the block-scaled recipes where they cannot run, naming the field and why.
TEST(LowPrecision, MakeJobRefusesBlockScaledRecipesWhereTheyCannotRun) {
  Training t;
  t.global_batch = 8;
  Plan p;
  p.framework = Framework::megatron_core;
  const auto error = make_job_error;
  auto expect_error = [&](const Cluster& c, const Training& tr, const Plan& plan, const std::string& text) {
    EXPECT_NE(error(c, tr, plan).find(text), std::string::npos) << error(c, tr, plan);
  };
  p.fp4 = Fp4::nvfp4;
  EXPECT_EQ(error(blackwell_cluster(), t, p), "(no error)");
  expect_error(fp8_cluster(), t, p, "field 'plan.fp4': GPU " + fp8_cluster().node.gpu.name + " has no fp4 peak (peak.fp4)");
  Training fp16 = t;
  fp16.dtype = DType::fp16;
  expect_error(blackwell_cluster(), fp16, p, "field 'plan.fp4': NVFP4 GEMMs run inside bf16 mixed precision only");
  p.fp8 = Fp8::hybrid;
  expect_error(blackwell_cluster(), t, p, "field 'plan.fp4': fp4 and fp8 GEMMs exclude each other");
  p.fp4 = Fp4::none;
  p.fp8_recipe = Fp8Recipe::mxfp8;
  EXPECT_EQ(error(blackwell_cluster(), t, p), "(no error)");
  expect_error(fp8_cluster(), t, p, "field 'plan.fp8_recipe': GPU " + fp8_cluster().node.gpu.name +
                                        " has no block-scaled MXFP8 tensor cores (peak.mxfp8)");
  p.framework = Framework::deepspeed;
  p.fp8 = Fp8::none;
  p.fp4 = Fp4::nvfp4;
  expect_error(blackwell_cluster(), t, p, "field 'plan.fp4': fp4 GEMMs are TransformerEngine's");
}

}  // namespace
}  // namespace starfish

namespace starfish {
namespace {

// A layer's saved GEMM inputs under each recipe, TP 1, flash attention, by hand: the norms'
// outputs (2h per token) and MLP-out's input (f) at the quantized bytes instead of 2. Under
// delayed scaling the projection keeps a quantized copy of the context (h) beside flash
// attention's output; under the other fp8 recipes Megatron-core has it save the original
// (save_original_input), so no copy. Unfused attention keeps no 16-bit context of its own: the
// projection's saved input is all there is (quantized under delayed scaling).
TEST(LowPrecision, SavedGemmInputsAreKeptQuantized) {
  const Model m = testing::llama2_7b();
  const double h = m.hidden, f = m.ffn_hidden, tokens = static_cast<double>(m.seq_len);
  Plan p;
  p.framework = Framework::megatron_core;
  const ActivationOptions bf16 = plan_activation_options(p, 2, Recompute::none);
  EXPECT_EQ(bf16.quantized_input_bytes, 0);
  struct Case {
    Fp8Recipe recipe;
    double bytes;
    bool projection_copy;
  };
  for (const Case& k : {Case{Fp8Recipe::delayed, 1.0, true}, Case{Fp8Recipe::tensorwise, 1.0, false},
                        Case{Fp8Recipe::mxfp8, 1 + 1.0 / 32, false}}) {
    p.fp8 = Fp8::hybrid;
    p.fp8_recipe = k.recipe;
    const ActivationOptions q = plan_activation_options(p, 2, Recompute::none);
    EXPECT_EQ(q.quantized_input_bytes, k.bytes);
    EXPECT_EQ(q.projection_saves_original_input, !k.projection_copy);
    const double copy = k.projection_copy ? k.bytes * h : 0;
    EXPECT_DOUBLE_EQ(layer_activation_bytes(m, 1, bf16) - layer_activation_bytes(m, 1, q),
                     tokens * ((2 * h + f) * (2 - k.bytes) - copy));
    ActivationOptions unfused_bf16 = bf16, unfused_q = q;
    unfused_bf16.attention = unfused_q.attention = Attention::unfused;
    const double context_saved = k.projection_copy ? h * (2 - k.bytes) : 0;
    EXPECT_DOUBLE_EQ(layer_activation_bytes(m, 1, unfused_bf16) - layer_activation_bytes(m, 1, unfused_q),
                     tokens * ((2 * h + f) * (2 - k.bytes) + context_saved));
  }
  p.fp8 = Fp8::none;
  p.fp4 = Fp4::nvfp4;
  EXPECT_EQ(plan_activation_options(p, 2, Recompute::none).quantized_input_bytes, 0.5 + 1.0 / 16);
  EXPECT_FALSE(plan_activation_options(p, 2, Recompute::none).projection_saves_original_input);
  // Full recomputation keeps the layer's 16-bit input only, quantized GEMMs or not.
  EXPECT_EQ(layer_activation_bytes(m, 1, plan_activation_options(p, 2, Recompute::full)),
            layer_activation_bytes(m, 1, ActivationOptions{1, false, Recompute::full, 2}));
}

// An MoE layer under fp8 (delayed), TP 1, one shared expert, by hand against bf16: the routed
// experts' grouped GEMMs save their inputs in fp8 (received x h and received x f, 1 byte fewer
// each); the MLP norm's output stays 16-bit (the router saves it) while the shared expert's
// fc1 keeps an fp8 copy (h, 1 byte more) and its fc2 input is fp8 (f_shared, 1 fewer); in the
// attention part QKV's fp8 input (1 byte fewer per h) and the projection's fp8 copy of the
// context (1 more) cancel.
TEST(LowPrecision, MoeExpertsSaveTheirGemmInputsQuantized) {
  Model m = testing::gpt(2, 1024, 16, 1024, 1000);
  m.activation = Activation::swiglu;
  m.ffn_hidden = 2048;
  m.moe = Moe{8, 2, 1, 512, 1, 1, 0};
  Plan p;
  p.framework = Framework::megatron_core;
  p.ep = 1;
  const ActivationOptions bf16 = plan_activation_options(p, 2, Recompute::none);
  p.fp8 = Fp8::hybrid;
  const ActivationOptions q = plan_activation_options(p, 2, Recompute::none);
  const MoeLayerShape x = moe_layer_shape(m, p);
  const double h = m.hidden, tokens = static_cast<double>(m.seq_len), fe = m.moe.expert_ffn_hidden;
  const double routed = x.received * h + x.received * x.expert_ffn;
  const double shared = tokens * fe - tokens * h;
  EXPECT_DOUBLE_EQ(moe_layer_activation_bytes(m, p, bf16) - moe_layer_activation_bytes(m, p, q),
                   routed + shared);
}

// fp8 params (Megatron's --fp8-param-gather) on TP 8 x DP 2 with the distributed optimizer:
// the GEMM weights' 16-bit copies go (2 bytes each; their fp8 data and transpose were counted
// as a cache and are now the params), the all-gather after the step moves 1 byte per GEMM weight
// instead of 2, and the weights' cast reads the fp32 master shard (delayed: 4 + 1 bytes per
// element of this rank's half) and builds every weight's transpose (1 + 1) instead of casting
// the 16-bit weights (read 2, write 1 + 1).
TEST(LowPrecision, Fp8ParamsReplaceTheSixteenBitCopiesAndGatherOneByte) {
  const Cluster c = fp8_cluster(2);
  auto [m, t, p] = tp8_llama();
  p.fp8 = Fp8::hybrid;
  p.zero_stage = 1;
  const Estimate cached = estimate(make_job(m, c, t, p));
  p.fp8_params = true;
  const Estimate params = estimate(make_job(m, c, t, p));
  const double weights = stage_quantized_gemm_weights(m, p, 0);
  EXPECT_DOUBLE_EQ(fp8_params_bytes_change(m, t, p, 0), 0.0);  // fp8 data + transpose: 2 bytes, as bf16
  EXPECT_DOUBLE_EQ(cached.gpu.params_bytes + cached.gpu.buffers_bytes - params.gpu.params_bytes - params.gpu.buffers_bytes,
                   2 * weights);
  EXPECT_DOUBLE_EQ(cached.gpu.activations_bytes, params.gpu.activations_bytes);

  const double n = params.params_per_gpu;
  EXPECT_DOUBLE_EQ(zero_param_gather_bytes(m, t, p, 0, n).dense_bytes, 2 * n - weights);
  const LinkParams link = link_for_group(c, 2, 8);
  auto gather_s = [&](double bytes) { return collective_time_s(CollectiveKind::all_gather, CollectiveAlgorithm::ring, 2, bytes, link); };
  EXPECT_NEAR(cached.time.dp_comm_s - params.time.dp_comm_s, gather_s(2 * n) - gather_s(2 * n - weights), 1e-12);
  EXPECT_NEAR(params.time.optimizer_s - cached.time.optimizer_s,
              hbm_s(c.node.gpu, 5 * weights / 2 + 2 * weights) - hbm_s(c.node.gpu, 4 * weights), 1e-12);
}

// The distributed optimizer's ZeRO-1 step: the gradients reduce-scattered in their reduction
// dtype (fp32 main grads under bf16), the params all-gathered in theirs (bf16): not an
// all-reduce of fp32 bytes both ways.
TEST(LowPrecision, ZeroOneGathersParamsInTheirOwnDtype) {
  const Cluster c = fp8_cluster(2);
  auto [m, t, p] = tp8_llama();
  p.zero_stage = 1;
  const Estimate e = estimate(make_job(m, c, t, p));
  const double n = e.params_per_gpu;
  const LinkParams link = link_for_group(c, 2, 8);
  auto ring_s = [&](CollectiveKind k, double bytes) { return collective_time_s(k, CollectiveAlgorithm::ring, 2, bytes, link); };
  EXPECT_NEAR(e.time.dp_comm_s, ring_s(CollectiveKind::reduce_scatter, 4 * n) + ring_s(CollectiveKind::all_gather, 2 * n), 1e-12);
}

// fp8 params as Megatron takes them: with fp8 GEMMs, the distributed optimizer, and a recipe
// whose params are Float8Tensors.
TEST(LowPrecision, MakeJobRefusesFp8ParamsWhereMegatronDoesNot) {
  Training t;
  t.global_batch = 8;
  Plan p;
  p.framework = Framework::megatron_core;
  p.fp8_params = true;
  p.zero_stage = 1;
  auto error = [&](const Plan& plan) { return make_job_error(blackwell_cluster(), t, plan); };
  EXPECT_NE(error(p).find("field 'plan.fp8_params': fp8 params need fp8 GEMMs"), std::string::npos) << error(p);
  p.fp8 = Fp8::hybrid;
  EXPECT_EQ(error(p), "(no error)");
  p.zero_stage = 0;
  EXPECT_NE(error(p).find("field 'plan.fp8_params': fp8 params are gathered by Megatron's distributed optimizer: set "
                          "zero_stage: 1 or 2 (the plan says 0)"),
            std::string::npos)
      << error(p);
  p.zero_stage = 2;
  p.fp8_recipe = Fp8Recipe::mxfp8;
  EXPECT_NE(error(p).find("field 'plan.fp8_params': fp8 params are modelled for the delayed and tensorwise recipes"),
            std::string::npos)
      << error(p);
}

}  // namespace
}  // namespace starfish

// FP8 GEMMs (sim/cost/fp8.h) against hand-computed cases: the GEMM time at the fp8 peak, the
// casts TransformerEngine adds per linear layer, the fp8 weight copies in memory, and that both
// the estimate and the layer ops take them.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "sim/cost/estimate.h"
#include "sim/cost/fp8.h"
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

double hbm_s(const GpuSpec& gpu, double bytes) { return bytes / (gpu.hbm_bandwidth_Bps * gpu.hbm_efficiency); }

const LayerOp& op_named(const std::vector<LayerOp>& ops, const std::string& name) {
  for (const LayerOp& op : ops)
    if (name == op.name) return op;
  ADD_FAILURE() << "no op " << name;
  return ops.front();
}

TEST(Fp8, GemmRunsAtTheFp8PeakWithTheEfficiencyOfTheSameTimeAtPeak) {
  const GpuSpec gpu = fp8_cluster().node.gpu;
  // 2 TFLOP in fp8 takes as long at peak as 1 TFLOP in bf16: efficiency 0.9.
  EXPECT_DOUBLE_EQ(fp8_matmul_time_s(gpu, DType::bf16, 2e12), 2e12 / (2000e12 * 0.9));
  // 2 GFLOP: as 1 GFLOP in bf16, efficiency 0.5; the same GEMM in bf16 runs at the curve's
  // value at 2 GFLOP (0.5 + 0.4 log10(2) / 3), so fp8 is less than twice as fast.
  const double fp8_s = fp8_matmul_time_s(gpu, DType::bf16, 2e9);
  EXPECT_DOUBLE_EQ(fp8_s, 2e9 / (2000e12 * 0.5));
  const double bf16_s = matmul_time_s(gpu, DType::bf16, 2e9);
  EXPECT_NEAR(bf16_s, 2e9 / (1000e12 * (0.5 + 0.4 * std::log10(2.0) / 3)), 1e-15);
  EXPECT_LT(bf16_s / fp8_s, 2.0);
  EXPECT_GT(bf16_s / fp8_s, 1.8);
}

TEST(Fp8, CastBytesPerRecipe) {
  EXPECT_EQ(fp8_cast_bytes_per_element(Fp8Recipe::delayed, false), 4);     // read 2, write data + transpose
  EXPECT_EQ(fp8_cast_bytes_per_element(Fp8Recipe::delayed, true), 0);      // the norm writes fp8 itself
  EXPECT_EQ(fp8_cast_bytes_per_element(Fp8Recipe::tensorwise, false), 6);  // + the amax pass
  EXPECT_EQ(fp8_cast_bytes_per_element(Fp8Recipe::tensorwise, true), 8);   // 16-bit norm output, amax, cast
}

// A dense layer's linear ops with fp8, by hand: hidden 1024, 16 heads, FFN 4096, seq 1024,
// micro-batch 2 (T = 2048 tokens), TP 2 with sequence parallelism.
TEST(Fp8, DenseLayerLinearOpsAddTheirCastsToTheFp8Gemms) {
  const GpuSpec gpu = fp8_cluster().node.gpu;
  const Model m = testing::gpt(4, 1024, 16, 1024, 1000);
  Plan p;
  p.tp = 2;
  p.micro_batch = 2;
  p.sequence_parallel = true;
  p.framework = Framework::megatron_core;
  p.fp8 = Fp8::hybrid;
  const double T = 2048, h = 1024, f = 4096, t = 2;
  const std::vector<LayerOp> ops = layer_ops(gpu, DType::bf16, m, plan_layer_shape(p));
  // MLP-out: T x f/t inputs cast (4 bytes each), output gradient T x h cast in backward.
  const double out_gemm = fp8_matmul_time_s(gpu, DType::bf16, 2 * T * f * h / t);
  const LayerOp& mlp_out = op_named(ops, "MLP-out GEMM");
  EXPECT_DOUBLE_EQ(mlp_out.forward_s, out_gemm + hbm_s(gpu, 4 * T * f / t));
  EXPECT_DOUBLE_EQ(mlp_out.backward_s, 2 * out_gemm + hbm_s(gpu, 4 * T * h));
  // QKV after the norm: no input cast under delayed scaling; tensorwise casts the T x h / t
  // sequence shard the norm wrote (8 bytes each).
  const double qkv_gemm = fp8_matmul_time_s(gpu, DType::bf16, 2 * T * h * 3 * h / t);
  EXPECT_DOUBLE_EQ(op_named(ops, "QKV GEMM").forward_s, qkv_gemm);
  EXPECT_DOUBLE_EQ(op_named(ops, "QKV GEMM").backward_s, 2 * qkv_gemm + hbm_s(gpu, 4 * T * 3 * h / t));
  p.fp8_recipe = Fp8Recipe::tensorwise;
  const std::vector<LayerOp> cs = layer_ops(gpu, DType::bf16, m, plan_layer_shape(p));
  EXPECT_DOUBLE_EQ(op_named(cs, "QKV GEMM").forward_s, qkv_gemm + hbm_s(gpu, 8 * T * h / t));
  // Attention's core stays in bf16: the same op as without fp8.
  p.fp8 = Fp8::none;
  const std::vector<LayerOp> bf16 = layer_ops(gpu, DType::bf16, m, plan_layer_shape(p));
  EXPECT_DOUBLE_EQ(op_named(cs, "flash attention").forward_s, op_named(bf16, "flash attention").forward_s);
  EXPECT_DOUBLE_EQ(op_named(bf16, "MLP-out GEMM").forward_s, matmul_time_s(gpu, DType::bf16, 2 * T * f * h / t));
}

// The fp8 weight copies: 2 bytes (data and transpose) per GEMM weight of the stage, plus the
// scaling state (4 GEMMs x 3 tensors x fp32 scale, inverse and one amax entry) per layer.
TEST(Fp8, WeightCacheIsTwoBytesPerGemmWeightOfTheStage) {
  Model m = testing::llama2_7b();
  m.layers = 8;
  Plan p;
  p.tp = 2;
  p.pp = 2;
  p.fp8 = Fp8::hybrid;
  const double h = 4096, f = 11008;
  const double per_layer = (h * 3 * h + h * h + 3 * h * f) / 2;  // MHA QKV + proj, SwiGLU (gate, up, down)
  EXPECT_DOUBLE_EQ(stage_fp8_gemm_weights(m, p, 1), 4 * per_layer);
  EXPECT_DOUBLE_EQ(fp8_weight_cache_bytes(m, p, 1), 2 * 4 * per_layer + 4 * 4 * 3 * 4 * 3);
  p.fp8 = Fp8::none;
  EXPECT_EQ(fp8_weight_cache_bytes(m, p, 1), 0);
}

// One truth: the estimate's GPU buffers grow by exactly the cache, and its optimizer phase by
// the weights' cast (read 2, write 2 per GEMM weight), for the same plan with fp8.
TEST(Fp8, EstimateCarriesTheWeightCacheAndCast) {
  const Cluster c = fp8_cluster();
  Model m = testing::llama2_7b();
  m.layers = 4;
  Training t;
  t.global_batch = 16;
  Plan p;
  p.tp = 8;
  p.sequence_parallel = true;
  p.framework = Framework::megatron_core;
  const Estimate bf16 = estimate(make_job(m, c, t, p));
  p.fp8 = Fp8::hybrid;
  const Estimate fp8 = estimate(make_job(m, c, t, p));
  EXPECT_DOUBLE_EQ(fp8.gpu.buffers_bytes - bf16.gpu.buffers_bytes, fp8_weight_cache_bytes(m, p, 0));
  EXPECT_NEAR(fp8.time.optimizer_s - bf16.time.optimizer_s, hbm_s(c.node.gpu, 4 * stage_fp8_gemm_weights(m, p, 0)), 1e-15);
  EXPECT_DOUBLE_EQ(fp8.gpu.activations_bytes, bf16.gpu.activations_bytes);
  EXPECT_LT(fp8.time.compute_s, bf16.time.compute_s);
  EXPECT_GT(fp8.time.compute_s, bf16.time.compute_s / 2);
  // MFU against the fp8 peak the GEMMs run at (PaLM's definition), the 16-bit one without fp8.
  EXPECT_NEAR(fp8.mfu, fp8.model_flops / fp8.time.iteration_s / 8 / 2000e12, 1e-12);
  EXPECT_NEAR(bf16.mfu, bf16.model_flops / bf16.time.iteration_s / 8 / 1000e12, 1e-12);
}

// make_job admits fp8 only as TransformerEngine runs it: Megatron-core, 16-bit mixed precision.
TEST(Fp8, MakeJobRefusesWhatTransformerEngineDoesNotRun) {
  const Model m = testing::gpt(4, 1024, 16, 1024, 1000);
  Training t;
  t.global_batch = 8;
  Plan p;
  p.fp8 = Fp8::hybrid;
  auto error = [&](const Training& tr, const Plan& plan) {
    try {
      make_job(m, fp8_cluster(), tr, plan);
    } catch (const SpecError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
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

}  // namespace
}  // namespace starfish

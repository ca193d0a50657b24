// Dynamic loss scaling (fp16 training): the scaler's schedule on its own, and through the
// trainer on fp32 and bf16 compute (fp16 compute needs CUDA, or fp16 kernels on the CPU, which
// LibTorch 1.13 lacks: exec/fp16_support.h): an overflow skips the step leaving every parameter
// and optimizer state bit for bit, halves the scale, and a later good step equals the unscaled
// step; good steps double the scale. starfish-run's fp16 refusal follows a probe of LibTorch.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <limits>

#include "exec/chunk_store.h"
#include "exec/dist.h"
#include "exec/flat_store.h"
#include "exec/fp16_support.h"
#include "exec/loss_scaler.h"
#include "exec/torch_backend.h"
#include "exec/trainer.h"
#include "exec_test_util.h"

namespace starfish::exec {
namespace {

using testing::TempDir;

constexpr double kInf = std::numeric_limits<double>::infinity();
// Twice fp32's largest power of two: the scaled loss is inf in fp32 and bf16, so the gradients
// are inf or NaN, an overflow on demand.
const double kOverflowScale = std::ldexp(1.0, 128);

TEST(LossScaler, StartsAt2To16AndDoublesAfter2000GoodSteps) {
  LossScaler s;
  EXPECT_EQ(s.scale(), 65536.0);
  for (int i = 0; i < 1999; ++i) ASSERT_TRUE(s.update(3.0));
  EXPECT_EQ(s.scale(), 65536.0) << "1999 good steps are not yet the interval";
  EXPECT_TRUE(s.update(3.0));
  EXPECT_EQ(s.scale(), 131072.0);
  EXPECT_EQ(s.state().good_steps, 0) << "the count restarts after growth";
}

TEST(LossScaler, OverflowHalvesTheScaleAndRestartsTheGrowthCount) {
  LossScaler s(LossScalerConfig{1024.0, 3, 1.0});
  EXPECT_TRUE(s.update(1.0));
  EXPECT_TRUE(s.update(1.0));
  EXPECT_FALSE(s.update(kInf));
  EXPECT_EQ(s.scale(), 512.0);
  EXPECT_FALSE(s.update(std::nan("")));
  EXPECT_EQ(s.scale(), 256.0) << "NaN is an overflow too";
  EXPECT_EQ(s.skipped_steps(), 2);
  EXPECT_TRUE(s.update(1.0));
  EXPECT_TRUE(s.update(1.0));
  EXPECT_EQ(s.scale(), 256.0) << "the two good steps before the overflow do not count";
  EXPECT_TRUE(s.update(1.0));
  EXPECT_EQ(s.scale(), 512.0);
}

TEST(LossScaler, HalvingStopsAtTheFloor) {
  LossScaler s(LossScalerConfig{4.0, 2000, 1.0});
  for (double want : {2.0, 1.0, 1.0}) {
    EXPECT_FALSE(s.update(kInf));
    EXPECT_EQ(s.scale(), want);
  }
}

TEST(LossScaler, RejectsBadConfigurationAndState) {
  try {
    LossScaler s(LossScalerConfig{65536.0, 0, 1.0});
    FAIL() << "growth_interval 0 accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "loss scaler: growth_interval 0 must be at least 1");
  }
  try {
    LossScaler s(LossScalerConfig{0.5, 2000, 1.0});
    FAIL() << "init_scale below the floor accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "loss scaler: init_scale 0.5 must be finite and at least min_scale 1 > 0");
  }
  LossScaler s;
  EXPECT_THROW(s.restore(LossScalerState{0.25, 0}), std::invalid_argument);
  s.restore(LossScalerState{8.0, 5});
  EXPECT_EQ(s.scale(), 8.0);
  EXPECT_EQ(s.state().good_steps, 5);
}

// ---- through the trainer ----

Model bias_free() {  // see test_store_training.cpp for why Adam comparisons avoid attn.qkv.bias
  Model m = testing::tiny_model();
  m.bias = false;
  return m;
}

using Named = std::vector<std::pair<std::string, at::Tensor>>;

void expect_bit_equal(const Named& a, const Named& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].first, b[i].first);
    EXPECT_TRUE(torch::equal(a[i].second, b[i].second)) << what << ": " << a[i].first << " changed";
  }
}

double max_difference(const Named& a, const Named& b) {
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i)
    worst = std::max(worst, (a[i].second.to(at::kDouble) - b[i].second.to(at::kDouble)).abs().max().item<double>());
  return worst;
}

struct Rig {
  Gpt gpt{bias_free()};
  ByteCorpus data = ByteCorpus::generated(1 << 16);
  Training training = testing::tiny_training(Optimizer::adamw);
  Plan plan;
  Comm solo{RankEnv{}};
  Rig() { plan.micro_batch = 2; }  // two micro-batches: the scale rides on both backward passes
  std::unique_ptr<StoreTrainer> flat(at::ScalarType dtype) {
    return std::make_unique<StoreTrainer>(gpt, data, training, plan, solo, std::make_unique<FlatStore>(gpt, dtype, training.seed));
  }
};

// An overflowing step leaves the store as it was, halves the scale; the next good step (its
// scale restored to 2^10) equals an unscaled trainer's step of the same iteration.
void expect_skip_then_exact_step(Rig& s, at::ScalarType dtype, double grad_clip) {
  s.training.grad_clip = grad_clip;
  std::unique_ptr<StoreTrainer> scaled = s.flat(dtype);
  scaled->enable_loss_scaling(LossScalerConfig{kOverflowScale, 2000, 1.0});
  const Named before = scaled->store().save_state();
  const StepResult skip = scaled->step();
  EXPECT_TRUE(skip.skipped);
  EXPECT_EQ(skip.loss_scale, kOverflowScale);
  EXPECT_FALSE(std::isfinite(skip.grad_norm));
  EXPECT_TRUE(std::isfinite(skip.loss)) << "the reported loss is the unscaled one";
  EXPECT_EQ(scaled->loss_scaler()->scale(), kOverflowScale / 2);
  EXPECT_EQ(scaled->steps_done(), 1) << "a skipped step still consumes its iteration";
  expect_bit_equal(before, scaled->store().save_state(), "skipped step");

  scaled->loss_scaler()->restore(LossScalerState{1024.0, 0});
  std::unique_ptr<StoreTrainer> plain = s.flat(dtype);
  plain->set_steps_done(1);
  const StepResult a = scaled->step();
  const StepResult b = plain->step();
  EXPECT_FALSE(a.skipped);
  EXPECT_FALSE(b.skipped);
  EXPECT_EQ(a.loss_scale, 1024.0);
  EXPECT_EQ(b.loss_scale, 1.0);
  EXPECT_NEAR(a.loss, b.loss, 1e-12);
  EXPECT_NEAR(a.grad_norm, b.grad_norm, 1e-9 * b.grad_norm);
  if (grad_clip > 0) {
    EXPECT_GT(b.grad_norm, grad_clip) << "the comparison must exercise clipping";
  }
  const Named after_a = scaled->store().save_state(), after_b = plain->store().save_state();
  EXPECT_GT(max_difference(after_b, before), 1e-4) << "the reference step moved the parameters";
  EXPECT_LT(max_difference(after_a, after_b), 1e-6);
}

TEST(LossScaledTraining, OverflowSkipsTheStepThenAGoodStepEqualsTheUnscaledOne) {
  Rig s;
  expect_skip_then_exact_step(s, at::kFloat, 0.0);
}

TEST(LossScaledTraining, UnscalingFoldsIntoGradientClipping) {
  Rig s;
  expect_skip_then_exact_step(s, at::kFloat, 0.05);
}

TEST(LossScaledTraining, Bf16WithFp32MasterSkipsAndStepsExactly) {
  Rig s;
  expect_skip_then_exact_step(s, at::kBFloat16, 0.05);
}

TEST(LossScaledTraining, GoodStepsMatchTheUnscaledRunAndGrowTheScale) {
  Rig s;
  std::unique_ptr<StoreTrainer> scaled = s.flat(at::kFloat), plain = s.flat(at::kFloat);
  scaled->enable_loss_scaling(LossScalerConfig{65536.0, 2, 1.0});
  const double want_scale[] = {65536.0, 65536.0, 131072.0, 131072.0, 262144.0};
  for (int step = 0; step < 5; ++step) {
    const StepResult a = scaled->step(), b = plain->step();
    EXPECT_FALSE(a.skipped) << "step " << step;
    EXPECT_EQ(a.loss_scale, want_scale[step]) << "step " << step;
    EXPECT_NEAR(a.loss, b.loss, 1e-6) << "step " << step;
    EXPECT_LT(max_difference(scaled->store().save_state(), plain->store().save_state()), 1e-6) << "step " << step;
  }
  EXPECT_EQ(scaled->loss_scaler()->scale(), 262144.0);
}

TEST(LossScaledTraining, Fp16TurnsLossScalingOnWithTheDefaults) {
  Rig s;
  s.training.dtype = DType::fp16;
  StoreTrainer t(s.gpt, s.data, s.training, s.plan, s.solo, std::make_unique<FlatStore>(s.gpt, at::kFloat, s.training.seed));
  ASSERT_NE(t.loss_scaler(), nullptr);
  EXPECT_EQ(t.loss_scaler()->scale(), 65536.0);
  EXPECT_EQ(t.loss_scaler()->config().growth_interval, 2000);
  s.training.dtype = DType::bf16;
  StoreTrainer off(s.gpt, s.data, s.training, s.plan, s.solo, std::make_unique<FlatStore>(s.gpt, at::kBFloat16, s.training.seed));
  EXPECT_EQ(off.loss_scaler(), nullptr);
}

// The chunk store's bf16 param chunk holds the gradient after backward: a skipped step must
// still walk the optimizer phase (the runtime's schedule) and restore the params from the masters.
TEST(LossScaledTraining, ChunkStoreSkipRestoresMixedPrecisionParams) {
  Rig s;
  s.training.dtype = DType::bf16;
  s.plan.micro_batch = static_cast<int>(s.training.global_batch);  // the chunk runtime: one micro-batch
  TempDir scratch("loss-scaler");
  RuntimeOptions ro;
  ro.budget = MemoryBudget{int64_t{64} << 20, int64_t{64} << 20, 0};
  auto chunked = [&](TorchBackend& backend) {
    auto store = std::make_unique<ChunkStore>(s.gpt, s.training, ChunkStoreOptions{5000, ro, 0}, backend, s.training.seed);
    return std::make_unique<StoreTrainer>(s.gpt, s.data, s.training, s.plan, s.solo, std::move(store));
  };
  TorchBackend backend_a(TierCapacity{int64_t{64} << 20, 0, 0}, scratch.path.string(), s.solo);
  TorchBackend backend_b(TierCapacity{int64_t{64} << 20, 0, 0}, scratch.path.string(), s.solo);
  std::unique_ptr<StoreTrainer> scaled = chunked(backend_a), plain = chunked(backend_b);
  scaled->enable_loss_scaling(LossScalerConfig{kOverflowScale, 2000, 1.0});
  const Named before = scaled->store().gather_values(s.solo);
  EXPECT_TRUE(scaled->step().skipped);
  expect_bit_equal(before, scaled->store().gather_values(s.solo), "skipped chunked step");
  scaled->loss_scaler()->restore(LossScalerState{1024.0, 0});
  plain->set_steps_done(1);
  const StepResult a = scaled->step(), b = plain->step();
  EXPECT_FALSE(a.skipped);
  EXPECT_NEAR(a.loss, b.loss, 1e-12) << "the forward pass saw the restored bf16 params";
  const Named va = scaled->store().gather_values(s.solo), vb = plain->store().gather_values(s.solo);
  EXPECT_GT(max_difference(vb, before), 1e-4);
  EXPECT_LT(max_difference(va, vb), 1e-6);
}

// The probe behind starfish-run's fp16 refusal runs the GPT, whose linears need a Half matrix
// multiply: where LibTorch's CPU has none (1.13) the probe must say no.
TEST(Fp16, ProbeSaysNoWithoutAHalfMatmulOnTheCpu) {
  bool mm = true;
  try {
    const at::Tensor a = at::ones({4, 4}, at::kHalf);
    at::mm(a, a);
  } catch (const c10::Error&) {
    mm = false;
  }
  EXPECT_TRUE(mm || !cpu_trains_fp16()) << "the probe claims fp16 training on a CPU without a Half matmul";
}

// A plan without chunks computes on the CPU: starfish-run trains it in fp16 (with loss
// scaling) exactly when this LibTorch's CPU can, and otherwise refuses it in one line.
TEST(Fp16, StarfishRunTrainsFp16OnTheCpuExactlyWhenLibTorchCan) {
  TempDir dir("fp16-run");
  std::string plan = testing::write_plan(dir, "plan.yaml", 4, 4, 2);
  std::string text = testing::read_file(plan);
  text.replace(text.find("dtype: fp32"), 11, "dtype: fp16");
  testing::write_file(plan, text);
  const testing::ExitStatus e = testing::run_starfish(plan + " --threads 1", dir / "log");
  const std::string log = testing::read_file(dir / "log");
  if (cpu_trains_fp16()) {
    EXPECT_EQ(e.code, 0) << log;
    EXPECT_NE(log.find("iter    2/2"), std::string::npos) << log;
    EXPECT_NE(log.find("loss_scale 65536"), std::string::npos) << log;
  } else {
    EXPECT_EQ(e.code, 1);
    EXPECT_EQ(log, "starfish-run: " + plan +
                       ": field 'training.dtype': fp16 computes on the CPU here (a plan without chunks uses the flat store) and this "
                       "LibTorch has no fp16 kernels on the CPU (a tiny GPT's forward and backward in Half failed); use bf16 or fp32, "
                       "or a chunked plan (plan.chunk_size) on CUDA\n");
  }
}

}  // namespace
}  // namespace starfish::exec

// The chunk-ready training path (GPT over a ParameterStore as one autograd node per segment,
// gradients written into the store, the optimizer over flat pieces) against plain LibTorch
// (autograd over leaf parameters, clip_grad_norm_, torch::optim), step for step. The plans keep
// the default recompute none; test_recompute.cpp checks full against it.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "exec/dist.h"
#include "exec/flat_store.h"
#include "exec/trainer.h"
#include "exec_test_util.h"

namespace starfish::exec {
namespace {

using testing::tiny_model;
using testing::tiny_training;

double max_param_difference(TrainableStore& store, const ReferenceTrainer& ref) {
  Comm solo(RankEnv{});
  double worst = 0;
  for (const auto& [name, v] : store.gather_values(solo)) worst = std::max(worst, (v - ref.value(name)).abs().max().item<double>());
  return worst;
}

// The key part of attn.qkv.bias has an analytically zero gradient (softmax ignores a shift shared
// by all keys), so its computed gradient is rounding noise, and Adam, which divides by the
// gradient's own magnitude, turns a 1-ulp difference anywhere into steps of size lr there. The
// Adam comparisons therefore use bias-free linear layers; SGD, which does not amplify noise,
// checks the biased model.
Model model_for(Optimizer o) {
  Model m = tiny_model();
  if (o != Optimizer::sgd) m.bias = false;
  return m;
}

void expect_same_training(Optimizer optimizer, int micro_batch) {
  const Gpt gpt(model_for(optimizer));
  const ByteCorpus data = ByteCorpus::generated(1 << 16);
  const Training t = tiny_training(optimizer);
  Plan plan;
  plan.micro_batch = micro_batch;
  Comm solo(RankEnv{});
  StoreTrainer chunked(gpt, data, t, plan, solo, std::make_unique<FlatStore>(gpt, at::kFloat, t.seed));
  ReferenceTrainer reference(gpt, data, t, plan);
  EXPECT_EQ(max_param_difference(chunked.store(), reference), 0.0) << "same initial values";
  for (int step = 1; step <= 4; ++step) {
    const StepResult a = chunked.step();
    const StepResult b = reference.step();
    EXPECT_NEAR(a.loss, b.loss, 1e-5) << "step " << step;
    EXPECT_NEAR(a.grad_norm, b.grad_norm, 1e-5 * std::max(1.0, b.grad_norm)) << "step " << step;
    EXPECT_LT(max_param_difference(chunked.store(), reference), 1e-5) << "step " << step;
  }
}

TEST(StoreTraining, AdamMatchesPlainLibTorchStepForStep) { expect_same_training(Optimizer::adam, 4); }
TEST(StoreTraining, AdamWWithMicroBatchesMatchesPlainLibTorch) { expect_same_training(Optimizer::adamw, 2); }
TEST(StoreTraining, SgdMatchesPlainLibTorch) { expect_same_training(Optimizer::sgd, 1); }

TEST(StoreTraining, LossFallsOnTheGeneratedCorpus) {
  const Gpt gpt(tiny_model());
  const ByteCorpus data = ByteCorpus::generated(1 << 16);
  Training t = tiny_training(Optimizer::adamw);
  t.learning_rate = 1e-2;
  Plan plan;
  plan.micro_batch = 4;
  Comm solo(RankEnv{});
  StoreTrainer trainer(gpt, data, t, plan, solo, std::make_unique<FlatStore>(gpt, at::kFloat, t.seed));
  const double before = evaluate_loss(gpt, trainer.store(), data, t, 1000, 16);
  for (int i = 0; i < 30; ++i) trainer.step();
  const double after = evaluate_loss(gpt, trainer.store(), data, t, 1000, 16);
  EXPECT_NEAR(before, std::log(256.0), 0.1) << "an untrained byte model is uniform";
  EXPECT_LT(after, before - 1.5) << "30 steps of AdamW learn the corpus' letters";
}

TEST(StoreTraining, Bf16TrainsWithAnFp32Master) {
  const Gpt gpt(tiny_model());
  const ByteCorpus data = ByteCorpus::generated(1 << 16);
  Training t = tiny_training(Optimizer::adamw);
  t.dtype = DType::bf16;
  t.learning_rate = 1e-2;
  Plan plan;
  plan.micro_batch = 4;
  Comm solo(RankEnv{});
  auto store = std::make_unique<FlatStore>(gpt, at::kBFloat16, t.seed);
  FlatStore& s = *store;
  StoreTrainer trainer(gpt, data, t, plan, solo, std::move(store));
  EXPECT_EQ(s.param("layers.0.attn.qkv.weight").scalar_type(), at::kBFloat16);
  const double before = evaluate_loss(gpt, s, data, t, 1000, 16);
  for (int i = 0; i < 20; ++i) trainer.step();
  EXPECT_LT(evaluate_loss(gpt, s, data, t, 1000, 16), before - 1.0);
  // The compute copy is the master rounded to bf16.
  const at::Tensor master = s.value("layers.1.mlp.in.weight");
  EXPECT_TRUE(at::equal(s.param("layers.1.mlp.in.weight"), master.to(at::kBFloat16)));
}

TEST(StoreTraining, SegmentsAccessTheirTensorsInForwardAndAgainInBackward) {
  const Gpt gpt(tiny_model());
  const ByteCorpus data = ByteCorpus::generated(1 << 16);
  const Training t = tiny_training();
  Plan plan;
  plan.micro_batch = 4;
  Comm solo(RankEnv{});
  auto store = std::make_unique<FlatStore>(gpt, at::kFloat, t.seed);
  FlatStore& s = *store;
  StoreTrainer trainer(gpt, data, t, plan, solo, std::move(store));
  trainer.step();
  int64_t per_pass = 0;
  for (int seg = 0; seg < gpt.segments(); ++seg) per_pass += static_cast<int64_t>(gpt.segment_params(seg).size());
  // 12 tensors per layer x 2, 2 embeddings, 2 final-norm tensors + the tied word embedding.
  EXPECT_EQ(per_pass, 2 * 12 + 2 + 3);
  EXPECT_EQ(s.accesses(), 2 * per_pass);
}

}  // namespace
}  // namespace starfish::exec

// A trainer's checkpoint keeps its loss scaler: a resumed loss-scaled run continues with the
// scale and good-step count it had (not 2^16 again) and then steps exactly like the run that
// never stopped; a format-1 checkpoint (before the loss scale was saved) still resumes a run
// without loss scaling and is refused, naming the file, by one with it.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "exec/dist.h"
#include "exec/flat_store.h"
#include "exec/trainer.h"
#include "exec/trainer_checkpoint.h"
#include "exec_test_util.h"
#include "sim/spec/error.h"
#include "support/error_of.h"

namespace starfish::exec {
namespace {

using testing::TempDir;

// Growth every 3 good steps from 2^10: after 4 steps the scale is 2^11 with 1 good step.
const LossScalerConfig kScaling{1024.0, 3, 1.0};

struct Rig {
  Gpt gpt{testing::tiny_model()};
  ByteCorpus data = ByteCorpus::generated(1 << 16);
  Training training = testing::tiny_training(Optimizer::adamw);
  Plan plan;
  Comm solo{RankEnv{}};
  Rig() { plan.micro_batch = 2; }
  std::unique_ptr<StoreTrainer> trainer(bool scaled) {
    auto t = std::make_unique<StoreTrainer>(gpt, data, training, plan, solo, std::make_unique<FlatStore>(gpt, at::kFloat, training.seed));
    if (scaled) t->enable_loss_scaling(kScaling);
    return t;
  }
};

using ::starfish::testing::error_of;

TEST(TrainerCheckpoint, ResumedRunContinuesWithTheSameLossScaleAndCounter) {
  Rig s;
  TempDir dir("trainer-ckpt-scale");
  std::unique_ptr<StoreTrainer> whole = s.trainer(true);
  for (int i = 0; i < 4; ++i) ASSERT_FALSE(whole->step().skipped);
  ASSERT_EQ(whole->loss_scaler()->scale(), 2048.0);
  ASSERT_EQ(whole->loss_scaler()->state().good_steps, 1);
  save_trainer(dir.path.string(), *whole, s.solo);

  std::unique_ptr<StoreTrainer> resumed = s.trainer(true);
  EXPECT_EQ(resumed->loss_scaler()->scale(), 1024.0) << "a fresh scaler starts at its initial scale";
  const CheckpointInfo info = resume_trainer(dir.path.string(), *resumed, s.solo);
  EXPECT_EQ(info.steps, 4);
  EXPECT_EQ(resumed->steps_done(), 4);
  EXPECT_EQ(resumed->loss_scaler()->scale(), 2048.0);
  EXPECT_EQ(resumed->loss_scaler()->state().good_steps, 1);
  // Two more good steps reach the growth interval in both runs at the same iteration.
  const double want[] = {2048.0, 2048.0, 4096.0};
  for (int i = 0; i < 3; ++i) {
    const StepResult a = whole->step(), b = resumed->step();
    EXPECT_EQ(a.loss_scale, want[i]) << "step " << 5 + i;
    EXPECT_EQ(b.loss_scale, want[i]) << "step " << 5 + i;
    EXPECT_EQ(a.loss, b.loss) << "step " << 5 + i;
  }
  EXPECT_EQ(resumed->loss_scaler()->state().good_steps, whole->loss_scaler()->state().good_steps);
  const auto va = whole->store().save_state(), vb = resumed->store().save_state();
  for (size_t i = 0; i < va.size(); ++i) EXPECT_TRUE(torch::equal(va[i].second, vb[i].second)) << va[i].first;
}

// A format-1 file is a format-3 file without the loss_scale and identity lines (the tensor checksum does not
// cover the header), so one is made from the other.
void make_format_1(const std::string& path) {
  std::string text = testing::read_file(path);
  const std::string format_3 = "STARFISH-CHECKPOINT 3\nsteps 2\nloss_scale none\nidentity 0\n";
  ASSERT_EQ(text.rfind(format_3, 0), 0u) << text.substr(0, 60);
  text.replace(0, format_3.size(), "STARFISH-CHECKPOINT 1\nsteps 2\n");
  testing::write_file(path, text);
}

TEST(TrainerCheckpoint, Format1ResumesWithoutScalingAndIsRefusedWithIt) {
  Rig s;
  TempDir dir("trainer-ckpt-v1");
  std::unique_ptr<StoreTrainer> old = s.trainer(false);
  old->step();
  old->step();
  save_trainer(dir.path.string(), *old, s.solo);
  const std::string file = dir / "step-2/rank-0.ckpt";
  make_format_1(file);

  std::unique_ptr<StoreTrainer> plain = s.trainer(false);
  const CheckpointInfo info = resume_trainer(dir.path.string(), *plain, s.solo);
  EXPECT_EQ(info.format, 1);
  EXPECT_EQ(plain->steps_done(), 2);
  const auto va = old->store().save_state(), vb = plain->store().save_state();
  for (size_t i = 0; i < va.size(); ++i) EXPECT_TRUE(torch::equal(va[i].second, vb[i].second)) << va[i].first;

  std::unique_ptr<StoreTrainer> scaled = s.trainer(true);
  EXPECT_EQ(error_of([&] { resume_trainer(dir.path.string(), *scaled, s.solo); }),
            file + ": checkpoint format 1 predates saved loss scales, so this loss-scaled (fp16) run cannot resume with the scale it "
                   "had; start it again");
  EXPECT_EQ(scaled->steps_done(), 0) << "a refused checkpoint leaves the trainer alone";
}

TEST(TrainerCheckpoint, ALossScaleMustMatchWhetherTheRunScales) {
  Rig s;
  TempDir with("trainer-ckpt-with"), without("trainer-ckpt-without");
  std::unique_ptr<StoreTrainer> a = s.trainer(true), b = s.trainer(false);
  a->step();
  b->step();
  save_trainer(with.path.string(), *a, s.solo);
  save_trainer(without.path.string(), *b, s.solo);
  EXPECT_EQ(testing::read_file(with / "step-1/rank-0.ckpt").substr(0, 66),
            "STARFISH-CHECKPOINT 3\nsteps 1\nloss_scale 1024 1\nidentity 0\ntensors");
  std::unique_ptr<StoreTrainer> scaled = s.trainer(true), plain = s.trainer(false);
  EXPECT_EQ(error_of([&] { resume_trainer(without.path.string(), *scaled, s.solo); }),
            without / "step-1/rank-0.ckpt" + ": the checkpoint holds no loss scale (its run did not scale the loss), this run does (fp16)");
  EXPECT_EQ(error_of([&] { resume_trainer(with.path.string(), *plain, s.solo); }),
            with / "step-1/rank-0.ckpt" + ": the checkpoint holds a loss scale (its run scaled the loss: fp16), this run does not");
}

}  // namespace
}  // namespace starfish::exec

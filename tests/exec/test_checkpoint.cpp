// Checkpoints: exact round trip, refusal of damaged or foreign files, and a run killed in the
// middle of a save that resumes with nothing lost.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>

#include "exec/checkpoint.h"
#include "exec/dist.h"
#include "exec_test_util.h"
#include "sim/spec/error.h"
#include "support/error_of.h"

namespace starfish::exec {
namespace {

using testing::TempDir;

NamedTensors sample_state() {
  return {{"master", torch::arange(3000, torch::kFloat) / 7}, {"step_counts", torch::arange(5, torch::kLong)}};
}

using ::starfish::testing::error_of;

TEST(Checkpoint, RoundTripsExactly) {
  TempDir dir("ckpt-roundtrip");
  const NamedTensors saved = sample_state();
  write_checkpoint_file(dir / "a.ckpt", CheckpointInfo{17}, saved);
  NamedTensors loaded{{"master", torch::zeros({3000})}, {"step_counts", torch::zeros({5}, torch::kLong)}};
  const CheckpointInfo info = read_checkpoint_file(dir / "a.ckpt", loaded);
  EXPECT_EQ(info.steps, 17);
  EXPECT_EQ(info.format, 3);
  EXPECT_FALSE(info.loss_scale.has_value());
  EXPECT_TRUE(torch::equal(loaded[0].second, saved[0].second));
  EXPECT_TRUE(torch::equal(loaded[1].second, saved[1].second));
  EXPECT_FALSE(std::filesystem::exists(dir / ("a.ckpt.tmp." + std::to_string(::getpid())))) << "the temp file was renamed";
}

TEST(Checkpoint, RefusesTruncatedCorruptOrForeignFiles) {
  TempDir dir("ckpt-bad");
  write_checkpoint_file(dir / "a.ckpt", CheckpointInfo{3}, sample_state());
  const auto size = std::filesystem::file_size(dir / "a.ckpt");
  NamedTensors into = sample_state();
  std::filesystem::copy_file(dir / "a.ckpt", dir / "short.ckpt");
  std::filesystem::resize_file(dir / "short.ckpt", size - 100);
  // The size is checked against the header before any tensor is read.
  EXPECT_EQ(error_of([&] { read_checkpoint_file(dir / "short.ckpt", into); }),
            dir / "short.ckpt" + ": truncated checkpoint: " + std::to_string(size - 100) + " bytes, its header describes " +
                std::to_string(size));
  std::filesystem::copy_file(dir / "a.ckpt", dir / "long.ckpt");
  std::ofstream(dir / "long.ckpt", std::ios::app) << "x";
  EXPECT_EQ(error_of([&] { read_checkpoint_file(dir / "long.ckpt", into); }),
            dir / "long.ckpt" + ": checkpoint with trailing bytes: " + std::to_string(size + 1) + " bytes, its header describes " +
                std::to_string(size));
  {
    std::fstream f(dir / "a.ckpt", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(size) - 200);
    f.put('\x55');
  }
  EXPECT_EQ(error_of([&] { read_checkpoint_file(dir / "a.ckpt", into); }), dir / "a.ckpt" + ": checksum mismatch, the checkpoint is corrupt");
  write_checkpoint_file(dir / "b.ckpt", CheckpointInfo{3}, sample_state());
  NamedTensors other{{"master", torch::zeros({2999})}, {"step_counts", torch::zeros({5}, torch::kLong)}};
  EXPECT_EQ(error_of([&] { read_checkpoint_file(dir / "b.ckpt", other); }),
            dir / "b.ckpt" + ": tensor 'master' (Float, 3000 elements) does not match this run's 'master' (Float, 2999)");
  const at::Tensor untouched = other[0].second.clone();
  EXPECT_TRUE(torch::equal(other[0].second, untouched)) << "a refused file leaves the run's state alone";
}

TEST(Checkpoint, LatestNamesOnlyCompleteSaves) {
  TempDir dir("ckpt-latest");
  Comm solo(RankEnv{});
  NamedTensors s = sample_state();
  save_checkpoint(dir.path.string(), CheckpointInfo{2}, s, solo);
  save_checkpoint(dir.path.string(), CheckpointInfo{4}, s, solo);
  EXPECT_EQ(testing::read_file(dir / "latest"), "step-4\n");
  EXPECT_FALSE(std::filesystem::exists(dir / "step-2")) << "older steps are removed once a newer one is complete";
  EXPECT_EQ(load_checkpoint(dir.path.string(), s, solo).steps, 4);
  TempDir empty("ckpt-none");
  EXPECT_EQ(error_of([&] { load_checkpoint(empty.path.string(), s, solo); }),
            empty.path.string() + ": no checkpoint to resume from (no 'latest')");
}

TEST(Checkpoint, RunKilledMidSaveResumesWithNothingLost) {
  TempDir dir("ckpt-kill");
  const std::string plan = testing::write_plan(dir, "plan.yaml", 4, 2, 6);
  // Uninterrupted: 6 iterations.
  ASSERT_EQ(testing::run_starfish(plan + " --threads 1 --params-out " + (dir / "whole.params"), dir / "whole.log").code, 0)
      << testing::read_file(dir / "whole.log");
  // Checkpoints after 2 and 4 iterations; SIGKILL half-way through the second save.
  const std::string ckpt = dir / "ckpt";
  const testing::ExitStatus killed = testing::run_starfish(
      plan + " --threads 1 --checkpoint-dir " + ckpt + " --checkpoint-every 2 --kill-in-save 2", dir / "killed.log");
  EXPECT_EQ(killed.signal, SIGKILL) << testing::read_file(dir / "killed.log");
  EXPECT_EQ(testing::read_file(ckpt + "/latest"), "step-2\n") << "the torn save is not named";
  bool torn_file_left = false;
  for (const auto& e : std::filesystem::directory_iterator(ckpt + "/step-4"))
    torn_file_left = torn_file_left || e.path().filename().string().find(".tmp.") != std::string::npos;
  EXPECT_TRUE(torn_file_left) << "the kill happened while the temp file was being written";
  // Resume: iterations 3..6 from the step-2 checkpoint.
  ASSERT_EQ(testing::run_starfish(plan + " --threads 1 --checkpoint-dir " + ckpt + " --resume --params-out " +
                                      (dir / "resumed.params"),
                                  dir / "resumed.log")
                .code,
            0)
      << testing::read_file(dir / "resumed.log");
  EXPECT_NE(testing::read_file(dir / "resumed.log").find("resumed from " + ckpt + " at iteration 2"), std::string::npos);
  EXPECT_EQ(testing::read_file(dir / "whole.params"), testing::read_file(dir / "resumed.params"))
      << "bit-identical parameters after 6 iterations";
}

}  // namespace
}  // namespace starfish::exec

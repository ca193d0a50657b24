// Faults a real run meets: a full disk during a save, a resume with another plan or another
// number of ranks, and a rank that dies while the others wait for it in a collective.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <torch/torch.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "exec/checkpoint.h"
#include "exec/dist.h"
#include "exec/launcher.h"
#include "exec_test_util.h"
#include "sim/spec/error.h"
#include "support/error_of.h"

namespace starfish::exec {
namespace {

using ::starfish::testing::error_of;
using testing::TempDir;

NamedTensors state_of(int64_t elements, float value) { return {{"master", torch::full({elements}, value)}}; }

// A folder on a filesystem of `bytes`: a tmpfs with that size limit where this process may
// mount one (root, as in CI), else the process's file-size limit (RLIMIT_FSIZE), under which a
// write past the limit fails (EFBIG) the way one fails on a full disk (ENOSPC).
struct SmallDisk {
  std::string dir;
  bool mounted = false;
  rlimit old_limit{};
  SmallDisk(const std::string& path, int64_t bytes) : dir(path) {
    std::filesystem::create_directories(dir);
    mounted = std::system(("mount -t tmpfs -o size=" + std::to_string(bytes) + " starfish-test " + dir + " 2>/dev/null").c_str()) == 0;
    if (!mounted) {
      ::signal(SIGXFSZ, SIG_IGN);
      ::getrlimit(RLIMIT_FSIZE, &old_limit);
      rlimit small{static_cast<rlim_t>(bytes), old_limit.rlim_max};
      ::setrlimit(RLIMIT_FSIZE, &small);
    }
  }
  ~SmallDisk() {
    if (mounted) (void)std::system(("umount " + dir).c_str());
    else ::setrlimit(RLIMIT_FSIZE, &old_limit);
  }
};

TEST(Faults, AFullDiskDuringASaveLeavesThePreviousCheckpointIntact) {
  TempDir root("fault-disk");
  const std::string dir = root / "ckpt";
  Comm solo(RankEnv{});
  // 64 KiB of tensor bytes fit a 160 KiB filesystem once; the second save needs twice that
  // until it removes the first, so its file fails part-way.
  SmallDisk disk(dir, 160 << 10);
  NamedTensors first = state_of(16 << 10, 1.0f);
  save_checkpoint(dir, CheckpointInfo{2}, first, solo);
  NamedTensors big = state_of(32 << 10, 2.0f);  // 128 KiB: no room beside the first
  const std::string error = [&] {
    try {
      save_checkpoint(dir, CheckpointInfo{4}, big, solo);
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  }();
  EXPECT_EQ(error.rfind("checkpoint: write " + dir + "/step-4/rank-0.ckpt.tmp.", 0), 0u) << error;
  EXPECT_NE(error.find(disk.mounted ? "No space left on device" : "File too large"), std::string::npos) << error;
  EXPECT_NE(error.find("the previous checkpoint is intact"), std::string::npos) << error;
  EXPECT_EQ(testing::read_file(dir + "/latest"), "step-2\n");
  EXPECT_TRUE(std::filesystem::is_empty(dir + "/step-4")) << "no partial file is left to fill the disk";
  NamedTensors loaded = state_of(16 << 10, 0.0f);
  EXPECT_EQ(load_checkpoint(dir, loaded, solo).steps, 2);
  EXPECT_TRUE(torch::equal(loaded[0].second, first[0].second));
}

TEST(Faults, ResumingWithAnotherWorldSizeIsRefused) {
  TempDir dir("fault-world");
  Comm solo(RankEnv{});
  NamedTensors s = state_of(100, 1.0f);
  save_checkpoint(dir.path.string(), CheckpointInfo{2}, s, solo);
  // As if a second rank had saved beside it.
  std::filesystem::copy_file(dir / "step-2/rank-0.ckpt", dir / "step-2/rank-1.ckpt");
  EXPECT_EQ(error_of([&] { load_checkpoint(dir.path.string(), s, solo); }),
            dir / "step-2" + ": written by 2 rank(s), this run has 1: resume with the same number of ranks");
}

TEST(Faults, ResumingWithAnotherRunSaysWhatDiffers) {
  TempDir dir("fault-identity");
  Comm solo(RankEnv{});
  NamedTensors s = state_of(100, 1.0f);
  CheckpointInfo info{2};
  info.identity = {{"model.hidden", "32"}, {"plan.zero_stage", "1"}, {"world_size", "1"}};
  save_checkpoint(dir.path.string(), info, s, solo);
  const CheckpointIdentity now{{"model.hidden", "32"}, {"plan.zero_stage", "2"}, {"world_size", "1"}};
  EXPECT_EQ(error_of([&] { load_checkpoint(dir.path.string(), s, solo, now); }),
            dir / "step-2/rank-0.ckpt" + ": written by another run: plan.zero_stage 1 in the checkpoint, 2 in this run; "
                                          "resume with the run that wrote it, or start afresh");
  EXPECT_EQ(load_checkpoint(dir.path.string(), s, solo, info.identity).steps, 2);
  EXPECT_EQ(read_checkpoint_header(dir / "step-2/rank-0.ckpt").identity, info.identity);
}

// starfish-run end to end: a checkpoint of one model is not resumed by a run of another.
TEST(Faults, StarfishRunRefusesToResumeAnotherModel) {
  TempDir dir("fault-resume-model");
  const std::string plan = testing::write_plan(dir, "plan.yaml", 4, 2, 2);
  const std::string ckpt = dir / "ckpt";
  ASSERT_EQ(testing::run_starfish(plan + " --threads 1 --checkpoint-dir " + ckpt, dir / "a.log").code, 0) << testing::read_file(dir / "a.log");
  // Same parameter shapes, another model name and sequence length.
  testing::write_file(dir / "other.yaml", "name: other-gpt\nlayers: 2\nhidden: 32\nheads: 2\nseq_len: 8\nvocab: 256\n");
  const testing::ExitStatus st = testing::run_starfish(
      plan + " --model " + (dir / "other.yaml") + " --threads 1 --checkpoint-dir " + ckpt + " --resume", dir / "b.log");
  EXPECT_EQ(st.code, 1);
  const std::string log = testing::read_file(dir / "b.log");
  EXPECT_NE(log.find("written by another run: model.name test-gpt in the checkpoint, other-gpt in this run; model.seq_len 16 in "
                     "the checkpoint, 8 in this run"),
            std::string::npos)
      << log;
}

// Two ranks started as torchrun would (not by --nproc, whose launcher ends the others itself):
// rank 1 dies half-way through its first checkpoint save; rank 0, waiting for it at the
// barrier, must exit with a one-line error well within the c10d timeout it was given.
TEST(Faults, ADeadRankMakesTheOthersExitWithAnError) {
  TempDir dir("fault-rank-death");
  const std::string plan = testing::write_plan(dir, "plan.yaml", 4, 2, 4);
  const std::string port = std::to_string(free_loopback_port());
  auto start = [&](int rank, const std::string& extra) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::setenv("RANK", std::to_string(rank).c_str(), 1);
      ::setenv("LOCAL_RANK", std::to_string(rank).c_str(), 1);
      ::setenv("WORLD_SIZE", "2", 1);
      ::setenv("MASTER_ADDR", "127.0.0.1", 1);
      ::setenv("MASTER_PORT", port.c_str(), 1);
      const std::string cmd = std::string("exec ") + STARFISH_RUN + " " + plan + " --threads 1 --timeout 60 --checkpoint-dir " +
                              (dir / "ckpt") + " --checkpoint-every 2" + extra + " >" + (dir / ("rank" + std::to_string(rank) + ".log")) +
                              " 2>&1";
      ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    return pid;
  };
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t r0 = start(0, ""), r1 = start(1, " --kill-in-save 1");
  int st1 = 0, st0 = 0;
  ::waitpid(r1, &st1, 0);
  ::waitpid(r0, &st0, 0);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_TRUE(WIFSIGNALED(st1) || (WIFEXITED(st1) && WEXITSTATUS(st1) == 128 + SIGKILL)) << "rank 1 killed itself";
  ASSERT_TRUE(WIFEXITED(st0));
  EXPECT_EQ(WEXITSTATUS(st0), 1);
  EXPECT_LT(seconds, 60) << "rank 0 noticed before its c10d timeout: the dead rank's connections closed";
  const std::string log = testing::read_file(dir / "rank0.log");
  EXPECT_NE(log.find("starfish-run: rank 0: a collective failed: another rank died or did not answer within 60 s"), std::string::npos)
      << log;
  EXPECT_EQ(testing::read_file(dir / "ckpt/latest"), "") << "no checkpoint was completed";
}

}  // namespace
}  // namespace starfish::exec

// Ranks over Gloo: the environment contract, the local launcher, and data-parallel training on
// two ranks against one rank with the doubled batch.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdlib>

#include "exec/checkpoint.h"
#include "exec/dist.h"
#include "exec/gpt_model.h"
#include "exec/launcher.h"
#include "exec_test_util.h"
#include "sim/spec/error.h"

namespace starfish::exec {
namespace {

using testing::TempDir;

struct EnvGuard {
  std::vector<std::string> names{"RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"};
  EnvGuard() { clear(); }
  ~EnvGuard() { clear(); }
  void clear() {
    for (const auto& n : names) ::unsetenv(n.c_str());
  }
};

TEST(RankEnv, WithoutVariablesIsOneRank) {
  EnvGuard g;
  const RankEnv e = RankEnv::from_environment();
  EXPECT_EQ(e.rank, 0);
  EXPECT_EQ(e.world_size, 1);
}

TEST(RankEnv, ReadsTheTorchrunVariables) {
  EnvGuard g;
  ::setenv("RANK", "3", 1);
  ::setenv("WORLD_SIZE", "4", 1);
  ::setenv("LOCAL_RANK", "1", 1);
  ::setenv("MASTER_ADDR", "10.0.0.2", 1);
  ::setenv("MASTER_PORT", "29501", 1);
  const RankEnv e = RankEnv::from_environment();
  EXPECT_EQ(e.rank, 3);
  EXPECT_EQ(e.world_size, 4);
  EXPECT_EQ(e.local_rank, 1);
  EXPECT_EQ(e.master_addr, "10.0.0.2");
  EXPECT_EQ(e.master_port, 29501);
}

TEST(RankEnv, RejectsBadValuesByName) {
  EnvGuard g;
  ::setenv("WORLD_SIZE", "two", 1);
  EXPECT_THROW(
      {
        try {
          RankEnv::from_environment();
        } catch (const SpecError& e) {
          EXPECT_STREQ(e.what(), "environment variable WORLD_SIZE='two': expected an integer >= 1");
          throw;
        }
      },
      SpecError);
  ::setenv("WORLD_SIZE", "2", 1);
  ::setenv("RANK", "1", 1);
  try {
    RankEnv::from_environment();
    ADD_FAILURE() << "no error";
  } catch (const SpecError& e) {
    EXPECT_STREQ(e.what(), "environment: WORLD_SIZE > 1 needs MASTER_ADDR");
  }
}

TEST(Launcher, FreePortIsUsable) {
  const int p = free_loopback_port();
  EXPECT_GT(p, 0);
  EXPECT_LT(p, 65536);
}

TEST(Launcher, PropagatesARankFailure) {
  TempDir dir("launch-fail");
  const std::string plan = testing::write_plan(dir, "plan.yaml", 4, 2, 2);
  testing::write_file(dir / "dp3.yaml", testing::read_file(plan) + "  data_parallel: 3\n");
  const testing::ExitStatus st = testing::run_starfish("--nproc 2 " + (dir / "dp3.yaml") + " --threads 1", dir / "log");
  EXPECT_EQ(st.code, 1);
  const std::string log = testing::read_file(dir / "log");
  EXPECT_NE(log.find("the plan asks for 3 ranks, this run has 2"), std::string::npos) << log;
  EXPECT_NE(log.find("starfish-run: rank "), std::string::npos) << log;
  EXPECT_NE(log.find(" exited with status 1"), std::string::npos) << log;
}

NamedTensors read_params(const std::string& path) {
  const Gpt gpt(testing::tiny_model());
  NamedTensors t;
  for (const GptParam& p : gpt.params()) t.emplace_back(p.name, at::zeros(p.shape));
  read_checkpoint_file(path, t);
  return t;
}

TEST(DataParallel, TwoGlooRanksMatchOneRankWithTheDoubledBatch) {
  TempDir dir("dp");
  // One rank: 4 sequences in 2 micro-batches of 2. Two ranks: 2 sequences each, 1 micro-batch.
  const std::string one = testing::write_plan(dir, "one.yaml", 4, 2, 4);
  const std::string two = testing::write_plan(dir, "two.yaml", 4, 2, 4);
  ASSERT_EQ(testing::run_starfish(one + " --threads 1 --params-out " + (dir / "one.params"), dir / "one.log").code, 0)
      << testing::read_file(dir / "one.log");
  ASSERT_EQ(testing::run_starfish("--nproc 2 " + two + " --threads 1 --params-out " + (dir / "two.params"), dir / "two.log").code, 0)
      << testing::read_file(dir / "two.log");
  EXPECT_NE(testing::read_file(dir / "two.log").find("2 rank(s) (gloo)"), std::string::npos);
  const NamedTensors a = read_params(dir / "one.params"), b = read_params(dir / "two.params");
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, (a[i].second - b[i].second).abs().max().item<double>());
  EXPECT_LT(worst, 1e-5);
}

}  // namespace
}  // namespace starfish::exec

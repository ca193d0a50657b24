#include <gtest/gtest.h>

#include "sim/cost/flops.h"
#include "test_support.h"

namespace starfish {
namespace {

TEST(Flops, TokensPerSecondOfAnIteration) {
  const Model m = testing::gpt(2, 64, 4, 2048, 100);
  EXPECT_DOUBLE_EQ(tokens_per_s(m, 512, 4.0), 512.0 * 2048 / 4.0);
  EXPECT_EQ(tokens_per_s(m, 512, 0.0), 0.0) << "no time, no rate (not infinity)";
}

TEST(Flops, MatchNarayananClosedFormWithoutRecompute) {
  const Model m = testing::gpt(96, 12288, 96, 2048, 51200);
  const double ours = iteration_flops(m, 1536, Recompute::none).model;
  EXPECT_NEAR(ours / narayanan_iteration_flops(m, 1536, false), 1.0, 1e-12);
}

TEST(Flops, MatchNarayananClosedFormWithFullRecompute) {
  const Model m = testing::gpt(80, 12288, 96, 2048, 51200);
  const IterationFlops f = iteration_flops(m, 2304, Recompute::full);
  EXPECT_NEAR(f.hardware / narayanan_iteration_flops(m, 2304, true), 1.0, 1e-12);
  EXPECT_LT(f.model, f.hardware);
}

TEST(Flops, ModelFlopsAreAboutSixTimesParamsPerToken) {
  // 6 N per token plus the attention-score term 6 * 2 s h L per token (Kaplan et al. 2020).
  const Model m = testing::gpt(24, 2048, 16, 1024, 50257);
  const double tokens = 8.0 * m.seq_len;
  const double f = iteration_flops(m, 8, Recompute::none).model;
  const double matmul_params = 12.0 * m.layers * m.hidden * m.hidden + static_cast<double>(m.vocab) * m.hidden;
  EXPECT_NEAR(f / tokens, 6 * matmul_params + 12.0 * m.layers * m.seq_len * m.hidden, 1.0);
}

TEST(Flops, SelectiveRecomputeRedoesOnlyTheAttentionCore) {
  const Model m = testing::gpt(4, 1024, 16, 2048, 1000);
  const double extra = iteration_flops(m, 2, Recompute::selective).hardware - iteration_flops(m, 2, Recompute::none).hardware;
  EXPECT_DOUBLE_EQ(extra, 4.0 * m.layers * 2 * m.seq_len * static_cast<double>(m.seq_len) * m.hidden);
}

}  // namespace
}  // namespace starfish

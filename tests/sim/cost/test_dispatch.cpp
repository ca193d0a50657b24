// Per-op dispatch on a CPU host (sim/cost/dispatch.h): the executor's op counts times the
// hwprofile's per-op costs, and nothing without them.
#include <gtest/gtest.h>

#include "sim/cost/dispatch.h"

namespace starfish {
namespace {

TEST(Dispatch, CountsTimesTheHostsPerOpCosts) {
  HostSpec host;
  host.op_dispatch_s = 1e-6;
  host.backward_op_dispatch_s = 2e-6;
  const LayerDispatch full = layer_dispatch(host, Recompute::full);
  EXPECT_DOUBLE_EQ(full.forward_s, 157e-6);           // 157 forward ops
  EXPECT_DOUBLE_EQ(full.backward_s, 379 * 2e-6);      // 379 backward nodes and ops
  EXPECT_DOUBLE_EQ(full.recompute_s, full.forward_s); // the forward again
  EXPECT_DOUBLE_EQ(full.output_s, 30e-6 + 67 * 2e-6);
  EXPECT_EQ(layer_dispatch(host, Recompute::none).recompute_s, 0);
}

TEST(Dispatch, CpuBmmSelectsEachMatrixOfItsBatch) {
  // 16 matrices a bmm (4 sequences x 4 heads): 15 more than the counts hold, 9 ops each, for
  // the 2 forward bmm and the 4 of backward, at the forward's per-op cost.
  HostSpec host;
  host.op_dispatch_s = 1e-6;
  host.backward_op_dispatch_s = 2e-6;
  const LayerDispatch d = layer_dispatch(host, Recompute::full, 16);
  EXPECT_DOUBLE_EQ(d.forward_s, (157 + 2 * 9 * 15) * 1e-6);
  EXPECT_DOUBLE_EQ(d.backward_s, 379 * 2e-6 + 4 * 9 * 15 * 1e-6);
  EXPECT_DOUBLE_EQ(d.recompute_s, d.forward_s);
  EXPECT_DOUBLE_EQ(layer_dispatch(host, Recompute::full, 1).forward_s, 157e-6);
}

TEST(Dispatch, NoneWithoutTheTrait) {
  const LayerDispatch d = layer_dispatch(HostSpec{}, Recompute::full);
  EXPECT_EQ(d.forward_s + d.backward_s + d.recompute_s + d.output_s, 0) << "GPU profiles leave it unset";
}

}  // namespace
}  // namespace starfish

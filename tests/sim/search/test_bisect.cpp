// The one bisection maxsize and size-cluster search with (bisect.h): it finds the boundary of
// every monotone predicate from either end, in as few probes as halving allows, probing the
// midpoint rounded toward the passing end -- and so the very node counts size-cluster probed
// with its own loop before it used the helper.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "sim/search/bisect.h"

namespace starfish::search {
namespace {

const auto never = [] { return false; };

// maxsize's direction: sizes pass below the boundary `b`, index 0 is the series' start.
TEST(Bisect, FindsTheLastPassingSizeAbove) {
  for (int n = 1; n <= 40; ++n)
    for (int b = 1; b <= n; ++b) {
      int probes = 0;
      const int last = bisect(0, n, [&](int i) { ++probes; return i < b; }, never);
      EXPECT_EQ(last, b - 1) << "n " << n << " b " << b;
      EXPECT_LE(probes, static_cast<int>(std::ceil(std::log2(n)))) << "n " << n << " b " << b;
    }
}

// size-cluster's direction: node counts pass from index b up; index n - 1 passes, -1 is virtual.
TEST(Bisect, FindsTheFirstPassingCountBelow) {
  for (ptrdiff_t n = 1; n <= 40; ++n)
    for (ptrdiff_t b = 0; b < n; ++b) {
      const ptrdiff_t first = bisect<ptrdiff_t>(n - 1, -1, [&](ptrdiff_t i) { return i >= b; }, never);
      EXPECT_EQ(first, b) << "n " << n << " b " << b;
    }
}

TEST(Bisect, MidpointsRoundTowardThePassingEnd) {
  std::vector<int> probed;
  auto record = [&](bool result) {
    return [&probed, result](int i) {
      probed.push_back(i);
      return result;
    };
  };
  EXPECT_EQ(bisect(0, 7, record(true), never), 6);  // 0 + 7/2 = 3, then 5, then 6
  EXPECT_EQ(probed, (std::vector<int>{3, 5, 6}));
  probed.clear();
  EXPECT_EQ(bisect(7, 0, record(false), never), 7);  // 7 - 7/2 = 4, then 7 - 3/2 = 6
  EXPECT_EQ(probed, (std::vector<int>{4, 6}));
}

// size-cluster's loop before the helper: lo, the first untried index; hi, known to pass.
std::vector<ptrdiff_t> size_cluster_loop_probes(ptrdiff_t n, ptrdiff_t b) {
  std::vector<ptrdiff_t> probed;
  ptrdiff_t lo = 0, hi = n - 1;
  while (lo < hi) {
    const ptrdiff_t mid = lo + (hi - lo) / 2;
    probed.push_back(mid);
    if (mid >= b) hi = mid;
    else lo = mid + 1;
  }
  return probed;
}

TEST(Bisect, ProbesTheCountsSizeClustersOwnLoopDid) {
  for (ptrdiff_t n = 1; n <= 40; ++n)
    for (ptrdiff_t b = 0; b < n; ++b) {
      std::vector<ptrdiff_t> probed;
      bisect<ptrdiff_t>(n - 1, -1, [&](ptrdiff_t i) { probed.push_back(i); return i >= b; }, never);
      EXPECT_EQ(probed, size_cluster_loop_probes(n, b)) << "n " << n << " b " << b;
    }
}

TEST(Bisect, CancelledProbesNothing) {
  int probes = 0;
  EXPECT_EQ(bisect(0, 100, [&](int) { ++probes; return true; }, [] { return true; }), 0);
  EXPECT_EQ(probes, 0);
}

}  // namespace
}  // namespace starfish::search

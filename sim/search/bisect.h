#pragma once
// The one bisection of the sizing verbs: maxsize bisects model sizes (the passing end the
// smaller), size-cluster node counts (the passing end the larger); both probe a full plan search
// at each midpoint, so the helper only orders the probes and the callers keep what they found.
#include <cstdlib>

namespace starfish::search {

// Bisects between `pass`, whose probe passes (or a virtual end before the first index), and
// `fail`, whose probe does not, until they are adjacent or cancelled() says stop; returns the
// last passing index. Either end may be the larger. Each step probes the midpoint rounded toward
// `pass`: pass + (fail - pass) / 2, C++'s division truncating toward zero. So maxsize, passing
// below, rounds down, and size-cluster, passing above, rounds up -- the probes each made before
// it used this helper (it had its own lo + (hi - lo) / 2 over [first untried, known good]).
template <typename Int, typename Passes, typename Cancelled>
Int bisect(Int pass, Int fail, const Passes& passes, const Cancelled& cancelled) {
  while (std::abs(fail - pass) > 1 && !cancelled()) {
    const Int mid = pass + (fail - pass) / 2;
    if (passes(mid)) pass = mid;
    else fail = mid;
  }
  return pass;
}

}  // namespace starfish::search

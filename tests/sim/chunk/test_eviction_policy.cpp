// Farthest-next-use must never move more bytes than LRU on the PatrickStar benchmark models,
// with a GPU that holds about a third of the fp16 params besides a growing-then-shrinking
// activation profile (34 s h bytes per layer kept for backward: Korthikanti et al. 2022
// without the attention-score term, micro-batch 1).
#include <gtest/gtest.h>

#include <numeric>

#include "sim/chunk/iteration_driver.h"
#include "sim/chunk/reference_backend.h"
#include "tests/sim/chunk/patrickstar_models.h"

namespace starfish {
namespace {

struct Volume {
  int64_t copied = 0;   // bytes of every copy of the steady iteration
  int64_t evicted = 0;  // of which evictions
  int64_t moves = 0;
};

std::vector<int64_t> activation_profile(const std::vector<Step>& steps, const Model& m) {
  const int64_t per_layer = int64_t{34} * m.seq_len * m.hidden;
  std::vector<int64_t> out;
  int64_t live = 0;
  for (const Step& s : steps) {
    if (s.phase == Phase::forward) live += per_layer;
    out.push_back(live);
    if (s.phase == Phase::backward) live -= per_layer;
    if (s.phase == Phase::optimizer) out.back() = 0;
  }
  return out;
}

Volume steady_iteration(const Model& m, EvictionKind kind) {
  const ChunkLayout layout =
      ChunkLayout::build(parameter_tensors(m), LayoutOptions{int64_t{32} << 20, DType::fp16, Optimizer::adam, 1});
  std::vector<int> all(layout.param_chunks());
  std::iota(all.begin(), all.end(), 0);
  const std::vector<int64_t> act = activation_profile(iteration_steps(layout, m.tied_embeddings, all), m);
  int64_t params = 0;
  for (int c = 0; c < layout.param_chunks(); ++c) params += layout.chunk(c).bytes();
  RuntimeOptions o;
  o.budget = {params / 3 + *std::max_element(act.begin(), act.end()), int64_t{1} << 42, 0};
  o.eviction = kind;
  ReferenceBackend backend;
  ChunkRuntime rt(layout, o, backend);
  IterationDriver driver(rt, m.tied_embeddings);
  FixedNonModel hooks(act);
  driver.run_iteration(hooks);
  const size_t before = rt.moves().size();
  driver.run_iteration(hooks);
  Volume v;
  for (size_t i = before; i < rt.moves().size(); ++i) {
    v.copied += rt.moves()[i].bytes;
    if (rt.moves()[i].reason == MoveReason::eviction) v.evicted += rt.moves()[i].bytes;
    ++v.moves;
  }
  return v;
}

TEST(EvictionPolicy, FarthestNextUseMovesNoMoreBytesThanLruOnPatrickStarModels) {
  const std::vector<Model> models = test::patrickstar_models();
  ASSERT_EQ(models.size(), 15u);  // GPT2_1B ... GPT_175B
  for (const Model& m : models) {
    const Volume fnu = steady_iteration(m, EvictionKind::farthest_next_use);
    const Volume lru = steady_iteration(m, EvictionKind::lru);
    EXPECT_LE(fnu.copied, lru.copied) << m.name;
    EXPECT_GT(lru.evicted, 0) << m.name << ": the budget must force evictions";
    RecordProperty(m.name + "_fnu_bytes", std::to_string(fnu.copied));
    RecordProperty(m.name + "_lru_bytes", std::to_string(lru.copied));
    std::printf("%-12s FNU %8.2f GB (%lld moves)  LRU %8.2f GB (%lld moves)\n", m.name.c_str(), fnu.copied / 1e9,
                static_cast<long long>(fnu.moves), lru.copied / 1e9, static_cast<long long>(lru.moves));
  }
}

TEST(EvictionPolicy, LruPicksTheLeastRecentlyTouchedAndFnuTheFarthestNextUse) {
  MemoryTracer tracer(3);
  // Moments 0..3 use chunks 0, 1, 2, 0: at moment 3 chunk 1 is next used at 1 + 4, chunk 2 at 2 + 4.
  for (Moment t = 0; t < 4; ++t) {
    tracer.enter(t, {Phase::forward, static_cast<int>(t)}, 0, 0);
    tracer.access(t, t == 3 ? 0 : static_cast<int>(t), 0);
  }
  tracer.end_iteration(4, 0);
  auto fnu = make_eviction_policy(EvictionKind::farthest_next_use, tracer, 3);
  auto lru = make_eviction_policy(EvictionKind::lru, tracer, 3);
  for (int c : {1, 2, 0}) lru->touched(c);
  EXPECT_EQ(fnu->choose({0, 1, 2}, 3), 2);
  EXPECT_EQ(fnu->choose({0, 1}, 0), 0);  // 0 next at 3, 1 at 1
  EXPECT_EQ(lru->choose({0, 1, 2}, 3), 1);
  EXPECT_EQ(tracer.next_use(0, 3), 4);  // wraps into the next iteration
}

}  // namespace
}  // namespace starfish

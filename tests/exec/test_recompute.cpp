// plan.recompute in the executor: with none the layers keep their autograd graphs from forward
// to backward, with full they are recomputed in backward; both train the same numbers (same
// seed: 1e-5), in plain LibTorch, on the flat store and on the chunk runtime (fp32 and bf16,
// whose param chunks also take the grads), with the same move log. None is refused, with one
// line naming plan.recompute, when the runtime would move a chunk a layer's graph holds: an
// eviction, or ZeRO dropping a remote chunk after its forward (exec/graph_residency.h).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "exec/chunk_store.h"
#include "exec/dist.h"
#include "exec/flat_store.h"
#include "exec/graph_residency.h"
#include "exec/trainer.h"
#include "exec_test_util.h"
#include "sim/chunk/reference_backend.h"
#include "sim/spec/error.h"

namespace starfish::exec {
namespace {

using testing::TempDir;
using Named = std::vector<std::pair<std::string, at::Tensor>>;

constexpr int64_t kChunkElements = 5000;

Model bias_free() {  // see test_store_training.cpp for why Adam comparisons avoid attn.qkv.bias
  Model m = testing::tiny_model();
  m.bias = false;
  return m;
}

double max_difference(const Named& a, const Named& b) {
  EXPECT_EQ(a.size(), b.size());
  double worst = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    EXPECT_EQ(a[i].first, b[i].first);
    worst = std::max(worst, (a[i].second.to(at::kDouble) - b[i].second.to(at::kDouble)).abs().max().item<double>());
  }
  return worst;
}

RuntimeOptions options(int64_t gpu_bytes) {
  RuntimeOptions o;
  o.budget = MemoryBudget{gpu_bytes, 64 << 20, 0};
  return o;
}

ChunkLayout layout_of(const Gpt& gpt, const Training& t, int world = 1) {
  return ChunkLayout::build(parameter_tensors(gpt.model()), LayoutOptions::of(t, kChunkElements, world));
}

// The GPU bytes the busiest moment needs: a budget that evicts (see test_chunk_training.cpp).
int64_t minimum_gpu_bytes(const Gpt& gpt, const Training& t) {
  return testing::minimum_gpu_bytes(layout_of(gpt, t), gpt.model().tied_embeddings);
}

struct Rig {
  Gpt gpt{bias_free()};
  ByteCorpus data = ByteCorpus::generated(1 << 16);
  Training training = testing::tiny_training(Optimizer::adamw);
  Comm solo{RankEnv{}};
  TempDir scratch{"recompute"};
  Plan plan(Recompute r, int micro_batch) const {
    Plan p;
    p.micro_batch = micro_batch;
    p.recompute = r;
    return p;
  }
};

TEST(Recompute, NoneAndFullTrainTheSameInPlainLibTorchAndOnTheFlatStore) {
  Rig s;
  ReferenceTrainer ref_none(s.gpt, s.data, s.training, s.plan(Recompute::none, 2));
  ReferenceTrainer ref_full(s.gpt, s.data, s.training, s.plan(Recompute::full, 2));
  StoreTrainer flat_none(s.gpt, s.data, s.training, s.plan(Recompute::none, 2), s.solo,
                         std::make_unique<FlatStore>(s.gpt, at::kFloat, s.training.seed));
  StoreTrainer flat_full(s.gpt, s.data, s.training, s.plan(Recompute::full, 2), s.solo,
                         std::make_unique<FlatStore>(s.gpt, at::kFloat, s.training.seed));
  auto ref_values = [&](const ReferenceTrainer& r) {
    Named v;
    for (const GptParam& p : s.gpt.params()) v.emplace_back(p.name, r.value(p.name));
    return v;
  };
  for (int step = 1; step <= 4; ++step) {
    const StepResult a = ref_none.step(), b = ref_full.step(), c = flat_none.step(), d = flat_full.step();
    EXPECT_NEAR(a.loss, b.loss, 1e-5) << "step " << step;
    EXPECT_NEAR(a.grad_norm, b.grad_norm, 1e-5 * std::max(1.0, a.grad_norm)) << "step " << step;
    EXPECT_NEAR(c.loss, d.loss, 1e-5) << "step " << step;
    EXPECT_NEAR(c.grad_norm, d.grad_norm, 1e-5 * std::max(1.0, c.grad_norm)) << "step " << step;
    EXPECT_NEAR(a.loss, c.loss, 1e-5) << "step " << step;
    EXPECT_LT(max_difference(ref_values(ref_none), ref_values(ref_full)), 1e-5) << "step " << step;
    EXPECT_LT(max_difference(flat_none.store().gather_values(s.solo), flat_full.store().gather_values(s.solo)), 1e-5) << "step " << step;
    EXPECT_LT(max_difference(flat_none.store().gather_values(s.solo), ref_values(ref_none)), 1e-5) << "step " << step;
  }
}

// Everything fits the GPU tier: nothing moves between forward and backward, so none is safe.
void expect_chunked_none_equals_full(DType dtype, double tolerance) {
  Rig s;
  s.training.dtype = dtype;
  const int64_t budget = int64_t{64} << 20;
  TorchBackend backend_none(TierCapacity{budget, 0, 0}, s.scratch.path.string(), s.solo);
  TorchBackend backend_full(TierCapacity{budget, 0, 0}, s.scratch.path.string(), s.solo);
  auto store = [&](TorchBackend& b) {
    return std::make_unique<ChunkStore>(s.gpt, s.training, ChunkStoreOptions{kChunkElements, options(budget), 0}, b, s.training.seed);
  };
  auto none_store = store(backend_none), full_store = store(backend_full);
  ChunkStore &none_cs = *none_store, &full_cs = *full_store;
  const int micro = static_cast<int>(s.training.global_batch);
  StoreTrainer none(s.gpt, s.data, s.training, s.plan(Recompute::none, micro), s.solo, std::move(none_store));
  StoreTrainer full(s.gpt, s.data, s.training, s.plan(Recompute::full, micro), s.solo, std::move(full_store));
  for (int step = 1; step <= 4; ++step) {
    const StepResult a = none.step(), b = full.step();
    EXPECT_NEAR(a.loss, b.loss, tolerance) << "step " << step;
    EXPECT_NEAR(a.grad_norm, b.grad_norm, tolerance * std::max(1.0, a.grad_norm)) << "step " << step;
    EXPECT_LT(max_difference(none_cs.gather_values(s.solo), full_cs.gather_values(s.solo)), tolerance) << "step " << step;
  }
  // The accesses and releases do not depend on recompute: the same moves, and those of the
  // reference backend (the simulator's runtime) for the same plan.
  const MoveDiff d = diff_move_logs(none_cs.runtime().moves(), full_cs.runtime().moves());
  EXPECT_TRUE(d.same) << d.describe();
  ReferenceBackend ref;
  const ChunkLayout layout = layout_of(s.gpt, s.training);
  ChunkRuntime rt(layout, options(budget), ref);
  IterationDriver driver(rt, s.gpt.model().tied_embeddings);
  FixedNonModel nm(0);
  for (int i = 0; i < 4; ++i) driver.run_iteration(nm);
  const MoveDiff r = diff_move_logs(none_cs.runtime().moves(), rt.moves());
  EXPECT_TRUE(r.same) << r.describe();
  EXPECT_EQ(none_cs.runtime().moved_bytes(MoveReason::eviction), 0);
}

TEST(Recompute, ChunkRuntimeNoneEqualsFullWhenEverythingFits) { expect_chunked_none_equals_full(DType::fp32, 1e-5); }

// bf16: backward writes each layer's gradients over its params in the shared param chunk while
// the graphs of earlier layers still hold views of that chunk.
TEST(Recompute, Bf16ChunksReusedForGradsTrainTheSameWithoutRecompute) { expect_chunked_none_equals_full(DType::bf16, 1e-5); }

TEST(Recompute, EvictionBetweenForwardAndBackwardIsRefused) {
  Rig s;
  const int64_t budget = minimum_gpu_bytes(s.gpt, s.training);
  const std::string why =
      "none keeps layer 1's autograd graph, which holds views of parameter chunk 4, from its forward to its backward, but the chunk "
      "runtime moves that chunk to the cpu tier in between (iteration 0, moment 4, eviction): the GPU budget does not hold every "
      "chunk; use recompute: full, or a GPU budget that holds every chunk";
  const ChunkLayout layout = layout_of(s.gpt, s.training);
  EXPECT_EQ(predict_graph_residency(layout, options(budget), s.gpt.model().tied_embeddings, 0).value_or("(safe)"), why);
  // The store checks the same as it trains: the first backward that finds a moved chunk throws.
  TorchBackend backend(TierCapacity{budget, 0, 0}, s.scratch.path.string(), s.solo);
  auto store = std::make_unique<ChunkStore>(s.gpt, s.training, ChunkStoreOptions{kChunkElements, options(budget), 0}, backend,
                                            s.training.seed);
  StoreTrainer t(s.gpt, s.data, s.training, s.plan(Recompute::none, 4), s.solo, std::move(store));
  try {
    t.step();
    ADD_FAILURE() << "no error";
  } catch (const SpecError& e) {
    EXPECT_EQ(std::string(e.what()), "field 'plan.recompute': " + why);
  }
  // With the whole model's chunks in the budget the same prediction is safe.
  EXPECT_EQ(predict_graph_residency(layout, options(64 << 20), s.gpt.model().tied_embeddings, 0), std::nullopt);
}

// Two ranks: chunk 1 (the tied word embedding, which the head uses) belongs to rank 1, so rank 0
// drops its copy after the head's forward, its last forward use, before the head's backward.
TEST(Recompute, ZeroShardingIsRefusedWithoutRecompute) {
  Rig s;
  RuntimeOptions o = options(64 << 20);
  o.zero = ZeroMode::sharded;
  o.dp_ranks = {0, 1};
  o.dp_index = 0;
  EXPECT_EQ(predict_graph_residency(layout_of(s.gpt, s.training, 2), o, s.gpt.model().tied_embeddings, 0).value_or("(safe)"),
            "none keeps the head's autograd graph, which holds views of parameter chunk 1, from its forward to its backward, but ZeRO "
            "drops this rank's copy of it (rank 1 of the data-parallel group owns it) after its last forward use (iteration 0); use "
            "recompute: full, or zero_stage: 0");
}

// starfish-run refuses before it trains, naming the plan file and field.
TEST(Recompute, StarfishRunRefusesAnEvictingPlanWithoutRecompute) {
  Rig s;
  TempDir dir("recompute-run");
  testing::write_file(dir / "model.yaml", "name: test-gpt\nlayers: 2\nhidden: 32\nheads: 2\nseq_len: 16\nvocab: 256\nbias: false\n");
  const std::string plan = dir / "plan.yaml";
  testing::write_file(plan, "model: model.yaml\ntraining:\n  global_batch: 4\n  dtype: fp32\n  optimizer: adamw\n  iterations: 2\n"
                            "plan:\n  micro_batch: 4\n  chunk_size: 5000\n");
  const int64_t budget = minimum_gpu_bytes(s.gpt, s.training);
  const std::string args = plan + " --threads 1 --non-model 0 --gpu-budget " + std::to_string(budget);
  EXPECT_EQ(testing::run_starfish(args, dir / "log").code, 1);
  EXPECT_EQ(testing::read_file(dir / "log"),
            "starfish-run: " + plan +
                ": field 'plan.recompute': none keeps layer 1's autograd graph, which holds views of parameter chunk 4, from its "
                "forward to its backward, but the chunk runtime moves that chunk to the cpu tier in between (iteration 0, moment 4, "
                "eviction): the GPU budget does not hold every chunk; use recompute: full, or a GPU budget that holds every chunk\n");
  // The same plan with recompute: full trains.
  testing::write_file(plan, testing::read_file(plan) + "  recompute: full\n");
  EXPECT_EQ(testing::run_starfish(args, dir / "full.log").code, 0) << testing::read_file(dir / "full.log");
}

TEST(Recompute, SelectiveIsRefused) {
  Rig s;
  try {
    ReferenceTrainer r(s.gpt, s.data, s.training, s.plan(Recompute::selective, 4));
    ADD_FAILURE() << "no error";
  } catch (const SpecError& e) {
    EXPECT_STREQ(e.what(), "plan.recompute: starfish-run recomputes whole layers (full) or nothing (none), not selective");
  }
  TempDir dir("recompute-selective");
  std::string plan = testing::write_plan(dir, "plan.yaml", 4, 4, 1);
  testing::write_file(plan, testing::read_file(plan) + "  recompute: selective\n");
  EXPECT_EQ(testing::run_starfish(plan, dir / "log").code, 1);
  EXPECT_EQ(testing::read_file(dir / "log"), "starfish-run: " + plan +
                                                 ":12:3: field 'plan.recompute': Starfish's executor recomputes whole layers (full) or "
                                                 "nothing (none), not selective\n");
}

}  // namespace
}  // namespace starfish::exec

// Training with the chunk runtime on the Torch Backend: step for step equal to plain LibTorch
// while the GPU budget forces evictions (and with optimizer states on NVMe), the same move log
// as the reference backend for the same plan and budget, and bf16 mixed precision.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "exec/checkpoint.h"
#include "exec/chunk_store.h"
#include "exec/dist.h"
#include "exec/trainer.h"
#include "exec_test_util.h"
#include "sim/chunk/reference_backend.h"
#include "sim/chunk/runtime_config.h"
#include "sim/spec/job.h"
#include "sim/spec/spec_io.h"
#include "sim/report/report.h"
#include "sim/spec/error.h"

namespace starfish::exec {
namespace {

using testing::TempDir;

// Bias-free linears: see test_store_training.cpp for why Adam comparisons avoid attn.qkv.bias.
Model model() {
  Model m = testing::tiny_model();
  m.bias = false;
  return m;
}

constexpr int64_t kChunkElements = 5000;

RuntimeOptions options(int64_t gpu_bytes, int64_t cpu_bytes = 64 << 20, int64_t nvme_bytes = 0) {
  RuntimeOptions o;
  o.budget = MemoryBudget{gpu_bytes, cpu_bytes, nvme_bytes};
  return o;
}

// The GPU bytes the busiest moment needs, from a warm-up on the reference backend.
int64_t minimum_gpu_bytes(const Gpt& gpt, const Training& t) {
  const ChunkLayout layout = ChunkLayout::build(parameter_tensors(gpt.model()), LayoutOptions::of(t, kChunkElements));
  return testing::minimum_gpu_bytes(layout, gpt.model().tied_embeddings);
}

struct Fixture {
  Gpt gpt{model()};
  ByteCorpus data = ByteCorpus::generated(1 << 16);
  Training training = testing::tiny_training(Optimizer::adamw);
  Plan plan;
  Comm solo{RankEnv{}};
  TempDir scratch{"chunk-train"};
  Fixture() {
    plan.micro_batch = static_cast<int>(training.global_batch);
    plan.chunk_elements = kChunkElements;
    plan.framework = Framework::starfish;
    plan.recompute = Recompute::full;  // the budgets below evict between forward and backward
  }
};

double max_difference(TrainableStore& store, const ReferenceTrainer& ref, Comm& comm) {
  double worst = 0;
  for (const auto& [name, v] : store.gather_values(comm)) worst = std::max(worst, (v - ref.value(name)).abs().max().item<double>());
  return worst;
}

// `steps` steps of both trainers: the same loss, gradient norm and parameters, within 1e-5.
void expect_steps_match(StoreTrainer& chunked, ReferenceTrainer& reference, TrainableStore& store, Comm& comm, int steps) {
  EXPECT_EQ(max_difference(store, reference, comm), 0.0);
  for (int step = 1; step <= steps; ++step) {
    const StepResult a = chunked.step(), b = reference.step();
    EXPECT_NEAR(a.loss, b.loss, 1e-5) << "step " << step;
    EXPECT_NEAR(a.grad_norm, b.grad_norm, 1e-5 * std::max(1.0, b.grad_norm)) << "step " << step;
    EXPECT_LT(max_difference(store, reference, comm), 1e-5) << "step " << step;
  }
}

TEST(ChunkTraining, MatchesPlainLibTorchStepForStepWhileEvicting) {
  Fixture s;
  const int64_t budget = minimum_gpu_bytes(s.gpt, s.training);
  TorchBackend backend(TierCapacity{budget, 0, 0}, s.scratch.path.string(), s.solo);
  auto store = std::make_unique<ChunkStore>(s.gpt, s.training, ChunkStoreOptions{kChunkElements, options(budget), 0}, backend, s.training.seed);
  ChunkStore& cs = *store;
  ASSERT_GT(cs.layout().param_chunks(), 4);
  StoreTrainer chunked(s.gpt, s.data, s.training, s.plan, s.solo, std::move(store));
  ReferenceTrainer reference(s.gpt, s.data, s.training, s.plan);
  expect_steps_match(chunked, reference, cs, s.solo, 4);
  EXPECT_GT(cs.runtime().moved_bytes(MoveReason::eviction), 0) << "the budget forced evictions";
  EXPECT_LE(backend.usage(Tier::gpu).peak_bytes, budget) << "the pool never exceeded the budget";
}

TEST(ChunkTraining, OptimizerStatesOnNvmeFilesTrainTheSame) {
  Fixture s;
  const int64_t budget = minimum_gpu_bytes(s.gpt, s.training);
  // Host room for the param and grad chunks only: momentum and variance go to NVMe files.
  const ChunkLayout layout = ChunkLayout::build(parameter_tensors(s.gpt.model()), LayoutOptions::of(s.training, kChunkElements));
  const int64_t cpu = 2 * layout.param_chunks() * layout.chunk(0).bytes() + 4 * layout.chunk(0).bytes();
  TorchBackend backend(TierCapacity{budget, 0, 0}, s.scratch.path.string(), s.solo);
  auto store = std::make_unique<ChunkStore>(s.gpt, s.training, ChunkStoreOptions{kChunkElements, options(budget, cpu, 64 << 20), 0},
                                            backend, s.training.seed);
  StoreTrainer chunked(s.gpt, s.data, s.training, s.plan, s.solo, std::move(store));
  ReferenceTrainer reference(s.gpt, s.data, s.training, s.plan);
  for (int step = 1; step <= 3; ++step) {
    chunked.step();
    reference.step();
  }
  EXPECT_GT(backend.usage(Tier::nvme).peak_bytes, 0);
  EXPECT_GT(backend.copied_bytes(Tier::nvme, Tier::cpu), 0) << "states were read back from their files";
  EXPECT_LT(max_difference(chunked.store(), reference, s.solo), 1e-5);
}

TEST(ChunkTraining, MoveLogEqualsTheReferenceBackendsMoveForMove) {
  Fixture s;
  const int64_t budget = minimum_gpu_bytes(s.gpt, s.training) + 20000;  // room for one prefetch, not for all
  const int64_t non_model = 12345;
  TorchBackend backend(TierCapacity{budget, 0, 0}, s.scratch.path.string(), s.solo);
  auto store = std::make_unique<ChunkStore>(s.gpt, s.training, ChunkStoreOptions{kChunkElements, options(budget), non_model}, backend,
                                            s.training.seed);
  ChunkStore& cs = *store;
  StoreTrainer chunked(s.gpt, s.data, s.training, s.plan, s.solo, std::move(store));
  for (int i = 0; i < 3; ++i) chunked.step();

  const ChunkLayout layout = ChunkLayout::build(parameter_tensors(s.gpt.model()), LayoutOptions::of(s.training, kChunkElements));
  ReferenceBackend ref(budget);
  ChunkRuntime rt(layout, options(budget), ref);
  IterationDriver driver(rt, s.gpt.model().tied_embeddings);
  FixedNonModel nm(non_model);
  for (int i = 0; i < 3; ++i) driver.run_iteration(nm);

  const MoveDiff d = diff_move_logs(cs.runtime().moves(), rt.moves());
  EXPECT_TRUE(d.same) << d.describe();
  EXPECT_GT(cs.runtime().moves().size(), 50u);
  EXPECT_GT(cs.runtime().moved_bytes(MoveReason::prefetch), 0);
  EXPECT_EQ(backend.copied_bytes(Tier::gpu, Tier::cpu), ref.copied(Tier::gpu, Tier::cpu));
  EXPECT_EQ(backend.copied_bytes(Tier::cpu, Tier::gpu), ref.copied(Tier::cpu, Tier::gpu));
  EXPECT_EQ(backend.usage(Tier::gpu).peak_bytes, ref.peak(Tier::gpu));
}

TEST(ChunkTraining, Bf16ChunksReuseParamsForGradsAndLearn) {
  Fixture s;
  s.training.dtype = DType::bf16;
  s.training.learning_rate = 1e-2;
  TorchBackend backend(TierCapacity{1 << 20, 0, 0}, s.scratch.path.string(), s.solo);
  auto store = std::make_unique<ChunkStore>(s.gpt, s.training, ChunkStoreOptions{kChunkElements, options(1 << 20), 0}, backend,
                                            s.training.seed);
  ChunkStore& cs = *store;
  EXPECT_TRUE(cs.layout().mixed_precision());
  EXPECT_EQ(cs.layout().grad_chunk(0), 0) << "bf16 grads overwrite the bf16 params";
  StoreTrainer trainer(s.gpt, s.data, s.training, s.plan, s.solo, std::move(store));
  const double first = trainer.step().loss;
  double last = first;
  for (int i = 0; i < 25; ++i) last = trainer.step().loss;
  EXPECT_NEAR(first, std::log(256.0), 0.1);
  EXPECT_LT(last, first - 1.0);
}

// PatrickStar's CPU embedding (plan.cpu_embedding): the chunks hold everything but the word and
// position embeddings, which train as fp32 tables on the host; step for step what plain LibTorch
// computes, and the runtime decides what the simulator's runtime decides for the same plan.
TEST(ChunkTraining, CpuEmbeddingTrainsLikePlainLibTorchAndMovesAsTheSimulatorsRuntime) {
  Fixture s;
  Model untied = model();
  untied.tied_embeddings = false;
  const Gpt gpt(untied);
  s.plan.cpu_embedding = true;
  const Job job = make_job(untied, load_cluster(std::string(STARFISH_SOURCE_DIR) + "/hwprofiles/cpu-host.yaml"), s.training, s.plan);
  const ChunkPlan probe = chunk_plan(job, 0, MemoryBudget{1 << 30, 64 << 20, 0});
  const int64_t budget = testing::minimum_gpu_bytes(probe.layout, false) + 20000;
  const int64_t non_model = 12345;
  ChunkPlan cp = chunk_plan(job, 0, MemoryBudget{budget, 64 << 20, 0});
  ASSERT_TRUE(cp.cpu_embedding);
  for (const ParamTensor& t : cp.layout.tensors()) EXPECT_NE(t.name.rfind("embed.", 0), 0u) << t.name << " is in a chunk";
  const ChunkLayout layout = cp.layout;
  const RuntimeOptions runtime_options = cp.options;
  TorchBackend backend(TierCapacity{budget, 0, 0}, s.scratch.path.string(), s.solo);
  auto store = std::make_unique<ChunkStore>(gpt, std::move(cp), non_model, backend, s.training.seed);
  ChunkStore& cs = *store;
  StoreTrainer chunked(gpt, s.data, s.training, s.plan, s.solo, std::move(store));
  ReferenceTrainer reference(gpt, s.data, s.training, s.plan);
  expect_steps_match(chunked, reference, cs, s.solo, 3);
  // The same layout and options on the reference backend: the same moves, none for the embedding.
  ReferenceBackend ref(budget);
  ChunkRuntime rt(layout, runtime_options, ref);
  IterationDriver driver(rt, false);
  FixedNonModel nm(non_model);
  for (int i = 0; i < 3; ++i) driver.run_iteration(nm);
  const MoveDiff d = diff_move_logs(cs.runtime().moves(), rt.moves());
  EXPECT_TRUE(d.same) << d.describe();
  EXPECT_GT(cs.runtime().moved_bytes(MoveReason::eviction), 0) << "the budget forced evictions";
  // A checkpoint of the state carries the tables and their moments.
  int tables = 0;
  for (const auto& [name, t] : cs.save_state()) tables += name.rfind("embed.", 0) == 0;
  EXPECT_EQ(tables, 2 * 3) << "word and position: value, momentum, variance";
}

TEST(ChunkTraining, TooSmallABudgetIsRefusedWithTheMinimum) {
  Fixture s;
  TorchBackend backend(TierCapacity{30000, 0, 0}, s.scratch.path.string(), s.solo);
  try {
    ChunkStore cs(s.gpt, s.training, ChunkStoreOptions{kChunkElements, options(30000), 0}, backend, s.training.seed);
    ADD_FAILURE() << "no error";
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("the minimum is"), std::string::npos) << e.what();
  }
}

// Two ZeRO ranks (`starfish-run --nproc 2`) against one rank with the doubled batch: the same
// parameters after 3 steps. `cpu_embedding`: the two ranks keep the embeddings on the host (an
// untied model), each a replica whose gradients Gloo sums; the one rank keeps them in chunks.
void two_zero_ranks_match_one_rank(const std::string& tag, bool cpu_embedding) {
  TempDir dir(tag);
  testing::write_file(dir / "model.yaml", "name: test-gpt\nlayers: 2\nhidden: 32\nheads: 2\nseq_len: 16\nvocab: 256\nbias: false\n" +
                                              std::string(cpu_embedding ? "tied_embeddings: false\n" : ""));
  auto plan = [&](const std::string& name, int micro, int zero, bool host_embedding) {
    testing::write_file(dir / name, "model: model.yaml\ntraining:\n  global_batch: 4\n  dtype: fp32\n  optimizer: adamw\n"
                                    "  learning_rate: 0.003\n  weight_decay: 0.01\n  iterations: 3\n  seed: 5\nplan:\n  micro_batch: " +
                                        std::to_string(micro) + "\n  zero_stage: " + std::to_string(zero) +
                                        "\n  chunk_size: 5000\n  recompute: full\n" +
                                        (host_embedding ? "  cpu_embedding: true\n" : ""));
    return dir / name;
  };
  const std::string common = " --threads 1 --gpu-budget 1MiB --non-model 0";
  ASSERT_EQ(testing::run_starfish(plan("one.yaml", 4, 0, false) + common + " --params-out " + (dir / "one.params"), dir / "one.log").code, 0)
      << testing::read_file(dir / "one.log");
  ASSERT_EQ(testing::run_starfish("--nproc 2 " + plan("two.yaml", 2, 1, cpu_embedding) + common + " --params-out " + (dir / "two.params") +
                                      " --move-log " + (dir / "moves") + " --report " + (dir / "two.json"),
                                  dir / "two.log")
                .code,
            0)
      << testing::read_file(dir / "two.log");
  EXPECT_NE(testing::read_file(dir / "two.log").find("ZeRO sharded"), std::string::npos);
  const std::string log0 = testing::read_file(dir / "moves.rank0");
  EXPECT_NE(log0.find("\"op\":\"all-gather\""), std::string::npos);
  EXPECT_NE(log0.find("\"op\":\"reduce-scatter\""), std::string::npos);
  // The report's breakdown counts the ZeRO collectives as collectives (not as moves) in every
  // iteration, and the machine's CPU time of both ranks, not only rank 0's, as the run's own.
  const report::Report two = report::read_report_file(dir / "two.json");
  EXPECT_EQ(two.gpus, 2);
  for (const report::IterationRecord& it : two.iterations) {
    EXPECT_GT(it.phases.collectives_s, 0) << "iteration " << it.iteration;
    EXPECT_GE(it.others_cpu_s, 0);
  }
  Model m = model();
  m.tied_embeddings = !cpu_embedding;
  const Gpt gpt(m);
  NamedTensors a, b;
  for (const GptParam& p : gpt.params()) a.emplace_back(p.name, at::zeros(p.shape)), b.emplace_back(p.name, at::zeros(p.shape));
  read_checkpoint_file(dir / "one.params", a);
  read_checkpoint_file(dir / "two.params", b);
  EXPECT_GT(a[0].second.abs().max().item<double>(), 0) << a[0].first << " trained";
  // fp32 reduction order differs (two half-batch gradients summed against one whole-batch
  // backward). Adam divides by sqrt(v) + eps (1e-8), so an entry whose gradient sums to nearly
  // zero turns a rounding difference of ~1e-10 into up to lr * 1e-10 / 1e-8 = 3e-5 per step, and
  // which entry does that depends on the CPU's BLAS kernels (1.1e-5 on a Xeon, 6.6e-5 on an EPYC
  // in CI). So the test bounds the root-mean-square difference over the whole model (~41k
  // entries), which a few such entries keep below 1e-6 while one wrong embedding row (32 entries
  // off by ~lr = 3e-3) gives 8e-5, and no entry may be off by more than a tenth of one step.
  double squares = 0, worst = 0;
  int64_t entries = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const at::Tensor diff = (a[i].second - b[i].second).to(at::kDouble);
    squares += diff.pow(2).sum().item<double>();
    entries += diff.numel();
    worst = std::max(worst, diff.abs().max().item<double>());
  }
  const double rms = std::sqrt(squares / static_cast<double>(entries));
  EXPECT_LT(rms, 2e-6) << "worst entry " << worst;
  EXPECT_LT(worst, 0.003 / 10) << "rms " << rms;
}

TEST(ChunkTraining, TwoRankZeroMatchesOneRankWithTheDoubledBatch) { two_zero_ranks_match_one_rank("zero", false); }

TEST(ChunkTraining, TwoRanksWithCpuEmbeddingsMatchOneRankWithChunkedEmbeddings) {
  two_zero_ranks_match_one_rank("zero-cpu-embedding", true);
}

}  // namespace
}  // namespace starfish::exec

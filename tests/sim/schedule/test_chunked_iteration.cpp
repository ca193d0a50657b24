// Chunk-runtime plans in the simulator: the runtime's decisions become the simulated moves.
#include <gtest/gtest.h>

#include "sim/chunk/iteration_driver.h"
#include "sim/chunk/reference_backend.h"
#include "sim/chunk/runtime_config.h"
#include "sim/cost/capacity.h"
#include "sim/cost/chunk_layout.h"
#include "sim/cost/collectives.h"
#include "sim/cost/estimate.h"
#include "sim/cost/op_time.h"
#include "sim/schedule/chunked_iteration.h"
#include "sim/schedule/layer_costs.h"
#include "sim/schedule/simulate.h"
#include "sim/spec/error.h"
#include "support/models.h"

namespace starfish::schedule {
namespace {

Model gpt(int layers, int hidden) { return testing::gpt(layers, hidden, 16, 1024, 50257, "gpt-chunked"); }

Cluster one_gpu(int64_t gpu_bytes) {
  Cluster c;
  c.name = "one-gpu";
  c.node.gpus = 1;
  c.node.gpu.name = "G";
  c.node.gpu.memory_bytes = gpu_bytes;
  c.node.gpu.hbm_bandwidth_Bps = 900e9;
  c.node.gpu.peak_flops[DType::fp16] = 125e12;
  c.node.gpu.matmul_efficiency.points = {{1e9, 0.5}, {1e12, 0.8}};
  c.node.host.memory_bytes = 256LL << 30;
  c.node.host.memory_bandwidth_Bps = 100e9;
  c.node.host.cpu_adam_params_per_s = 1e9;
  c.node.pcie.generation = 3;
  return c;
}

// `cpu_embedding`: an untied model whose plan keeps the embeddings on the CPU.
Job chunked_job(int64_t gpu_bytes, bool cpu_embedding = false) {
  Training t;
  t.global_batch = 4;
  t.dtype = DType::fp16;
  Plan p;
  p.micro_batch = 4;
  p.chunk_elements = 32LL << 20;
  p.framework = Framework::starfish;  // the chunk runtime is Starfish's
  p.offload.optimizer = Tier::cpu;
  p.recompute = Recompute::full;
  p.cpu_embedding = cpu_embedding;
  Model m = gpt(24, 2048);
  m.tied_embeddings = !cpu_embedding;
  return make_job(m, one_gpu(gpu_bytes), t, p);
}

// The bytes the runtime moves in its steady (third) iteration, on the counting reference backend,
// and the most host memory it holds after a step of that iteration.
struct Moved {
  int64_t h2d = 0, d2h = 0, cpu_peak = 0;
};
// The non-model memory per step is the simulator's own (chunked_non_model_bytes).
Moved reference_moves(const Job& job) {
  struct CpuPeak : FixedNonModel {
    using FixedNonModel::FixedNonModel;
    int64_t peak = 0;
    void after(const Step&, ChunkRuntime& rt) override { peak = std::max(peak, rt.in_use(Tier::cpu)); }
  };
  const ChunkPlan cp = chunk_plan(job, 0);
  ReferenceBackend backend;
  ChunkRuntime rt(cp.layout, cp.options, backend);
  IterationDriver driver(rt, cp.tied_embeddings);
  CpuPeak hooks(chunked_non_model_bytes(job, driver.steps()));
  driver.run_iteration(hooks);
  driver.run_iteration(hooks);
  const Moved before{backend.copied(Tier::cpu, Tier::gpu), backend.copied(Tier::gpu, Tier::cpu)};
  hooks.peak = 0;
  driver.run_iteration(hooks);
  return {backend.copied(Tier::cpu, Tier::gpu) - before.h2d, backend.copied(Tier::gpu, Tier::cpu) - before.d2h, hooks.peak};
}

TEST(ChunkedIteration, TightGpuBudgetMovesMoreAndTakesLonger) {
  const SimReport roomy = simulate(chunked_job(80LL << 30));
  const SimReport tight = simulate(chunked_job(4LL << 30));  // params (2.4 GB) + activations do not fit
  EXPECT_GT(tight.h2d_bytes, roomy.h2d_bytes);
  EXPECT_GT(tight.iteration_s, roomy.iteration_s);
  EXPECT_LE(tight.peak_gpu_bytes, 4.0 * (1LL << 30));
  EXPECT_GT(tight.comm[3].comm_s, 0);  // offload traffic is reported
}

TEST(ChunkedIteration, TheEstimateStepsWhereTheRuntimePlacedTheStates) {
  // A chunked plan's offload tiers say where its chunks may go, not where they are: on an 80 GB
  // GPU the runtime keeps every optimizer chunk there and steps it with GPU Adam, moving nothing.
  // The analytic tier charged the plan's CPU Adam and its copies (1.2 s of host Adam on this
  // 1.2 B-parameter model); it now steps and copies what its placement put off the GPU.
  const Job job = chunked_job(80LL << 30);
  const Estimate e = estimate(job);
  ASSERT_EQ(e.cpu.optimizer_bytes, 0);
  EXPECT_EQ(e.time.offload_s, 0);
  EXPECT_LT(e.time.optimizer_s, 0.5 * cpu_adam_time_s(job.cluster.node.host, e.params_per_gpu));
  const SimReport r = simulate(job);
  EXPECT_EQ(r.h2d_bytes + r.d2h_bytes, 0);
  EXPECT_NEAR(r.iteration_s / e.time.iteration_s, 1.0, 0.10) << r.iteration_s << " vs " << e.time.iteration_s;
  // On 4 GB the optimizer chunks go to the host: host Adam for what sits there, in both tiers.
  const Job tight = chunked_job(4LL << 30);
  const Estimate et = estimate(tight);
  ASSERT_GT(et.cpu.optimizer_bytes, 0);
  EXPECT_GT(et.time.optimizer_s, 0.5 * cpu_adam_time_s(tight.cluster.node.host, et.params_per_gpu));
}

// A ZeRO-sharded chunked plan of the 24-layer GPT over `dp` GPUs of `gpu_bytes` each, 4
// sequences a rank, 32Mi-element chunks, full recomputation; every state on the GPU's tier
// unless `named_tier` says otherwise.
Job zero_chunked_job(int64_t gpu_bytes, int dp, int zero_stage, Tier named_tier = Tier::gpu) {
  Cluster c = one_gpu(gpu_bytes);
  c.node.gpus = dp;
  Training t;
  t.global_batch = 4 * dp;
  t.dtype = DType::fp16;
  Plan p;
  p.dp = dp;
  p.micro_batch = 4;
  p.chunk_elements = 32LL << 20;
  p.framework = Framework::starfish;
  p.zero_stage = zero_stage;
  p.recompute = Recompute::full;
  p.offload = {named_tier, named_tier, named_tier};
  return make_job(gpt(24, 2048), c, t, p);
}

TEST(ChunkedIteration, TheEstimateFetchesOnlyParamsPlacedOffTheGpu) {
  // ZeRO-3 over two ranks with every chunk placed on an 80 GB GPU: naming the host as the
  // params' tier moves nothing, so the gathers cost the same as with the GPU named.
  const Estimate on_gpu = estimate(zero_chunked_job(80LL << 30, 2, 3));
  const Estimate named_host = estimate(zero_chunked_job(80LL << 30, 2, 3, Tier::cpu));
  ASSERT_EQ(named_host.cpu.params_bytes, 0);
  EXPECT_GT(on_gpu.time.dp_comm_s, 0);
  EXPECT_DOUBLE_EQ(named_host.time.dp_comm_s, on_gpu.time.dp_comm_s);
  EXPECT_DOUBLE_EQ(named_host.time.offload_s, 0);
}

// One truth for chunk placement: whatever the GPU's size, the estimate steps on the GPU exactly
// the optimizer-state units the runtime places there after its warm-up (the one rule,
// sim/cost/chunk_placement.h, given the same non-model peak and ZeRO working set: the layers of
// this model straddle ZeRO groups of 4 x 32Mi-element chunks, so some steps gather two groups:
// 6 remote chunks, where one group's 4 chunks were the estimate's room before).
TEST(ChunkedIteration, TheEstimatePlacesTheUnitsTheRuntimePlaces) {
  int partly_placed = 0;
  for (int64_t gib = 4; gib <= 12; ++gib) {
    const Job job = zero_chunked_job(gib << 30, 4, 1);
    const Estimate e = estimate(job);
    const ChunkPlan cp = chunk_plan(job, 0);
    ReferenceBackend backend;
    ChunkRuntime rt(cp.layout, cp.options, backend);
    IterationDriver driver(rt, cp.tied_embeddings);
    FixedNonModel hooks(chunked_non_model_bytes(job, driver.steps()));
    try {
      driver.run_iteration(hooks);
    } catch (const SpecError&) {
      EXPECT_FALSE(e.fits) << gib << " GiB: the runtime refuses what the estimate says fits";
      continue;
    }
    double on_gpu = 0, all = 0;
    const std::vector<StateUnit> units = state_units(cp.layout, rt.optimizer_chunks());
    for (size_t i = 0; i < units.size(); ++i) {
      all += static_cast<double>(units[i].state_bytes);
      if (rt.placement().tier[rt.optimizer_chunks()[i]] == Tier::gpu) on_gpu += static_cast<double>(units[i].state_bytes);
    }
    EXPECT_DOUBLE_EQ(e.chunk_shares.optimizer_off_gpu, 1 - on_gpu / all) << gib << " GiB";
    partly_placed += on_gpu > 0 && on_gpu < all;
  }
  EXPECT_GT(partly_placed, 0) << "no GPU size splits the units: the check above proves little";
}

// The chunk runtime gathers each ZeRO group of chunks at its first use in the forward and again
// in the backward, and reduce-scatters its gradients after the backward, each in series with the
// compute: the estimate charges those three collectives of the whole layout exposed (it charged
// them as a per-layer gather hidden behind the compute: PatrickStar's 12B on 8 V100s, 13.2 s
// estimated against 17.8 s simulated).
TEST(ChunkedIteration, TheEstimateChargesTheRuntimesGathersInSeries) {
  for (int zero_stage : {1, 3}) {
    const Job job = zero_chunked_job(80LL << 30, 4, zero_stage);
    const Estimate e = estimate(job);
    const ChunkFootprint f = plan_chunk_footprint(job.model, job.training, job.plan);
    const double all_bytes = 2.0 * static_cast<double>(f.kept_param_elements) * 4;  // fp16, 4 ranks
    const LinkParams link = link_for_group(job.cluster, 4, 1);
    const double expect = 2 * collective_time_s(CollectiveKind::all_gather, CollectiveAlgorithm::ring, 4, all_bytes, link) +
                          collective_time_s(CollectiveKind::reduce_scatter, CollectiveAlgorithm::ring, 4, all_bytes, link);
    EXPECT_NEAR(e.time.dp_comm_s, expect, 1e-9 * expect) << zero_stage;
    const SimReport r = simulate(job);
    EXPECT_NEAR(r.iteration_s / e.time.iteration_s, 1.0, 0.10) << zero_stage << ": " << r.iteration_s << " vs " << e.time.iteration_s;
  }
}

TEST(ChunkedIteration, SimulatedCopiesAreTheRuntimesDecisions) {
  // Given the simulator's non-model memory per step, the runtime on the counting backend moves
  // exactly the bytes the simulated iteration's copy tasks carry, in both directions.
  const Job job = chunked_job(4LL << 30);
  const SimReport r = simulate(job);
  const Moved m = reference_moves(job);
  EXPECT_GT(m.h2d, 0);
  EXPECT_EQ(r.h2d_bytes, static_cast<double>(m.h2d));
  EXPECT_EQ(r.d2h_bytes, static_cast<double>(m.d2h));
}

TEST(ChunkedIteration, OneCopyEngineStillCountsBothDirections) {
  Job job = chunked_job(4LL << 30);
  job.cluster.node.gpu.copy_engines = 1;  // H2D and D2H share one engine
  const SimReport r = simulate(job);
  const Moved m = reference_moves(job);
  EXPECT_GT(m.d2h, 0);
  EXPECT_EQ(r.d2h_bytes, static_cast<double>(m.d2h));
  EXPECT_EQ(r.h2d_bytes, static_cast<double>(m.h2d));
}

TEST(ChunkedIteration, PipelineParallelChunkPlansAreRejected) {
  Training t;
  t.global_batch = 4;
  t.dtype = DType::fp16;
  Plan p;
  p.pp = 2;
  p.chunk_elements = 32LL << 20;
  p.framework = Framework::starfish;  // the chunk runtime is Starfish's
  Cluster c = one_gpu(80LL << 30);
  c.node.gpus = 2;
  c.node.pcie.gpus_per_root = 1;
  try {
    make_job(gpt(24, 2048), c, t, p);
    FAIL();
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("field 'plan.pipeline_parallel': the chunk runtime does not run pipeline parallelism"),
              std::string::npos)
        << e.what();
  }
}

TEST(ChunkedIteration, PhasesAreTheComputeTasksTheModelSizes) {
  // One GPU computes the layers one after another, so each compute phase is the sum of its
  // tasks (sim/schedule/layer_costs.h): forward L x forward + a third of the head, recompute
  // L x recompute + the head's forward again (the executor recomputes it), backward L x backward
  // + two thirds of the head + the gradients' copy into their chunks. The CPU Adam steps queue on
  // one host stream: their sum. Nothing is idle but the waits for moves (`other`).
  const Job job = chunked_job(4LL << 30);
  Job whole = job;
  whole.plan.micro_batch = static_cast<int>(job.training.global_batch / job.dp());
  const LayerCosts c = layer_costs(whole);
  const SimReport r = simulate(job);
  const double L = job.model.layers;
  const ChunkPlan cp = chunk_plan(job, 0);
  const ChunkLayout& layout = cp.layout;
  // Backward also puts every gradient into its grad chunk as the executor's chunk store does:
  // a copy (read + write) per tensor, and an add (read two, write one) for the tied embedding's
  // second gradient, at the GPU's memory bandwidth.
  ASSERT_TRUE(cp.tied_embeddings);
  double grad_bytes = 0;
  for (const ParamTensor& t : layout.tensors())
    grad_bytes += (t.role == ParamRole::word_embedding ? 5 : 2) * static_cast<double>(c.act_bytes) * static_cast<double>(t.elements);
  const double grads_s = grad_bytes / (job.cluster.node.gpu.hbm_bandwidth_Bps * job.cluster.node.gpu.hbm_efficiency);
  EXPECT_NEAR(r.phases.forward_s, L * c.layer.forward_s + c.output_s / 3, 1e-9 * r.iteration_s);
  EXPECT_NEAR(r.phases.recompute_s, L * c.layer.recompute_s + c.output_s / 3, 1e-9 * r.iteration_s);
  EXPECT_NEAR(r.phases.backward_s, L * c.layer.backward_s + 2 * c.output_s / 3 + grads_s, 1e-9 * r.iteration_s);
  EXPECT_GT(r.phases.recompute_s, 0);
  double stepped = 0;  // every param chunk holding tensors, whole (the step runs over its capacity)
  for (int c = 0; c < layout.param_chunks(); ++c)
    if (!layout.tensors_of(c).empty()) stepped += static_cast<double>(layout.chunk(c).elements);
  EXPECT_NEAR(r.phases.optimizer_s, stepped / job.cluster.node.host.cpu_adam_params_per_s, 1e-9 * r.iteration_s)
      << "every param chunk stepped once by CPU Adam, one after another";
  EXPECT_GT(r.phases.moves_s, 0) << "the tight budget moves chunks";
  EXPECT_EQ(r.phases.collectives_s, 0) << "one GPU";
  EXPECT_GE(r.phases.other_s, 0);
  const double compute = r.phases.forward_s + r.phases.recompute_s + r.phases.backward_s;
  EXPECT_LE(compute + r.phases.optimizer_s + r.phases.other_s, r.iteration_s * (1 + 1e-12))
      << "compute and the optimizer never overlap here; the rest is moves or idle";
}

TEST(ChunkedIteration, NoRecomputeNoRecomputePhase) {
  Job job = chunked_job(80LL << 30);
  job.plan.recompute = Recompute::none;
  const SimReport r = simulate(job);
  EXPECT_EQ(r.phases.recompute_s, 0);
  EXPECT_GT(r.phases.backward_s, r.phases.forward_s);
}

// PatrickStar's CPU embedding (sim/cost/cpu_embedding.h), on an untied GPT (the head has its
// own matrix): the word and position embeddings leave the chunks, their fp32 states take 16 bytes
// per parameter of the rank's host share, and the iteration pays, on one GPU and its host, the
// lookup and the dense backward at the host's memory bandwidth, the rows crossing PCIe both ways
// in fp32, and the replica's CPU Adam.
TEST(ChunkedIteration, CpuEmbeddingKeepsTheVocabularyOffTheChunksAndPaysItsCosts) {
  const Job job = chunked_job(4LL << 30, true);
  const Model& m = job.model;
  const double E = 50257.0 * 2048 + 1024.0 * 2048;  // word + learned position embeddings
  const ChunkPlan cp = chunk_plan(job, 0);
  int64_t chunked = 0;
  for (const ParamTensor& x : cp.layout.tensors()) {
    EXPECT_NE(x.role, ParamRole::word_embedding);
    EXPECT_NE(x.role, ParamRole::position_embedding);
    chunked += x.elements;
  }
  EXPECT_EQ(static_cast<double>(chunked), static_cast<double>(count_parameters(m).total) - E);
  EXPECT_EQ(cp.options.budget.cpu_bytes, usable_host_bytes(job.cluster.node) - static_cast<int64_t>(16 * E));

  Job in_chunks = job;
  in_chunks.plan.cpu_embedding = false;
  in_chunks.model.tied_embeddings = false;
  const SimReport with = simulate(job), without = simulate(in_chunks);
  // Every copy the runtime decides, plus the lookup's output in and its gradient out:
  // 4 sequences x 1024 tokens x 2048 x 4 bytes each way.
  const Moved moved = reference_moves(job);
  const double rows_bytes = 4.0 * 1024 * 2048 * 4;
  EXPECT_EQ(with.h2d_bytes, static_cast<double>(moved.h2d) + rows_bytes);
  EXPECT_EQ(with.d2h_bytes, static_cast<double>(moved.d2h) + rows_bytes);
  // The host's work, at 100 GB/s: the lookup reads and writes the rows; the dense backward writes
  // the zeroed table and reads the row gradients and reads and writes the table's rows.
  const double host_Bps = 100e9;
  const double lookup_s = 2 * rows_bytes / host_Bps, backward_s = (4 * E + 3 * rows_bytes) / host_Bps;
  // One rank: no all-reduce, only the gradient's division by the world (a read and a write).
  const double divide_s = 2 * 4 * E / host_Bps;
  // The embedding's own forward and gradient copy leave the GPU's work (forward: none; backward:
  // the two tensors' gradients copied into their chunk, 2 bytes each way).
  const GpuSpec& g = job.cluster.node.gpu;
  const double grads_into_chunk_s = 2 * 2 * E / (g.hbm_bandwidth_Bps * g.hbm_efficiency);
  const double tol = 1e-9 * with.iteration_s;
  EXPECT_NEAR(with.phases.forward_s, without.phases.forward_s + lookup_s, tol);
  EXPECT_NEAR(with.phases.backward_s, without.phases.backward_s - grads_into_chunk_s + backward_s, tol);
  EXPECT_NEAR(with.phases.collectives_s, divide_s, tol);
  // The optimizer: the chunks' CPU Adam (the layouts differ by the embedding's chunk), and the
  // replica's E parameters.
  double stepped = 0;
  for (int c = 0; c < cp.layout.param_chunks(); ++c)
    if (!cp.layout.tensors_of(c).empty()) stepped += static_cast<double>(cp.layout.chunk(c).elements);
  EXPECT_NEAR(with.phases.optimizer_s, (stepped + E) / job.cluster.node.host.cpu_adam_params_per_s, tol);
  // The host holds the runtime's busiest CPU use of the steady iteration and the tables' 16 B/param.
  EXPECT_GT(moved.cpu_peak, 0);
  EXPECT_EQ(with.cpu_bytes_per_node, static_cast<double>(moved.cpu_peak) + 16 * E);
}

}  // namespace
}  // namespace starfish::schedule

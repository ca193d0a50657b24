#include "exec/run.h"

#include <fcntl.h>
#include <signal.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <sstream>
#include <thread>

#include <fmt/core.h>
#include <torch/torch.h>

#include <unistd.h>

#include "exec/blas_kernels.h"
#include "exec/launcher.h"
#include "exec/checkpoint.h"
#include "exec/chunk_store.h"
#include "exec/data.h"
#include "exec/dist.h"
#include "exec/flat_store.h"
#include "exec/fp16_support.h"
#include "exec/gpt_model.h"
#include "exec/graph_residency.h"
#include "exec/machine_load.h"
#include "exec/torch_backend.h"
#include "exec/trainer.h"
#include "exec/trainer_checkpoint.h"
#include "sim/chunk/move_log.h"
#include "sim/chunk/runtime_config.h"
#include "sim/cost/flops.h"
#include "sim/report/report.h"
#include "sim/spec/error.h"
#include "sim/spec/input_file.h"
#include "sim/spec/job.h"
#include "sim/spec/json_writer.h"
#include "sim/spec/spec_io.h"
#include "sim/spec/units.h"

namespace fs = std::filesystem;

namespace starfish::exec {
namespace {

void check_plan_supported(const Plan& p, int world_size) {
  // Whatever framework the plan names, starfish-run trains it with its own executor.
  if (const ExecutorProblem e = executor_problem(p); e.why) p.provenance.fail(e.field, e.why);
  if (p.recompute_layers > 0) p.provenance.fail("plan.recompute_layers", "starfish-run recomputes every layer or none");
  if (p.fp8 != Fp8::none) p.provenance.fail("plan.fp8", "starfish-run computes in fp32, bf16 or fp16 (no fp8 GEMMs)");
  if (p.fp4 != Fp4::none) p.provenance.fail("plan.fp4", "starfish-run computes in fp32, bf16 or fp16 (no fp4 GEMMs)");
  if (p.dp != 0 && p.dp != world_size)
    p.provenance.fail("plan.data_parallel", "the plan asks for " + std::to_string(p.dp) + " ranks, this run has " +
                                                std::to_string(world_size) + " (WORLD_SIZE / --nproc)");
}

// The layer variants the executor's GPT layer (exec/gpt_model.cpp) does not build, refused by
// field so a run never trains another model than the one planned.
void refuse_layer_variants(const Model& m, const std::string& model_path) {
  for (const LayerSwitch& v : kLayerSwitches)
    if (m.*v.member) throw SpecError(model_path + ": field '" + v.field + "': starfish-run's GPT layer does not build it");
  if (m.sliding_window.tokens > 0)
    throw SpecError(model_path + ": field 'sliding_window': starfish-run's attention has no sliding window");
}

// Fails unless a new file can be made in `dir` (a probe file, removed at once): the permission
// bits do not tell, for root or on /proc or a read-only mount.
void probe_folder(const std::string& flag, const std::string& path, const fs::path& dir) {
  const std::string probe = (dir / (".starfish-run-probe-" + std::to_string(::getpid()))).string();
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0)
    throw SpecError("starfish-run: " + flag + " " + path + ": cannot write in folder " + dir.string() + ": " +
                    std::strerror(errno));
  ::close(fd);
  ::unlink(probe.c_str());
}

void check_output_file(const std::string& flag, const std::string& path) {
  if (path.empty()) return;
  const fs::path dir = fs::path(path).parent_path().empty() ? fs::path(".") : fs::path(path).parent_path();
  std::error_code ec;
  if (fs::is_directory(path, ec)) throw SpecError("starfish-run: " + flag + " " + path + ": is a folder, not a file");
  if (!fs::is_directory(dir, ec))
    throw SpecError("starfish-run: " + flag + " " + path + ": folder " + dir.string() + " does not exist");
  probe_folder(flag, path, dir);
  if (fs::exists(path, ec) && ::access(path.c_str(), W_OK) != 0)
    throw SpecError("starfish-run: " + flag + " " + path + ": " + std::strerror(errno));
}

void check_output_folder(const std::string& flag, const std::string& dir, bool must_exist) {
  if (dir.empty()) return;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    if (must_exist || fs::exists(dir, ec))
      throw SpecError("starfish-run: " + flag + " " + dir + ": " + (must_exist ? "no such folder" : "not a folder"));
    if (!fs::create_directories(dir, ec) && !fs::is_directory(dir))
      throw SpecError("starfish-run: " + flag + " " + dir + ": cannot create the folder: " + ec.message());
  }
  probe_folder(flag, dir, dir);
}

}  // namespace

void check_run_outputs(const RunOptions& o) {
  check_output_file("--report", o.report_path);
  check_output_file("--params-out", o.params_path);
  check_output_file("--move-log", o.move_log_path);  // rank files (<path>.rank<r>) go in the same folder
  check_output_folder("--checkpoint-dir", o.checkpoint_dir, o.resume);
  check_output_folder("--scratch", o.scratch_dir, true);
}

namespace {

int64_t host_memory_bytes() { return int64_t{::sysconf(_SC_PHYS_PAGES)} * ::sysconf(_SC_PAGE_SIZE); }

// The Job's hardware when neither the plan nor --hw names a profile: this machine as starfish-run
// sees it, one node with one "GPU" per rank. Only what the chunk runtime's budgets read is
// known (GPU memory = the GPU budget, host memory of which half is left to the rest of the
// machine, NVMe = the NVMe budget); its speed is not (peak 0): the executor measures, it does
// not predict.
Cluster local_cluster(const RunOptions& o, int world_size, DType dtype) {
  Cluster c;
  c.name = "local";
  c.description = "this machine as starfish-run sees it (no hardware profile)";
  c.provenance.file = "<starfish-run: no hardware profile>";
  c.node.name = "local";
  c.node.gpus = world_size;
  c.node.gpu.name = "starfish-run device";
  c.node.gpu.memory_bytes = o.gpu_budget_bytes.value_or(0);
  c.node.gpu.peak_flops[dtype] = 0;
  const int64_t host = host_memory_bytes();
  c.node.host.memory_bytes = host;
  c.node.host.reserved_bytes = host - host / 2;
  if (o.nvme_budget_bytes.value_or(0) > 0) c.node.nvme = NvmeSpec{*o.nvme_budget_bytes * world_size, 0, 0, 0};
  return c;
}

// What the run has done up to a point: the Backend's copies by tier pair, its collective traffic
// and the moves the runtime decided. Differences of two give one iteration's.
struct Counters {
  std::array<std::array<int64_t, 3>, 3> copied{};
  int64_t collective_bytes = 0;
  int64_t moves = 0;

  static Counters of(const TorchBackend& b, const ChunkRuntime& rt) {
    Counters c;
    for (Tier f : {Tier::gpu, Tier::cpu, Tier::nvme})
      for (Tier t : {Tier::gpu, Tier::cpu, Tier::nvme}) c.at(f, t) = b.copied_bytes(f, t);
    c.collective_bytes = b.collective_bytes();
    c.moves = static_cast<int64_t>(rt.moves().size());
    return c;
  }
  int64_t& at(Tier f, Tier t) { return copied[static_cast<int>(f)][static_cast<int>(t)]; }
  int64_t at(Tier f, Tier t) const { return copied[static_cast<int>(f)][static_cast<int>(t)]; }
  Counters minus(const Counters& o) const {
    Counters d;
    for (int f = 0; f < 3; ++f)
      for (int t = 0; t < 3; ++t) d.copied[f][t] = copied[f][t] - o.copied[f][t];
    d.collective_bytes = collective_bytes - o.collective_bytes;
    d.moves = moves - o.moves;
    return d;
  }
  // The simulator's four byte counts (schedule/simulate.cpp): an NVMe <-> GPU copy crosses the
  // host, so it counts as NVMe traffic and as host <-> GPU traffic.
  int64_t h2d() const { return at(Tier::cpu, Tier::gpu) + at(Tier::nvme, Tier::gpu); }
  int64_t d2h() const { return at(Tier::gpu, Tier::cpu) + at(Tier::gpu, Tier::nvme); }
  int64_t nvme_read() const { return at(Tier::nvme, Tier::cpu) + at(Tier::nvme, Tier::gpu); }
  int64_t nvme_write() const { return at(Tier::cpu, Tier::nvme) + at(Tier::gpu, Tier::nvme); }
};

// ---- run_rank's phases: resolve, make the store, resume, train (with checkpoints), report ----

// What the run is: the rank, the plan, its model and training, and the Job the simulator makes
// of them (make_job checks the plan against model and hardware).
struct Resolved {
  RankEnv env;
  PlanFile pf;
  Model model;
  Training training;
  std::optional<std::string> hardware_path;
  std::string hardware_name;  // the report's "hardware": the profile's name, or the plan file
  Job job;
};

Resolved resolve(const RunOptions& o) {
  Resolved r;
  r.env = RankEnv::from_environment();
  r.pf = load_plan_file(o.plan_path);
  auto relative_to_plan = [&](const std::string& ref) { return path_named_in(o.plan_path, ref); };
  std::string model_path;
  if (o.model_path) model_path = *o.model_path;
  else if (r.pf.model_path) model_path = relative_to_plan(*r.pf.model_path);
  else throw SpecError(o.plan_path + ": the plan names no model (add 'model: path.yaml' or pass --model)");
  r.model = load_model(model_path);
  check_plan_supported(r.pf.plan, r.env.world_size);
  r.training = r.pf.training;
  if (o.iterations) r.training.iterations = *o.iterations;
  if (r.training.dtype != DType::fp32 && r.training.dtype != DType::bf16 && r.training.dtype != DType::fp16)
    throw SpecError(o.plan_path + ": field 'training.dtype': starfish-run trains in fp32, bf16 or fp16, not " + to_string(r.training.dtype));
  if (r.model.vocab < 256) throw SpecError(model_path + ": field 'vocab': byte-level data needs a vocabulary of at least 256");
  if (r.model.is_moe()) throw SpecError(model_path + ": field 'moe': starfish-run does not run mixture-of-experts layers");
  if (r.model.is_mla()) throw SpecError(model_path + ": field 'mla': starfish-run does not run multi-head latent attention");
  if (r.model.attention_head_dim > 0 && r.model.attention_head_dim * r.model.heads != r.model.hidden)
    throw SpecError(model_path + ": field 'head_dim': starfish-run runs heads of hidden / heads only");
  refuse_layer_variants(r.model, model_path);

  // The chunk runtime's layout, ZeRO mode, DP group and budgets all come from the Job.
  r.hardware_path = o.hardware_path;
  if (!r.hardware_path && r.pf.hardware_path) r.hardware_path = relative_to_plan(*r.pf.hardware_path);
  Cluster cluster = r.hardware_path ? load_cluster(*r.hardware_path) : local_cluster(o, r.env.world_size, r.training.dtype);
  if (r.hardware_path && r.pf.nodes) cluster.nodes = *r.pf.nodes;  // the plan's node count, as `starfish simulate` reads it
  if (r.hardware_path && cluster.total_gpus() != r.env.world_size)
    throw SpecError(*r.hardware_path + ": the hardware has " + std::to_string(cluster.total_gpus()) + " GPUs but this run has " +
                    std::to_string(r.env.world_size) + " rank(s) (WORLD_SIZE / --nproc): run one rank per GPU");
  r.hardware_name = r.hardware_path ? cluster.name : o.plan_path;
  r.job = make_job(r.model, std::move(cluster), r.training, r.pf.plan);
  return r;
}

// Where the parameters live: the chunk runtime's chunks over a Torch backend (chunked plans), or
// one flat store.
struct RankStore {
  std::unique_ptr<TorchBackend> backend;  // chunked plans
  ChunkStore* chunks = nullptr;           // chunked plans: the store below
  std::unique_ptr<TrainableStore> store;
  int64_t non_model_bytes = 0;            // per moment, as the runtime was told
  MemoryBudget budget;
};

RankStore make_chunk_store(const RunOptions& o, const Resolved& r, const Gpt& gpt, Comm& comm) {
  RankStore s;
  const Model& model = r.model;
  // One micro-batch per rank per iteration: make_job refused a chunked plan with more (the
  // chunk runtime has no gradient accumulation), as it does for `starfish check` and `simulate`.
  const BatchSplit split = BatchSplit::make(r.training, r.pf.plan, r.env.rank, r.env.world_size);
  // Activations live in ordinary host memory here; the runtime is told an estimate per moment
  // (a layer's activations: ~16 hidden-sized fp32 tensors per token), not a measurement.
  // Without recompute every layer's activations are alive at the start of backward.
  const int64_t layer_activations = split.micro_batch * model.seq_len * int64_t{model.hidden} * 4 * 16;
  s.non_model_bytes = o.non_model_bytes >= 0 ? o.non_model_bytes
                                             : layer_activations * (r.pf.plan.recompute == Recompute::none ? model.layers : 1);
  // Layout, ZeRO mode, DP group and the hardware's budgets: the simulator's own chunk_plan().
  // A budget flag replaces the hardware's share of that tier (chunk_plan(job, rank, budget)).
  s.budget = chunk_plan(r.job, r.env.rank).options.budget;
  if (o.gpu_budget_bytes) s.budget.gpu_bytes = *o.gpu_budget_bytes;
  if (o.cpu_budget_bytes) s.budget.cpu_bytes = *o.cpu_budget_bytes;
  if (o.nvme_budget_bytes) s.budget.nvme_bytes = *o.nvme_budget_bytes;
  if (s.budget.gpu_bytes <= 0)
    throw SpecError("starfish-run: a chunked plan (plan.chunk_size) needs --gpu-budget SIZE, or a hardware profile "
                    "(the plan's 'hardware:' or --hw) whose GPU memory gives it");
  ChunkPlan cp = chunk_plan(r.job, r.env.rank, s.budget);
  cp.options.eviction = o.lru ? EvictionKind::lru : EvictionKind::farthest_next_use;
  cp.options.prefetch = !o.no_prefetch;
  // recompute none: refused before training when the runtime would move a chunk a layer's
  // graph holds (the very decisions it will make, predicted on the reference backend).
  if (r.pf.plan.recompute == Recompute::none)
    if (const std::optional<std::string> broken = predict_graph_residency(cp.layout, cp.options, cp.tied_embeddings, s.non_model_bytes))
      throw SpecError(o.plan_path + ": field 'plan.recompute': " + *broken);
  // The pool's capacity is the budget: the runtime keeps within it, the pool enforces it.
  s.backend = std::make_unique<TorchBackend>(TierCapacity{s.budget.gpu_bytes, 0, 0}, o.scratch_dir, comm);
  auto cs = std::make_unique<ChunkStore>(gpt, std::move(cp), s.non_model_bytes, *s.backend, r.training.seed);
  s.chunks = cs.get();
  s.store = std::move(cs);
  return s;
}

RankStore make_store(const RunOptions& o, const Resolved& r, const Gpt& gpt, Comm& comm) {
  const DType d = r.training.dtype;
  const at::ScalarType dtype = torch_scalar_type(d);
  const bool chunked = r.pf.plan.chunked();
  RankStore s;
  if (chunked) s = make_chunk_store(o, r, gpt, comm);
  else s.store = std::make_unique<FlatStore>(gpt, dtype, r.training.seed);
  // fp16 computes where the store does: on CUDA for a chunked plan with a CUDA device, else on
  // the CPU, whose LibTorch may lack fp16 kernels (1.13 has no fp16 matmul there). Probed, not
  // assumed from a version.
  if (d == DType::fp16 && s.store->device().is_cpu() && !cpu_trains_fp16())
    throw SpecError(o.plan_path + ": field 'training.dtype': fp16 computes on the CPU here (" +
                    (chunked ? "no CUDA device" : "a plan without chunks uses the flat store") +
                    ") and this LibTorch has no fp16 kernels on the CPU (a tiny GPT's forward and backward in Half failed); "
                    "use bf16 or fp32, or a chunked plan (plan.chunk_size) on CUDA");
  return s;
}

using Say = std::function<void(const std::string&)>;

void announce(const RunOptions& o, const Resolved& r, const Gpt& gpt, const ByteCorpus& data, const Comm& comm, const RankStore& s,
              const Say& say) {
  std::ostringstream line;
  line << "starfish-run: model " << r.model.name << " (" << gpt.parameter_count() << " parameters), " << r.env.world_size << " rank(s) ("
       << comm.backend_name() << "), " << at::get_num_threads() << " threads/rank, " << to_string(r.training.dtype) << ", recompute "
       << to_string(r.pf.plan.recompute) << ", "
       << "global batch " << r.training.global_batch << " x " << r.model.seq_len << " tokens, data "
       << (o.data_path ? *o.data_path : std::string("generated corpus")) << " (" << data.size() << " bytes)"
       << (r.hardware_path ? ", hardware " + r.job.cluster.name + " (" + *r.hardware_path + ")" : std::string());
  if (const std::string blas = blas_core_name(); !blas.empty()) line << ", OpenBLAS " << blas << " kernels";
  say(line.str());
  if (!s.chunks) {
    say("starfish-run: gpu tier: CPU pool (no CUDA); plan without chunks: parameters in one flat store");
    return;
  }
  const ChunkLayout& l = s.chunks->layout();
  std::ostringstream c;
  c << "starfish-run: " << s.backend->gpu_tier_description() << ", budget gpu " << units::human_bytes(s.budget.gpu_bytes) << ", cpu "
    << units::human_bytes(s.budget.cpu_bytes) << ", nvme " << units::human_bytes(s.budget.nvme_bytes) << "; " << l.param_chunks()
    << " param chunks of " << r.pf.plan.chunk_elements << " elements (" << units::human_bytes(l.total_bytes())
    << " of chunks in all), ZeRO " << to_string(s.chunks->runtime().zero().mode()) << ", non-model "
    << units::human_bytes(s.non_model_bytes) << "/moment" << (o.non_model_bytes >= 0 ? "" : " (estimate)");
  say(c.str());
}

void resume(const RunOptions& o, StoreTrainer& trainer, Comm& comm, const CheckpointIdentity& identity, const Say& say) {
  const CheckpointInfo info = resume_trainer(o.checkpoint_dir, trainer, comm, identity);
  std::string scale;
  if (info.loss_scale)
    scale = fmt::format(", loss scale {:g} after {} good steps", info.loss_scale->scale, info.loss_scale->good_steps);
  say("starfish-run: resumed from " + o.checkpoint_dir + " at iteration " + std::to_string(info.steps) + scale);
}

// Saves checkpoints to --checkpoint-dir; counts them for the --kill-in-save test hook.
class Checkpointer {
 public:
  Checkpointer(const RunOptions& o, StoreTrainer& trainer, Comm& comm, CheckpointIdentity identity, Say say)
      : o_(o), trainer_(trainer), comm_(comm), identity_(std::move(identity)), say_(std::move(say)) {}
  void save() {
    ++saves_;
    CheckpointHooks hooks;
    if (o_.kill_in_save == saves_)
      hooks.after_write = [](int64_t written, int64_t total) {
        if (written * 2 >= total) ::raise(SIGKILL);
      };
    save_trainer(o_.checkpoint_dir, trainer_, comm_, hooks, identity_);
    say_("starfish-run: checkpoint at iteration " + std::to_string(trainer_.steps_done()) + " in " + o_.checkpoint_dir);
  }

 private:
  const RunOptions& o_;
  StoreTrainer& trainer_;
  Comm& comm_;
  CheckpointIdentity identity_;
  Say say_;
  int saves_ = 0;
};

// What training measured: one record per iteration (with what it moved, for chunked plans) and
// the machine's load around the loop.
struct TrainLog {
  std::vector<report::IterationRecord> iterations;
  report::MachineLoad load;
};

report::IterationRecord record_of(const StepResult& r, int64_t iteration, const CpuSample& before, const CpuSample& after,
                                  const StoreTrainer& trainer, const Counters* moved) {
  report::IterationRecord it;
  it.iteration = iteration;
  it.loss = r.loss;
  it.grad_norm = r.grad_norm;
  it.time_s = r.seconds;
  it.cpu_s = after.process_cpu_s - before.process_cpu_s;
  it.others_cpu_s = after.machine_busy_s - before.machine_busy_s;  // less the ranks' CPU time, after the loop
  it.phases = r.phases;
  it.cpu_phases = r.cpu_phases;
  if (trainer.loss_scaling()) {
    it.loss_scale = r.loss_scale;
    it.skipped = r.skipped;
  }
  if (moved) {
    it.moves = moved->moves;
    it.h2d = moved->h2d();
    it.d2h = moved->d2h();
    it.nvme_read = moved->nvme_read();
    it.nvme_write = moved->nvme_write();
    it.collectives = moved->collective_bytes;
  }
  return it;
}

std::string progress_line(const StepResult& r, const StoreTrainer& trainer, int64_t iterations) {
  std::string text = fmt::format("iter {:4}/{}  loss {:.4f}  grad_norm {:.3f}  {:.3f} s", trainer.steps_done(), iterations,
                                 r.loss, r.grad_norm, r.seconds);
  if (trainer.loss_scaling())
    text += fmt::format("  loss_scale {:g}{}", r.loss_scale, r.skipped ? "  skipped (inf/NaN gradients): scale halved" : "");
  return text;
}

// Other processes' CPU per iteration: the machine's busy time less every rank's CPU time (one
// sum over the ranks, after the loop, so the iterations themselves carry no extra collective).
void subtract_ranks_cpu(TrainLog& log, Comm& comm) {
  if (log.iterations.empty()) return;
  at::Tensor cpu = at::empty({static_cast<int64_t>(log.iterations.size())}, at::kDouble);
  for (size_t i = 0; i < log.iterations.size(); ++i) cpu[static_cast<int64_t>(i)] = log.iterations[i].cpu_s;
  comm.all_reduce_sum(cpu);
  for (size_t i = 0; i < log.iterations.size(); ++i)
    log.iterations[i].others_cpu_s = std::max(0.0, log.iterations[i].others_cpu_s - cpu[static_cast<int64_t>(i)].item<double>());
}

TrainLog train(const RunOptions& o, int64_t total, StoreTrainer& trainer, Comm& comm, const RankStore& s, Checkpointer& checkpoints,
               const Say& say) {
  TrainLog log;
  log.load.cpus = online_cpus();
  log.load.load_average_start = load_average_1min();
  // Checkpoint saves read chunks through read_host, not the runtime's moves: they do not count.
  Counters before = s.chunks ? Counters::of(*s.backend, s.chunks->runtime()) : Counters{};
  while (trainer.steps_done() < total) {
    const CpuSample cpu0 = sample_cpu();
    const StepResult r = trainer.step();
    const CpuSample cpu1 = sample_cpu();
    std::optional<Counters> moved;
    if (s.chunks) {
      const Counters now = Counters::of(*s.backend, s.chunks->runtime());
      moved = now.minus(before);
      before = now;
    }
    log.iterations.push_back(record_of(r, trainer.steps_done(), cpu0, cpu1, trainer, moved ? &*moved : nullptr));
    say(progress_line(r, trainer, total));
    if (o.checkpoint_every > 0 && trainer.steps_done() % o.checkpoint_every == 0 && trainer.steps_done() < total) checkpoints.save();
  }
  log.load.load_average_end = load_average_1min();
  subtract_ranks_cpu(log, comm);
  return log;
}

void write_outputs(const RunOptions& o, const Resolved& r, StoreTrainer& trainer, Comm& comm, const RankStore& s, const Say& say) {
  if (!o.params_path.empty()) {
    const NamedTensors values = trainer.store().gather_values(comm);
    if (r.env.rank == 0) write_checkpoint_file(o.params_path, CheckpointInfo{trainer.steps_done()}, values);
  }
  if (!s.chunks) return;
  if (!o.move_log_path.empty()) {
    const std::string path = r.env.world_size > 1 ? o.move_log_path + ".rank" + std::to_string(r.env.rank) : o.move_log_path;
    std::ofstream out(path);
    write_move_log(out, s.chunks->runtime().moves());
    if (!out) throw SpecError(path + ": cannot write the move log");
    say("starfish-run: move log (" + std::to_string(s.chunks->runtime().moves().size()) + " moves) in " + path);
  }
  const TorchBackend& b = *s.backend;
  using units::human_bytes;
  std::ostringstream m;
  m << "starfish-run: peak gpu " << human_bytes(b.usage(Tier::gpu).peak_bytes) << ", cpu " << human_bytes(b.usage(Tier::cpu).peak_bytes)
    << ", nvme " << human_bytes(b.usage(Tier::nvme).peak_bytes) << "; moved gpu->cpu " << human_bytes(b.copied_bytes(Tier::gpu, Tier::cpu))
    << ", cpu->gpu " << human_bytes(b.copied_bytes(Tier::cpu, Tier::gpu)) << ", cpu->nvme "
    << human_bytes(b.copied_bytes(Tier::cpu, Tier::nvme)) << ", nvme->cpu " << human_bytes(b.copied_bytes(Tier::nvme, Tier::cpu))
    << ", collectives " << human_bytes(b.collective_bytes());
  say(m.str());
}

// The steady iterations' medians (time, CPU time, each phase) and mean bytes: the figures the
// simulator predicts for its steady iteration.
void summarise_steady(report::Report& rep, bool chunked) {
  const size_t n = rep.iterations.size();
  const size_t steady = report::first_steady(n, chunked);  // the simulator's rule
  const int64_t first_iteration = n ? rep.iterations.front().iteration : 0;
  rep.steady_from_iteration = first_iteration + static_cast<int64_t>(steady);
  rep.steady_iterations = static_cast<int64_t>(n - steady);
  auto median_of = [&](const std::function<double(const report::IterationRecord&)>& f) {
    std::vector<double> v;
    for (size_t i = steady; i < n; ++i) v.push_back(f(rep.iterations[i]));
    return report::median(std::move(v));
  };
  rep.iteration_s = median_of([](const auto& it) { return it.time_s; });
  rep.cpu_s = median_of([](const auto& it) { return it.cpu_s; });
  report::PhaseSeconds phases;
  for (report::PhaseId p : report::kPhases) report::seconds(phases, p) = median_of([p](const auto& it) { return report::seconds(it.phases, p); });
  rep.phases = phases;
  report::PhaseSeconds cpu_phases;
  for (report::PhaseId p : report::kPhases)
    report::seconds(cpu_phases, p) = median_of([p](const auto& it) { return report::seconds(it.cpu_phases, p); });
  rep.cpu_phases = cpu_phases;
  if (rep.load) rep.load->others_cpu_s = median_of([](const auto& it) { return it.others_cpu_s; });
  if (!chunked) return;
  report::ByteFigures bytes;
  auto mean_of = [&](const std::optional<int64_t> report::IterationRecord::*field) {
    double sum = 0;
    for (size_t i = steady; i < n; ++i) sum += static_cast<double>((rep.iterations[i].*field).value_or(0));
    return n > steady ? sum / static_cast<double>(n - steady) : 0.0;
  };
  bytes.h2d = mean_of(&report::IterationRecord::h2d);
  bytes.d2h = mean_of(&report::IterationRecord::d2h);
  bytes.nvme_read = mean_of(&report::IterationRecord::nvme_read);
  bytes.nvme_write = mean_of(&report::IterationRecord::nvme_write);
  bytes.collectives = mean_of(&report::IterationRecord::collectives);
  rep.bytes = bytes;
}

void write_report(const RunOptions& o, const Resolved& r, StoreTrainer& trainer, const Gpt& gpt, const Comm& comm, const RankStore& s,
                  TrainLog log) {
  const bool chunked = s.chunks != nullptr;
  report::Report rep;
  rep.kind = report::kRunKind;
  rep.model = r.model.name;
  rep.hardware = r.hardware_name;
  rep.plan = o.plan_path;
  rep.gpus = r.env.world_size;
  rep.threads_per_rank = at::get_num_threads();
  rep.load = log.load;
  rep.iterations = std::move(log.iterations);
  summarise_steady(rep, chunked);
  rep.tokens_per_s = tokens_per_s(r.model, r.training.global_batch, rep.iteration_s);
  report::Extras extras;
  if (chunked) {
    const TorchBackend& b = *s.backend;
    // Per tier, this rank's peak over the whole run. The simulator's GPU peak is chunks plus
    // the non-model bytes of the moment; the pool here holds the chunks only (activations
    // live in host memory on the CPU device, and outside the pool's count on CUDA), so the
    // comparable figure adds the non-model bytes the runtime reserved at every moment.
    const int64_t pool_peak = b.usage(Tier::gpu).peak_bytes;
    rep.memory.peak_gpu_bytes = static_cast<double>(pool_peak + s.non_model_bytes);
    rep.memory.cpu_bytes_per_gpu = static_cast<double>(b.usage(Tier::cpu).peak_bytes);
    rep.memory.nvme_bytes_per_gpu = static_cast<double>(b.usage(Tier::nvme).peak_bytes);
    // Like the simulator's: every move the runtime decided, over all iterations it ran.
    rep.moves = static_cast<int64_t>(s.chunks->runtime().moves().size());
    rep.move_log_iterations = static_cast<int64_t>(rep.iterations.size());
    extras.memory = [&, pool_peak](JsonWriter& w) {
      w.field("gpu_pool_peak_bytes", pool_peak).field("non_model_bytes_per_moment", s.non_model_bytes);
      w.field("gpu_budget_bytes", s.budget.gpu_bytes).field("cpu_budget_bytes", s.budget.cpu_bytes);
      w.field("nvme_budget_bytes", s.budget.nvme_bytes);
    };
  } else {
    int64_t state_bytes = 0;
    for (const auto& [n, t] : trainer.store().save_state()) state_bytes += t.numel() * static_cast<int64_t>(t.element_size());
    // Parameters and optimizer states; activations are not measured.
    extras.memory = [state_bytes](JsonWriter& w) { w.field("model_state_bytes", state_bytes); };
  }
  extras.more = [&](JsonWriter& w) {
    w.field("parameters", gpt.parameter_count());
    w.field("collectives", comm.backend_name());
    w.field("gpu_tier", chunked ? s.backend->gpu_tier_description().substr(10) : std::string("CPU pool (no CUDA)"));
    w.field("store", chunked ? "chunks" : "flat").field("dtype", to_string(r.training.dtype));
    w.field("recompute", to_string(r.pf.plan.recompute));
    w.field("blas", blas_core_name());  // OpenBLAS's kernel set ("" for another BLAS): exec/blas_kernels.h
    w.field("cpus", allowed_cpus());    // where this rank could run ("0" when --bind-cores gave it one core)
    if (!chunked) return;
    w.key("copied_bytes").begin_object();  // totals over the run, by tier pair
    const Counters total = Counters::of(*s.backend, s.chunks->runtime());
    for (Tier a : {Tier::gpu, Tier::cpu, Tier::nvme})
      for (Tier b : {Tier::gpu, Tier::cpu, Tier::nvme})
        if (a != b) w.field(std::string(to_string(a)) + "_to_" + to_string(b), total.at(a, b));
    w.field("collectives", total.collective_bytes);
    w.end_object();
  };
  // Rank 0's report is the run's; each other rank writes its own beside it (<path>.rank<r>, as
  // the move logs do), so that a rank that waits at the collectives can be told from one that
  // makes the others wait.
  const std::string path = r.env.rank == 0 ? o.report_path : o.report_path + ".rank" + std::to_string(r.env.rank);
  std::ofstream out(path);
  out << report::to_json(rep, extras);
  if (!out) throw SpecError(path + ": cannot write the report");
}

}  // namespace

int run_rank(const RunOptions& o) {
  check_run_outputs(o);  // before anything trains: an unwritable output must not cost a run
  const Resolved r = resolve(o);
  const int hw = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  at::set_num_threads(o.threads > 0 ? o.threads : std::max(1, hw / r.env.world_size));
  at::manual_seed(r.training.seed);
  const Say say = [&](const std::string& line) {
    if (r.env.rank == 0 && !o.quiet) std::cout << line << std::endl;
  };

  const ByteCorpus data = o.data_path ? ByteCorpus::from_file(*o.data_path) : ByteCorpus::generated(1 << 20);
  // A CPU embedding's fp32 lookup hands the layers the training's dtype (patrickstar/ops/embedding.py).
  const Gpt gpt(r.model, r.pf.plan.cpu_embedding ? std::optional(torch_scalar_type(r.training.dtype)) : std::nullopt);
  Comm comm(r.env, std::chrono::seconds(o.timeout_s));
  RankStore s = make_store(o, r, gpt, comm);
  StoreTrainer trainer(gpt, data, r.training, r.pf.plan, comm, std::move(s.store));  // fp16: with dynamic loss scaling
  announce(o, r, gpt, data, comm, s, say);
  const CheckpointIdentity identity = checkpoint_identity(r.job, r.env.world_size);
  if (o.resume) resume(o, trainer, comm, identity, say);

  Checkpointer checkpoints(o, trainer, comm, identity, say);
  TrainLog log = train(o, r.training.iterations, trainer, comm, s, checkpoints, say);
  if (!o.checkpoint_dir.empty() && !log.iterations.empty()) checkpoints.save();
  write_outputs(o, r, trainer, comm, s, say);
  if (!o.report_path.empty()) {
    write_report(o, r, trainer, gpt, comm, s, std::move(log));
    say("starfish-run: report in " + o.report_path);  // said by rank 0 only
  }
  return 0;
}

}  // namespace starfish::exec

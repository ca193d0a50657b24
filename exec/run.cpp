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
#include <iostream>
#include <sstream>
#include <thread>

#include <torch/torch.h>

#include <unistd.h>

#include "exec/checkpoint.h"
#include "exec/chunk_store.h"
#include "exec/data.h"
#include "exec/dist.h"
#include "exec/flat_store.h"
#include "exec/fp16_support.h"
#include "exec/gpt_model.h"
#include "exec/graph_residency.h"
#include "exec/torch_backend.h"
#include "exec/trainer.h"
#include "exec/trainer_checkpoint.h"
#include "sim/chunk/move_log.h"
#include "sim/chunk/runtime_config.h"
#include "sim/spec/error.h"
#include "sim/spec/job.h"
#include "sim/spec/json_writer.h"
#include "sim/spec/spec_io.h"
#include "sim/spec/units.h"

namespace fs = std::filesystem;

namespace starfish::exec {
namespace {

using units::parse_bytes;

int64_t to_int(const std::string& flag, const std::string& v, int64_t min) {
  try {
    size_t used = 0;
    const long long x = std::stoll(v, &used);
    if (used == v.size() && x >= min) return x;
  } catch (const std::exception&) {
  }
  throw SpecError("starfish-run: " + flag + " expects an integer >= " + std::to_string(min) + ", got '" + v + "'");
}

// Human-readable sizes for the console (the report carries exact bytes).
std::string format_bytes(int64_t b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = double(b);
  int u = 0;
  while (v >= 1024 && u < 4) v /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", v, units[u]);
  return buf;
}

int64_t bytes_flag(const std::string& flag, const std::string& v) {
  try {
    return parse_bytes(v);
  } catch (const std::exception& e) {
    throw SpecError("starfish-run: " + flag + " expects a size like 64MiB, got '" + v + "': " + e.what());
  }
}

void check_plan_supported(const Plan& p, int world_size) {
  if (p.tp != 1) throw SpecError(p.provenance.file + ": field 'plan.tensor_parallel': starfish-run runs data parallelism only (tp must be 1)");
  if (p.pp != 1) throw SpecError(p.provenance.file + ": field 'plan.pipeline_parallel': starfish-run runs data parallelism only (pp must be 1)");
  if (p.recompute == Recompute::selective)
    throw SpecError(p.provenance.file + ": field 'plan.recompute': starfish-run recomputes whole layers (full) or nothing (none), not selective");
  if (p.dp != 0 && p.dp != world_size)
    throw SpecError(p.provenance.file + ": field 'plan.data_parallel': the plan asks for " + std::to_string(p.dp) +
                    " ranks, this run has " + std::to_string(world_size) + " (WORLD_SIZE / --nproc)");
}

}  // namespace

const char* run_usage() {
  return "usage: starfish-run [--nproc N] [--model M.yaml] [--hw H.yaml] [--data FILE] [--iterations N] [--checkpoint-dir DIR]\n"
         "                    [--checkpoint-every N] [--resume] [--report FILE.json] [--params-out FILE] [--threads N]\n"
         "                    [--gpu-budget SIZE] [--cpu-budget SIZE] [--nvme-budget SIZE] [--non-model SIZE]\n"
         "                    [--scratch DIR] [--move-log FILE] [--lru] [--no-prefetch] [--timeout SECONDS] [--quiet] plan.yaml\n"
         "  --timeout: how long a rank waits for the others in a collective before it gives up with an error\n"
         "             (c10d's timeout; default 300 s): a rank that dies or hangs stops the whole run";
}

RunOptions parse_run_options(const std::vector<std::string>& args) {
  RunOptions o;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= args.size()) throw SpecError("starfish-run: " + a + " needs a value\n" + run_usage());
      return args[++i];
    };
    if (a == "--model") o.model_path = value();
    else if (a == "--data") o.data_path = value();
    else if (a == "--iterations") o.iterations = to_int(a, value(), 1);
    else if (a == "--checkpoint-dir") o.checkpoint_dir = value();
    else if (a == "--checkpoint-every") o.checkpoint_every = to_int(a, value(), 1);
    else if (a == "--resume") o.resume = true;
    else if (a == "--report") o.report_path = value();
    else if (a == "--params-out") o.params_path = value();
    else if (a == "--threads") o.threads = static_cast<int>(to_int(a, value(), 1));
    else if (a == "--kill-in-save") o.kill_in_save = static_cast<int>(to_int(a, value(), 1));  // test hook
    else if (a == "--quiet") o.quiet = true;
    else if (a == "--timeout") o.timeout_s = to_int(a, value(), 1);
    else if (a == "--hw") o.hardware_path = value();
    else if (a == "--gpu-budget") o.gpu_budget_bytes = bytes_flag(a, value());
    else if (a == "--cpu-budget") o.cpu_budget_bytes = bytes_flag(a, value());
    else if (a == "--nvme-budget") o.nvme_budget_bytes = bytes_flag(a, value());
    else if (a == "--non-model") o.non_model_bytes = bytes_flag(a, value());
    else if (a == "--scratch") o.scratch_dir = value();
    else if (a == "--move-log") o.move_log_path = value();
    else if (a == "--lru") o.lru = true;
    else if (a == "--no-prefetch") o.no_prefetch = true;
    else if (a.starts_with("--")) throw SpecError("starfish-run: unknown flag " + a + "\n" + run_usage());
    else if (o.plan_path.empty()) o.plan_path = a;
    else throw SpecError("starfish-run: more than one plan file ('" + o.plan_path + "', '" + a + "')\n" + run_usage());
  }
  if (o.plan_path.empty()) throw SpecError(std::string("starfish-run: no plan file\n") + run_usage());
  if ((o.resume || o.checkpoint_every > 0) && o.checkpoint_dir.empty())
    throw SpecError("starfish-run: --resume and --checkpoint-every need --checkpoint-dir");
  return o;
}

namespace {

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

// The simulator simulates the chunk runtime's third iteration: the first is the warm-up (trace,
// LRU, no prefetch) and the second still moves the optimizer states to where the warm-up placed
// them. A run's steady iterations are the same: from its third on (when it ran fewer, its last).
// Plans without chunks only leave out the first (allocation, first-touch).
size_t first_steady(size_t iterations, bool chunked) {
  const size_t skip = chunked ? 2 : 1;
  if (iterations == 0) return 0;
  return std::min(skip, iterations - 1);
}

}  // namespace

int run_rank(const RunOptions& o) {
  check_run_outputs(o);  // before anything trains: an unwritable output must not cost a run
  const RankEnv env = RankEnv::from_environment();
  const PlanFile pf = load_plan_file(o.plan_path);
  auto relative_to_plan = [&](const std::string& ref) {
    if (fs::path(ref).is_absolute()) return ref;
    return (fs::path(o.plan_path).parent_path() / ref).lexically_normal().string();
  };
  std::string model_path;
  if (o.model_path) model_path = *o.model_path;
  else if (pf.model_path) model_path = relative_to_plan(*pf.model_path);
  else throw SpecError(o.plan_path + ": the plan names no model (add 'model: path.yaml' or pass --model)");
  const Model model = load_model(model_path);
  check_plan_supported(pf.plan, env.world_size);
  Training training = pf.training;
  if (o.iterations) training.iterations = *o.iterations;
  if (training.dtype != DType::fp32 && training.dtype != DType::bf16 && training.dtype != DType::fp16)
    throw SpecError(o.plan_path + ": field 'training.dtype': starfish-run trains in fp32, bf16 or fp16, not " + to_string(training.dtype));
  if (model.vocab < 256) throw SpecError(model_path + ": field 'vocab': byte-level data needs a vocabulary of at least 256");
  if (model.is_moe()) throw SpecError(model_path + ": field 'moe': starfish-run does not run mixture-of-experts layers");
  if (model.attention_head_dim > 0 && model.attention_head_dim * model.heads != model.hidden)
    throw SpecError(model_path + ": field 'head_dim': starfish-run runs heads of hidden / heads only");

  // The Job, as the simulator makes it (make_job checks the plan against model and hardware):
  // the chunk runtime's layout, ZeRO mode, DP group and budgets all come from it.
  std::optional<std::string> hardware_path = o.hardware_path;
  if (!hardware_path && pf.hardware_path) hardware_path = relative_to_plan(*pf.hardware_path);
  Cluster cluster = hardware_path ? load_cluster(*hardware_path) : local_cluster(o, env.world_size, training.dtype);
  if (hardware_path && pf.nodes) cluster.nodes = *pf.nodes;  // the plan's node count, as `starfish simulate` reads it
  if (hardware_path && cluster.total_gpus() != env.world_size)
    throw SpecError(*hardware_path + ": the hardware has " + std::to_string(cluster.total_gpus()) + " GPUs but this run has " +
                    std::to_string(env.world_size) + " rank(s) (WORLD_SIZE / --nproc): run one rank per GPU");
  const std::string hardware_name = hardware_path ? cluster.name : o.plan_path;
  const Job job = make_job(model, std::move(cluster), training, pf.plan);

  const int hw = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  at::set_num_threads(o.threads > 0 ? o.threads : std::max(1, hw / env.world_size));
  at::manual_seed(training.seed);
  const bool lead = env.rank == 0;
  auto say = [&](const std::string& line) {
    if (lead && !o.quiet) std::cout << line << std::endl;
  };

  const ByteCorpus data = o.data_path ? ByteCorpus::from_file(*o.data_path) : ByteCorpus::generated(1 << 20);
  const Gpt gpt(model);
  Comm comm(env, std::chrono::seconds(o.timeout_s));
  const at::ScalarType dtype = training.dtype == DType::bf16 ? at::kBFloat16 : training.dtype == DType::fp16 ? at::kHalf : at::kFloat;
  const bool chunked = pf.plan.chunked();
  std::unique_ptr<TorchBackend> backend;
  ChunkStore* chunks = nullptr;
  std::unique_ptr<TrainableStore> store;
  int64_t non_model = 0;
  MemoryBudget budget;
  if (chunked) {
    // One micro-batch per rank per iteration: make_job refused a chunked plan with more (the
    // chunk runtime has no gradient accumulation), as it does for `starfish check` and `simulate`.
    const BatchSplit split = BatchSplit::make(training, pf.plan, env.rank, env.world_size);
    // Activations live in ordinary host memory here; the runtime is told an estimate per moment
    // (a layer's activations: ~16 hidden-sized fp32 tensors per token), not a measurement.
    // Without recompute every layer's activations are alive at the start of backward.
    const int64_t layer_activations = split.micro_batch * model.seq_len * int64_t{model.hidden} * 4 * 16;
    non_model = o.non_model_bytes >= 0 ? o.non_model_bytes
                                       : layer_activations * (pf.plan.recompute == Recompute::none ? model.layers : 1);
    // Layout, ZeRO mode, DP group and the hardware's budgets: the simulator's own chunk_plan().
    // A budget flag replaces the hardware's share of that tier (chunk_plan(job, rank, budget)).
    budget = chunk_plan(job, env.rank).options.budget;
    if (o.gpu_budget_bytes) budget.gpu_bytes = *o.gpu_budget_bytes;
    if (o.cpu_budget_bytes) budget.cpu_bytes = *o.cpu_budget_bytes;
    if (o.nvme_budget_bytes) budget.nvme_bytes = *o.nvme_budget_bytes;
    if (budget.gpu_bytes <= 0)
      throw SpecError("starfish-run: a chunked plan (plan.chunk_size) needs --gpu-budget SIZE, or a hardware profile "
                      "(the plan's 'hardware:' or --hw) whose GPU memory gives it");
    ChunkPlan cp = chunk_plan(job, env.rank, budget);
    cp.options.eviction = o.lru ? EvictionKind::lru : EvictionKind::farthest_next_use;
    cp.options.prefetch = !o.no_prefetch;
    // recompute none: refused before training when the runtime would move a chunk a layer's
    // graph holds (the very decisions it will make, predicted on the reference backend).
    if (pf.plan.recompute == Recompute::none)
      if (const std::optional<std::string> broken = predict_graph_residency(cp.layout, cp.options, cp.tied_embeddings, non_model))
        throw SpecError(o.plan_path + ": field 'plan.recompute': " + *broken);
    // The pool's capacity is the budget: the runtime keeps within it, the pool enforces it.
    backend = std::make_unique<TorchBackend>(TierCapacity{budget.gpu_bytes, 0, 0}, o.scratch_dir, comm);
    auto cs = std::make_unique<ChunkStore>(gpt, std::move(cp), non_model, *backend, training.seed);
    chunks = cs.get();
    store = std::move(cs);
  } else {
    store = std::make_unique<FlatStore>(gpt, dtype, training.seed);
  }
  // fp16 computes where the store does: on CUDA for a chunked plan with a CUDA device, else on
  // the CPU, whose LibTorch may lack fp16 kernels (1.13 has no fp16 matmul there). Probed, not
  // assumed from a version.
  if (training.dtype == DType::fp16 && store->device().is_cpu() && !cpu_trains_fp16())
    throw SpecError(o.plan_path + ": field 'training.dtype': fp16 computes on the CPU here (" +
                    (chunked ? "no CUDA device" : "a plan without chunks uses the flat store") +
                    ") and this LibTorch has no fp16 kernels on the CPU (a tiny GPT's forward and backward in Half failed); "
                    "use bf16 or fp32, or a chunked plan (plan.chunk_size) on CUDA");
  StoreTrainer trainer(gpt, data, training, pf.plan, comm, std::move(store));  // fp16: with dynamic loss scaling

  {
    std::ostringstream s;
    s << "starfish-run: model " << model.name << " (" << gpt.parameter_count() << " parameters), " << env.world_size << " rank(s) ("
      << comm.backend_name() << "), " << at::get_num_threads() << " threads/rank, " << to_string(training.dtype) << ", recompute "
      << to_string(pf.plan.recompute) << ", "
      << "global batch " << training.global_batch << " x " << model.seq_len << " tokens, data "
      << (o.data_path ? *o.data_path : std::string("generated corpus")) << " (" << data.size() << " bytes)"
      << (hardware_path ? ", hardware " + job.cluster.name + " (" + *hardware_path + ")" : std::string());
    say(s.str());
    if (chunked) {
      const ChunkLayout& l = chunks->layout();
      std::ostringstream c;
      c << "starfish-run: " << backend->gpu_tier_description() << ", budget gpu " << format_bytes(budget.gpu_bytes) << ", cpu "
        << format_bytes(budget.cpu_bytes) << ", nvme " << format_bytes(budget.nvme_bytes) << "; " << l.param_chunks()
        << " param chunks of " << pf.plan.chunk_elements << " elements (" << format_bytes(l.total_bytes())
        << " of chunks in all), ZeRO " << to_string(chunks->runtime().zero().mode()) << ", non-model " << format_bytes(non_model)
        << "/moment" << (o.non_model_bytes >= 0 ? "" : " (estimate)");
      say(c.str());
    } else {
      say("starfish-run: gpu tier: CPU pool (no CUDA); plan without chunks: parameters in one flat store");
    }
  }
  const CheckpointIdentity identity = checkpoint_identity(job, env.world_size);
  if (o.resume) {
    const CheckpointInfo info = resume_trainer(o.checkpoint_dir, trainer, comm, identity);
    std::string scale;
    if (info.loss_scale) {
      char line[96];
      std::snprintf(line, sizeof line, ", loss scale %g after %lld good steps", info.loss_scale->scale,
                    static_cast<long long>(info.loss_scale->good_steps));
      scale = line;
    }
    say("starfish-run: resumed from " + o.checkpoint_dir + " at iteration " + std::to_string(info.steps) + scale);
  }

  int saves = 0;
  auto save = [&]() {
    ++saves;
    CheckpointHooks hooks;
    if (o.kill_in_save == saves)
      hooks.after_write = [](int64_t written, int64_t total) {
        if (written * 2 >= total) ::raise(SIGKILL);
      };
    save_trainer(o.checkpoint_dir, trainer, comm, hooks, identity);
    say("starfish-run: checkpoint at iteration " + std::to_string(trainer.steps_done()) + " in " + o.checkpoint_dir);
  };

  std::vector<StepResult> results;
  std::vector<Counters> per_iteration;  // chunked plans: what each iteration moved
  // Checkpoint saves read chunks through read_host, not the runtime's moves: they do not count.
  Counters before = chunked ? Counters::of(*backend, chunks->runtime()) : Counters{};
  while (trainer.steps_done() < training.iterations) {
    const StepResult r = trainer.step();
    results.push_back(r);
    if (chunked) {
      const Counters now = Counters::of(*backend, chunks->runtime());
      per_iteration.push_back(now.minus(before));
      before = now;
    }
    char line[240];
    std::snprintf(line, sizeof line, "iter %4lld/%lld  loss %.4f  grad_norm %.3f  %.3f s", static_cast<long long>(trainer.steps_done()),
                  static_cast<long long>(training.iterations), r.loss, r.grad_norm, r.seconds);
    std::string text = line;
    if (trainer.loss_scaler()) {
      std::snprintf(line, sizeof line, "  loss_scale %g%s", r.loss_scale, r.skipped ? "  skipped (inf/NaN gradients): scale halved" : "");
      text += line;
    }
    say(text);
    if (o.checkpoint_every > 0 && trainer.steps_done() % o.checkpoint_every == 0 && trainer.steps_done() < training.iterations) save();
  }
  if (!o.checkpoint_dir.empty() && !results.empty()) save();

  if (!o.params_path.empty()) {
    const NamedTensors values = trainer.store().gather_values(comm);
    if (lead) write_checkpoint_file(o.params_path, CheckpointInfo{trainer.steps_done()}, values);
  }
  if (chunked && !o.move_log_path.empty()) {
    const std::string path = env.world_size > 1 ? o.move_log_path + ".rank" + std::to_string(env.rank) : o.move_log_path;
    std::ofstream out(path);
    write_move_log(out, chunks->runtime().moves());
    if (!out) throw SpecError(path + ": cannot write the move log");
    say("starfish-run: move log (" + std::to_string(chunks->runtime().moves().size()) + " moves) in " + path);
  }
  if (chunked) {
    std::ostringstream m;
    m << "starfish-run: peak gpu " << format_bytes(backend->usage(Tier::gpu).peak_bytes) << ", cpu "
      << format_bytes(backend->usage(Tier::cpu).peak_bytes) << ", nvme " << format_bytes(backend->usage(Tier::nvme).peak_bytes)
      << "; moved gpu->cpu " << format_bytes(backend->copied_bytes(Tier::gpu, Tier::cpu)) << ", cpu->gpu "
      << format_bytes(backend->copied_bytes(Tier::cpu, Tier::gpu)) << ", cpu->nvme " << format_bytes(backend->copied_bytes(Tier::cpu, Tier::nvme))
      << ", nvme->cpu " << format_bytes(backend->copied_bytes(Tier::nvme, Tier::cpu)) << ", collectives "
      << format_bytes(backend->collective_bytes());
    say(m.str());
  }
  if (lead && !o.report_path.empty()) {
    // The keys of the simulator's report (schedule/simulate.h, to_json), so that `starfish
    // compare sim.json run.json` reads both; the rest is what only a real run has.
    const size_t steady = first_steady(results.size(), chunked);
    const double steady_n = static_cast<double>(results.size() - steady);
    double steady_s = 0;
    for (size_t i = steady; i < results.size(); ++i) steady_s += results[i].seconds;
    const double mean_s = results.empty() ? 0 : steady_s / steady_n;
    const int64_t first_iteration = trainer.steps_done() - static_cast<int64_t>(results.size()) + 1;

    JsonWriter w(true);
    w.begin_object();
    w.field("kind", "starfish.run");
    w.field("model", model.name).field("hardware", hardware_name).field("gpus", env.world_size);
    w.field("plan", o.plan_path).field("parameters", gpt.parameter_count());
    w.field("iteration_s", mean_s);
    w.field("tokens_per_s", mean_s > 0 ? static_cast<double>(training.global_batch) * model.seq_len / mean_s : 0.0);
    w.field("steady_from_iteration", first_iteration + static_cast<int64_t>(steady));
    w.field("steady_iterations", static_cast<int64_t>(results.size() - steady));
    w.field("collectives", comm.backend_name());
    w.field("gpu_tier", chunked ? backend->gpu_tier_description().substr(10) : std::string("CPU pool (no CUDA)"));
    w.field("store", chunked ? "chunks" : "flat").field("dtype", to_string(training.dtype));
    w.field("recompute", to_string(pf.plan.recompute));
    w.key("memory").begin_object();
    if (chunked) {
      // Per tier, this rank's peak over the whole run. The simulator's GPU peak is chunks plus
      // the non-model bytes of the moment; the pool here holds the chunks only (activations
      // live in host memory on the CPU device, and outside the pool's count on CUDA), so the
      // comparable figure adds the non-model bytes the runtime reserved at every moment.
      const int64_t pool_peak = backend->usage(Tier::gpu).peak_bytes;
      w.field("peak_gpu_bytes", pool_peak + non_model);
      w.field("cpu_bytes_per_gpu", backend->usage(Tier::cpu).peak_bytes);
      w.field("nvme_bytes_per_gpu", backend->usage(Tier::nvme).peak_bytes);
      w.field("gpu_pool_peak_bytes", pool_peak).field("non_model_bytes_per_moment", non_model);
      w.field("gpu_budget_bytes", budget.gpu_bytes).field("cpu_budget_bytes", budget.cpu_bytes);
      w.field("nvme_budget_bytes", budget.nvme_bytes);
    } else {
      int64_t state_bytes = 0;
      for (const auto& [n, t] : trainer.store().save_state()) state_bytes += t.numel() * static_cast<int64_t>(t.element_size());
      w.field("model_state_bytes", state_bytes);  // parameters and optimizer states; activations are not measured
    }
    w.end_object();
    if (chunked) {
      // The simulator reports the bytes of ONE iteration, its steady third; here, per rank, the
      // mean per iteration over the steady iterations (the first two moved what the warm-up set up).
      Counters sum;
      for (size_t i = steady; i < per_iteration.size(); ++i)
        for (int f = 0; f < 3; ++f)
          for (int t = 0; t < 3; ++t) sum.copied[f][t] += per_iteration[i].copied[f][t];
      for (size_t i = steady; i < per_iteration.size(); ++i) sum.collective_bytes += per_iteration[i].collective_bytes;
      auto mean = [&](int64_t total) { return static_cast<double>(total) / steady_n; };
      w.key("bytes").begin_object();
      w.field("h2d", mean(sum.h2d())).field("d2h", mean(sum.d2h()));
      w.field("nvme_read", mean(sum.nvme_read())).field("nvme_write", mean(sum.nvme_write()));
      w.field("collectives", mean(sum.collective_bytes));
      w.end_object();
      // Like the simulator's: every move the runtime decided, over all iterations it ran.
      w.field("moves", static_cast<int64_t>(chunks->runtime().moves().size()));
      w.key("copied_bytes").begin_object();  // totals over the run, by tier pair
      const Counters total = Counters::of(*backend, chunks->runtime());
      for (Tier a : {Tier::gpu, Tier::cpu, Tier::nvme})
        for (Tier b : {Tier::gpu, Tier::cpu, Tier::nvme})
          if (a != b) w.field(std::string(to_string(a)) + "_to_" + to_string(b), total.at(a, b));
      w.field("collectives", total.collective_bytes);
      w.end_object();
    }
    w.key("iterations").begin_array();
    for (size_t i = 0; i < results.size(); ++i) {
      w.begin_object().field("iteration", first_iteration + static_cast<int64_t>(i));
      w.field("loss", results[i].loss).field("grad_norm", results[i].grad_norm).field("time_s", results[i].seconds);
      if (trainer.loss_scaler()) w.field("loss_scale", results[i].loss_scale).field("skipped", results[i].skipped);
      if (chunked) {
        const Counters& c = per_iteration[i];
        w.field("moves", c.moves).field("h2d", c.h2d()).field("d2h", c.d2h());
        w.field("nvme_read", c.nvme_read()).field("nvme_write", c.nvme_write()).field("collectives", c.collective_bytes);
      }
      w.end_object();
    }
    w.end_array();
    w.end_object();
    std::ofstream out(o.report_path);
    out << w.str() << "\n";
    if (!out) throw SpecError(o.report_path + ": cannot write the report");
    say("starfish-run: report in " + o.report_path);
  }
  return 0;
}

}  // namespace starfish::exec

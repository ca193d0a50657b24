#include "exec/run.h"

#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include <torch/torch.h>

#include <unistd.h>

#include "exec/checkpoint.h"
#include "exec/chunk_store.h"
#include "exec/torch_backend.h"
#include "sim/chunk/move_log.h"
#include "sim/spec/units.h"
#include "exec/data.h"
#include "exec/dist.h"
#include "exec/flat_store.h"
#include "exec/gpt_model.h"
#include "exec/trainer.h"
#include "sim/spec/error.h"
#include "sim/spec/spec_io.h"

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

std::string json_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\', o += c;
    else if (c == '\n') o += "\\n";
    else o += c;
  }
  return o;
}

void check_plan_supported(const Plan& p, int world_size) {
  if (p.tp != 1) throw SpecError(p.provenance.file + ": field 'plan.tensor_parallel': starfish-run runs data parallelism only (tp must be 1)");
  if (p.pp != 1) throw SpecError(p.provenance.file + ": field 'plan.pipeline_parallel': starfish-run runs data parallelism only (pp must be 1)");
  if (p.dp != 0 && p.dp != world_size)
    throw SpecError(p.provenance.file + ": field 'plan.data_parallel': the plan asks for " + std::to_string(p.dp) +
                    " ranks, this run has " + std::to_string(world_size) + " (WORLD_SIZE / --nproc)");
}

}  // namespace

const char* run_usage() {
  return "usage: starfish-run [--nproc N] [--model M.yaml] [--data FILE] [--iterations N] [--checkpoint-dir DIR]\n"
         "                    [--checkpoint-every N] [--resume] [--report FILE.json] [--params-out FILE] [--threads N]\n"
         "                    [--gpu-budget SIZE] [--cpu-budget SIZE] [--nvme-budget SIZE] [--non-model SIZE]\n"
         "                    [--scratch DIR] [--move-log FILE] [--lru] [--no-prefetch] [--quiet] plan.yaml";
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

int run_rank(const RunOptions& o) {
  const RankEnv env = RankEnv::from_environment();
  const PlanFile pf = load_plan_file(o.plan_path);
  std::string model_path;
  if (o.model_path) model_path = *o.model_path;
  else if (pf.model_path) model_path = (fs::path(o.plan_path).parent_path() / *pf.model_path).string();
  else throw SpecError(o.plan_path + ": the plan names no model (add 'model: path.yaml' or pass --model)");
  const Model model = load_model(model_path);
  check_plan_supported(pf.plan, env.world_size);
  Training training = pf.training;
  if (o.iterations) training.iterations = *o.iterations;
  if (training.dtype != DType::fp32 && training.dtype != DType::bf16)
    throw SpecError(o.plan_path + ": field 'training.dtype': starfish-run trains in fp32 or bf16, not " + to_string(training.dtype));
  if (model.vocab < 256) throw SpecError(model_path + ": field 'vocab': byte-level data needs a vocabulary of at least 256");

  const int hw = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  at::set_num_threads(o.threads > 0 ? o.threads : std::max(1, hw / env.world_size));
  at::manual_seed(training.seed);
  const bool lead = env.rank == 0;
  auto say = [&](const std::string& line) {
    if (lead && !o.quiet) std::cout << line << std::endl;
  };

  const ByteCorpus data = o.data_path ? ByteCorpus::from_file(*o.data_path) : ByteCorpus::generated(1 << 20);
  const Gpt gpt(model);
  Comm comm(env);
  const at::ScalarType dtype = training.dtype == DType::bf16 ? at::kBFloat16 : at::kFloat;
  const bool chunked = pf.plan.chunked();
  std::unique_ptr<TorchBackend> backend;
  ChunkStore* chunks = nullptr;
  std::unique_ptr<TrainableStore> store;
  int64_t non_model = 0;
  if (chunked) {
    if (o.gpu_budget_bytes <= 0) throw SpecError("starfish-run: a chunked plan (plan.chunk_size) needs --gpu-budget SIZE");
    const BatchSplit split = BatchSplit::make(training, pf.plan, env.rank, env.world_size);
    if (split.micro_batches != 1)
      throw SpecError(o.plan_path + ": field 'plan.micro_batch': with the chunk runtime each rank runs one micro-batch per iteration "
                      "(micro_batch must be global_batch / ranks = " + std::to_string(split.per_rank) + ")");
    // Activations live in ordinary host memory here; the runtime is told an estimate per moment
    // (a layer's activations: ~16 hidden-sized fp32 tensors per token), not a measurement.
    non_model = o.non_model_bytes >= 0 ? o.non_model_bytes : split.micro_batch * model.seq_len * int64_t{model.hidden} * 4 * 16;
    const int64_t host = int64_t{::sysconf(_SC_PHYS_PAGES)} * ::sysconf(_SC_PAGE_SIZE);
    ChunkStoreOptions co;
    co.chunk_elements = pf.plan.chunk_elements;
    co.non_model_bytes = non_model;
    co.runtime.budget = MemoryBudget{o.gpu_budget_bytes, o.cpu_budget_bytes > 0 ? o.cpu_budget_bytes : host / 2 / env.world_size,
                                     o.nvme_budget_bytes};
    co.runtime.eviction = o.lru ? EvictionKind::lru : EvictionKind::farthest_next_use;
    co.runtime.prefetch = !o.no_prefetch;
    co.runtime.zero = pf.plan.zero_stage >= 1 ? ZeroMode::sharded : ZeroMode::replicated;
    co.runtime.dp_ranks.clear();
    for (int r = 0; r < env.world_size; ++r) co.runtime.dp_ranks.push_back(r);
    co.runtime.dp_index = env.rank;
    // The pool's capacity is the budget: the runtime keeps within it, the pool enforces it.
    backend = std::make_unique<TorchBackend>(TierCapacity{o.gpu_budget_bytes, 0, 0}, o.scratch_dir, comm);
    auto cs = std::make_unique<ChunkStore>(gpt, training, co, *backend, training.seed);
    chunks = cs.get();
    store = std::move(cs);
  } else {
    store = std::make_unique<FlatStore>(gpt, dtype, training.seed);
  }
  StoreTrainer trainer(gpt, data, training, pf.plan, comm, std::move(store));

  {
    std::ostringstream s;
    s << "starfish-run: model " << model.name << " (" << gpt.parameter_count() << " parameters), " << env.world_size << " rank(s) ("
      << comm.backend_name() << "), " << at::get_num_threads() << " threads/rank, " << to_string(training.dtype) << ", "
      << "global batch " << training.global_batch << " x " << model.seq_len << " tokens, data "
      << (o.data_path ? *o.data_path : std::string("generated corpus")) << " (" << data.size() << " bytes)";
    say(s.str());
    if (chunked) {
      const ChunkLayout& l = chunks->layout();
      std::ostringstream c;
      c << "starfish-run: " << backend->gpu_tier_description() << ", budget " << format_bytes(o.gpu_budget_bytes) << "; "
        << l.param_chunks() << " param chunks of " << pf.plan.chunk_elements << " elements ("
        << format_bytes(l.total_bytes()) << " of chunks in all), ZeRO " << to_string(chunks->runtime().zero().mode())
        << ", non-model " << format_bytes(non_model) << "/moment (estimate)";
      say(c.str());
    } else {
      say("starfish-run: gpu tier: CPU pool (no CUDA); plan without chunks: parameters in one flat store");
    }
  }
  if (o.resume) {
    const NamedTensors state = trainer.store().save_state();  // shapes to load into
    const int64_t steps = load_checkpoint(o.checkpoint_dir, state, comm);
    trainer.store().load_state(state);
    trainer.set_steps_done(steps);
    say("starfish-run: resumed from " + o.checkpoint_dir + " at iteration " + std::to_string(steps));
  }

  int saves = 0;
  auto save = [&]() {
    ++saves;
    CheckpointHooks hooks;
    if (o.kill_in_save == saves)
      hooks.after_write = [](int64_t written, int64_t total) {
        if (written * 2 >= total) ::raise(SIGKILL);
      };
    save_checkpoint(o.checkpoint_dir, trainer.steps_done(), trainer.store().save_state(), comm, hooks);
    say("starfish-run: checkpoint at iteration " + std::to_string(trainer.steps_done()) + " in " + o.checkpoint_dir);
  };

  std::vector<StepResult> results;
  while (trainer.steps_done() < training.iterations) {
    const StepResult r = trainer.step();
    results.push_back(r);
    char line[200];
    std::snprintf(line, sizeof line, "iter %4lld/%lld  loss %.4f  grad_norm %.3f  %.3f s", static_cast<long long>(trainer.steps_done()),
                  static_cast<long long>(training.iterations), r.loss, r.grad_norm, r.seconds);
    say(line);
    if (o.checkpoint_every > 0 && trainer.steps_done() % o.checkpoint_every == 0 && trainer.steps_done() < training.iterations) save();
  }
  if (!o.checkpoint_dir.empty() && !results.empty()) save();

  if (!o.params_path.empty()) {
    const NamedTensors values = trainer.store().gather_values(comm);
    if (lead) write_checkpoint_file(o.params_path, trainer.steps_done(), values);
  }
  if (chunked && !o.move_log_path.empty()) {
    const std::string path = env.world_size > 1 ? o.move_log_path + ".rank" + std::to_string(env.rank) : o.move_log_path;
    std::ofstream out(path);
    write_move_log(out, chunks->runtime().moves());
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
    std::ostringstream j;
    double total = 0, steady = 0;
    for (size_t i = 0; i < results.size(); ++i) total += results[i].seconds, steady += i > 0 ? results[i].seconds : 0;
    const double mean = results.size() > 1 ? steady / double(results.size() - 1) : (results.empty() ? 0 : total);
    int64_t state_bytes = 0;
    for (const auto& [n, t] : trainer.store().save_state()) state_bytes += t.numel() * static_cast<int64_t>(t.element_size());
    j << "{\n  \"kind\": \"run\",\n  \"plan\": \"" << json_escape(o.plan_path) << "\",\n  \"model\": \"" << json_escape(model.name)
      << "\",\n  \"parameters\": " << gpt.parameter_count() << ",\n  \"world_size\": " << env.world_size << ",\n  \"collectives\": \""
      << comm.backend_name() << "\",\n  \"gpu_tier\": \"" << (chunked ? backend->gpu_tier_description().substr(10) : std::string("CPU pool (no CUDA)"))
      << "\",\n  \"store\": \"" << (chunked ? "chunks" : "flat")
      << "\",\n  \"dtype\": \""
      << to_string(training.dtype) << "\",\n  \"iteration_time_s\": " << mean << ",\n  \"tokens_per_s\": "
      << (mean > 0 ? double(training.global_batch) * model.seq_len / mean : 0) << ",\n  \"peak_memory_bytes\": ";
    if (chunked) {
      j << "{\"gpu\": " << backend->usage(Tier::gpu).peak_bytes << ", \"cpu\": " << backend->usage(Tier::cpu).peak_bytes
        << ", \"nvme\": " << backend->usage(Tier::nvme).peak_bytes << "},\n  \"moved_bytes\": {";
      const Tier tiers[] = {Tier::gpu, Tier::cpu, Tier::nvme};
      bool first = true;
      for (Tier a : tiers)
        for (Tier b : tiers)
          if (a != b) {
            j << (first ? "" : ", ") << "\"" << to_string(a) << "_to_" << to_string(b) << "\": " << backend->copied_bytes(a, b);
            first = false;
          }
      j << ", \"collectives\": " << backend->collective_bytes() << "},\n  \"moves\": " << chunks->runtime().moves().size()
        << ",\n  \"non_model_bytes_per_moment\": " << non_model;
    } else {
      j << "{\"gpu\": " << state_bytes << ", \"cpu\": 0, \"nvme\": 0},\n  \"moved_bytes\": {}";
    }
    j << ",\n  \"iterations\": [";
    for (size_t i = 0; i < results.size(); ++i)
      j << (i ? ",\n" : "\n") << "    {\"iteration\": " << trainer.steps_done() - int64_t(results.size()) + int64_t(i) + 1
        << ", \"loss\": " << results[i].loss << ", \"grad_norm\": " << results[i].grad_norm << ", \"time_s\": " << results[i].seconds << "}";
    j << "\n  ]\n}\n";
    std::ofstream(o.report_path) << j.str();
    say("starfish-run: report in " + o.report_path);
  }
  return 0;
}

}  // namespace starfish::exec

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

#include "exec/checkpoint.h"
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

int64_t to_int(const std::string& flag, const std::string& v, int64_t min) {
  try {
    size_t used = 0;
    const long long x = std::stoll(v, &used);
    if (used == v.size() && x >= min) return x;
  } catch (const std::exception&) {
  }
  throw SpecError("starfish-run: " + flag + " expects an integer >= " + std::to_string(min) + ", got '" + v + "'");
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
         "                    [--quiet] plan.yaml";
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
  auto flat = std::make_unique<FlatStore>(gpt, dtype, training.seed);
  StoreTrainer trainer(gpt, data, training, pf.plan, comm, std::move(flat));
  const NamedTensors state = trainer.store().checkpoint_tensors();

  {
    std::ostringstream s;
    s << "starfish-run: model " << model.name << " (" << gpt.parameter_count() << " parameters), " << env.world_size << " rank(s) ("
      << comm.backend_name() << "), " << at::get_num_threads() << " threads/rank, " << to_string(training.dtype) << ", "
      << "global batch " << training.global_batch << " x " << model.seq_len << " tokens, data "
      << (o.data_path ? *o.data_path : std::string("generated corpus")) << " (" << data.size() << " bytes)";
    say(s.str());
    say("starfish-run: gpu tier: CPU pool (no CUDA); parameters in one flat store (chunk runtime not yet in sim/chunk)");
  }
  if (o.resume) {
    const int64_t steps = load_checkpoint(o.checkpoint_dir, state, comm);
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
    save_checkpoint(o.checkpoint_dir, trainer.steps_done(), state, comm, hooks);
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

  if (lead && !o.params_path.empty()) {
    NamedTensors values;
    for (const GptParam& p : gpt.params()) values.emplace_back(p.name, trainer.store().value(p.name));
    write_checkpoint_file(o.params_path, trainer.steps_done(), values);
  }
  if (lead && !o.report_path.empty()) {
    std::ostringstream j;
    double total = 0, steady = 0;
    for (size_t i = 0; i < results.size(); ++i) total += results[i].seconds, steady += i > 0 ? results[i].seconds : 0;
    const double mean = results.size() > 1 ? steady / double(results.size() - 1) : (results.empty() ? 0 : total);
    int64_t state_bytes = 0;
    for (const auto& [n, t] : state) state_bytes += t.numel() * static_cast<int64_t>(t.element_size());
    j << "{\n  \"kind\": \"run\",\n  \"plan\": \"" << json_escape(o.plan_path) << "\",\n  \"model\": \"" << json_escape(model.name)
      << "\",\n  \"parameters\": " << gpt.parameter_count() << ",\n  \"world_size\": " << env.world_size << ",\n  \"collectives\": \""
      << comm.backend_name() << "\",\n  \"gpu_tier\": \"CPU pool (no CUDA)\",\n  \"store\": \"flat\",\n  \"dtype\": \""
      << to_string(training.dtype) << "\",\n  \"iteration_time_s\": " << mean << ",\n  \"tokens_per_s\": "
      << (mean > 0 ? double(training.global_batch) * model.seq_len / mean : 0) << ",\n  \"peak_memory_bytes\": {\"gpu\": " << state_bytes
      << ", \"cpu\": 0, \"nvme\": 0},\n  \"moved_bytes\": {},\n  \"iterations\": [";
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

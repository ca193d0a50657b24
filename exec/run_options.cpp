// starfish-run's command line, parsed by the one parser `starfish` uses too (sim/cli/args.h).
// No LibTorch here: this file compiles in a moment.
#include <string>
#include <vector>

#include "exec/run.h"
#include "sim/cli/args.h"
#include "sim/spec/error.h"
#include "sim/spec/units.h"

namespace starfish::exec {
namespace {

int64_t to_int(const std::string& flag, const std::string& v, int64_t min) {
  try {
    size_t used = 0;
    const long long x = std::stoll(v, &used);
    if (used == v.size() && x >= min) return x;
  } catch (const std::exception&) {
  }
  throw SpecError("starfish-run: --" + flag + " expects an integer >= " + std::to_string(min) + ", got '" + v + "'");
}

int64_t bytes_flag(const std::string& flag, const std::string& v) {
  try {
    return units::parse_bytes(v);
  } catch (const std::exception& e) {
    throw SpecError("starfish-run: --" + flag + " expects a size like 64MiB, got '" + v + "': " + e.what());
  }
}

// starfish-run's table of options (without --nproc, which main takes first).
cli::Args parse_args(const std::vector<std::string>& argv) {
  try {
    return cli::Args(argv,
                     {"model", "hw", "data", "iterations", "checkpoint-dir", "checkpoint-every", "report", "params-out",
                      "threads", "kill-in-save", "timeout", "gpu-budget", "cpu-budget", "nvme-budget", "non-model",
                      "scratch", "move-log"},
                     {"resume", "quiet", "lru", "no-prefetch", "bind-cores"});
  } catch (const cli::UsageError& e) {
    throw SpecError(std::string("starfish-run: ") + e.what() + "; see starfish-run --help");
  }
}

}  // namespace

const char* run_usage() {
  return "usage: starfish-run [--version] [--nproc N] [--model M.yaml] [--hw H.yaml] [--data FILE] [--iterations N] [--checkpoint-dir DIR]\n"
         "                    [--checkpoint-every N] [--resume] [--report FILE.json] [--params-out FILE] [--threads N]\n"
         "                    [--gpu-budget SIZE] [--cpu-budget SIZE] [--nvme-budget SIZE] [--non-model SIZE]\n"
         "                    [--scratch DIR] [--move-log FILE] [--lru] [--no-prefetch] [--timeout SECONDS] [--bind-cores] [--quiet]\n"
         "                    plan.yaml\n"
         "  --timeout: how long a rank waits for the others in a collective before it gives up with an error\n"
         "             (c10d's timeout; default 300 s): a rank that dies or hangs stops the whole run\n"
         "  --bind-cores: each local rank runs on its own equal share of the CPUs (DeepSpeed's --bind_cores_to_rank)";
}

RunOptions parse_run_options(const std::vector<std::string>& argv) {
  const cli::Args args = parse_args(argv);
  RunOptions o;
  const auto integer = [&](const char* name, int64_t& out, int64_t min) {
    if (auto v = args.get(name)) out = to_int(name, *v, min);
  };
  const auto bytes = [&](const char* name, std::optional<int64_t>& out) {
    if (auto v = args.get(name)) out = bytes_flag(name, *v);
  };
  o.model_path = args.get("model");
  o.data_path = args.get("data");
  o.hardware_path = args.get("hw");
  if (auto v = args.get("iterations")) o.iterations = to_int("iterations", *v, 1);
  o.checkpoint_dir = args.get("checkpoint-dir").value_or("");
  integer("checkpoint-every", o.checkpoint_every, 1);
  o.report_path = args.get("report").value_or("");
  o.params_path = args.get("params-out").value_or("");
  if (auto v = args.get("threads")) o.threads = static_cast<int>(to_int("threads", *v, 1));
  if (auto v = args.get("kill-in-save")) o.kill_in_save = static_cast<int>(to_int("kill-in-save", *v, 1));  // test hook
  integer("timeout", o.timeout_s, 1);
  bytes("gpu-budget", o.gpu_budget_bytes);
  bytes("cpu-budget", o.cpu_budget_bytes);
  bytes("nvme-budget", o.nvme_budget_bytes);
  if (auto v = args.get("non-model")) o.non_model_bytes = bytes_flag("non-model", *v);
  o.scratch_dir = args.get("scratch").value_or(o.scratch_dir);
  o.move_log_path = args.get("move-log").value_or("");
  o.resume = args.flag("resume");
  o.quiet = args.flag("quiet");
  o.lru = args.flag("lru");
  o.no_prefetch = args.flag("no-prefetch");
  o.bind_cores = args.flag("bind-cores");
  const auto& plans = args.positional();
  // One line each (SpecError), pointing at --help for the usage.
  if (plans.empty()) throw SpecError("starfish-run: no plan file; see starfish-run --help");
  if (plans.size() > 1)
    throw SpecError("starfish-run: more than one plan file ('" + plans[0] + "', '" + plans[1] + "'); see starfish-run --help");
  o.plan_path = plans.front();
  if ((o.resume || o.checkpoint_every > 0) && o.checkpoint_dir.empty())
    throw SpecError("starfish-run: --resume and --checkpoint-every need --checkpoint-dir");
  return o;
}

}  // namespace starfish::exec

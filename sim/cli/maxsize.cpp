// starfish maxsize --hw H [--family gpt|llama] [--nodes N | --gpus N] [--seq S] [--batch B]
// [--max-iteration T] [--emit DIR [--force]] [--json]: the largest model of a family some plan
// can train on the hardware, its plan and simulated throughput, what binds the next size, and
// the same answer under a static partition (DeepSpeed ZeRO-Offload) beside the chunk runtime
// (PatrickStar).
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/cli/cli.h"
#include "sim/cli/plan_export.h"
#include "sim/cli/plan_text.h"
#include "sim/search/maxsize.h"
#include "sim/spec/error.h"
#include "sim/spec/spec_io.h"
#include "sim/spec/units.h"

namespace starfish::cli {
namespace {

struct Variant {
  const char* name;
  const char* file;  // its plan file under --emit DIR
  search::SearchSpace space;
  search::MaxSizeResult result;
};

// A found answer passed the simulator (max_model_size's rule): its numbers are the simulated ones.
const search::Evaluation& simulated(const search::MaxSizeResult& r) { return *r.best.rows.front().refined; }

void write_variant_json(JsonWriter& w, const Variant& v) {
  const search::MaxSizeResult& r = v.result;
  w.begin_object();
  w.field("variant", v.name).field("found", r.found);
  if (r.found) {
    w.field("model", r.model.name).field("parameters", r.parameters);
    w.field("layers", r.model.layers).field("hidden", r.model.hidden).field("heads", r.model.heads);
    const search::Row& best = r.best.rows.front();
    w.field("plan_label", best.label());
    w.key("plan");
    write_plan_json(w, r.best.job(best));
    w.field("global_batch", r.best.training.global_batch);
    w.field("tier", simulated(r).source).field("tokens_per_s", simulated(r).tokens_per_s).field("mfu", simulated(r).mfu);
    w.field("iteration_s", simulated(r).iteration_s);
    w.key("analytic").begin_object();
    w.field("tokens_per_s", best.analytic.tokens_per_s).field("iteration_s", best.analytic.time.iteration_s);
    w.end_object();
  }
  w.field("next_model", r.next_model.name).field("binding", r.binding).field("binding_detail", r.binding_detail);
  w.field("probes", r.probes);
  w.end_object();
}

// --emit DIR: the found variants' plans, each with its (generated) model file beside it.
template <size_t N>
void emit_variants(const std::string& dir, const Variant (&variants)[N], const Cluster& cluster, const std::string& family,
                   const std::string& hw_path, bool force) {
  std::vector<EmittedAnswer> answers;
  for (const Variant& v : variants) {
    const search::MaxSizeResult& r = v.result;
    if (!r.found) continue;
    const std::string title = "starfish maxsize (" + std::string(v.name) + "): the largest " + family + " model on " +
                              std::to_string(cluster.nodes) + " x " + cluster.name + ", " + r.model.name + " (" +
                              units::human_count(r.parameters) + " parameters), simulated at " +
                              units::human_count(simulated(r).tokens_per_s) + " tokens/s";
    answers.push_back({v.file, title, r.best.job(r.best.rows.front())});
  }
  if (answers.empty()) throw std::runtime_error("no model fits, so there is nothing to emit");
  emit_answers(dir, answers, hw_path, force);
}

}  // namespace

int run_maxsize(const std::vector<std::string>& argv) {
  Args args(argv, {"hw", "family", "nodes", "gpus", "seq", "batch", "max-iteration", "threads", "emit"},
            {"json", "force", "help"});
  if (args.flag("help")) {
    std::printf(
        "usage: starfish maxsize --hw H [--family gpt|llama] [--nodes N | --gpus N] [--seq S]\n"
        "                        [--batch B] [--max-iteration T] [--emit DIR [--force]] [--json]\n"
        "  the largest model of the family (hidden = 128 x heads, layers = heads, then more layers\n"
        "  at that hidden size) that some plan trains on H; binary search over size. Each size's\n"
        "  best plan is simulated, and a plan the simulator refuses gives way to the next.\n"
        "  B: global batch in sequences (default one per GPU: the chunk runtime does not\n"
        "  accumulate gradients, and the smallest batch lets each runtime train its largest).\n"
        "  T: reject plans whose iteration is longer (e.g. 30s), making time a constraint.\n"
        "  Also shows the static partition (ZeRO-Offload: optimizer on CPU, params and grads on\n"
        "  GPU) beside the chunk runtime (PatrickStar-style chunks).\n"
        "  --emit DIR writes each answer as DIR/<variant>-plan.yaml with its model file beside it,\n"
        "  for simulate --plan / estimate --plan (no overwrite without --force).\n");
    return 0;
  }
  if (!args.positional().empty()) throw UsageError("unexpected argument '" + args.positional().front() + "'");
  if (args.flag("force") && !args.get("emit")) throw UsageError("--force only applies to --emit");
  const std::string hw_path = resolve_hardware(args.required("hw"));
  const Cluster cluster = resize_cluster(load_cluster(hw_path), args.get("gpus"), args.get("nodes"), hw_path);
  search::MaxSizeOptions base;
  base.family = args.get("family").value_or("gpt");
  if (base.family != "gpt" && base.family != "llama")
    throw UsageError("--family must be gpt or llama, got '" + base.family + "'");
  if (auto s = args.get("seq")) base.seq_len = parse_positive("seq", *s);
  if (auto b = args.get("batch")) base.global_batch = parse_positive("batch", *b);
  if (auto t = args.get("threads")) base.search.threads = parse_positive("threads", *t);
  if (auto t = args.get("max-iteration")) {
    try {
      base.search.max_iteration_s = units::parse_seconds(*t);
    } catch (const std::exception& e) {
      throw UsageError("--max-iteration expects a duration like 30s or 2min, got '" + *t + "'");
    }
    if (!(base.search.max_iteration_s > 0)) throw UsageError("--max-iteration must be positive");
  }
  base.search.top_k = 1;
  SigintCancel sigint;
  base.search.cancel = sigint.flag();

  Variant variants[] = {{"any plan", "any-plan.yaml", search::SearchSpace{}, {}},
                        {"static (ZeRO-Offload)", "static-plan.yaml", search::SearchSpace::static_partition(), {}},
                        {"chunked (PatrickStar)", "chunked-plan.yaml", search::SearchSpace::chunked_only(), {}}};
  for (Variant& v : variants) {
    search::MaxSizeOptions o = base;
    o.search.space = v.space;
    o.search.space.max_tp = base.search.space.max_tp;
    o.heads_step = cluster.node.gpus;
    v.result = search::max_model_size(cluster, o);
  }

  if (auto dir = args.get("emit")) emit_variants(*dir, variants, cluster, base.family, hw_path, args.flag("force"));
  if (args.flag("json")) {
    JsonWriter w(true);
    w.begin_object();
    w.field("kind", "starfish.maxsize").field("hardware", cluster.name).field("nodes", cluster.nodes);
    w.field("gpus", cluster.total_gpus()).field("family", base.family);
    w.key("variants").begin_array();
    for (const Variant& v : variants) write_variant_json(w, v);
    w.end_array();
    w.end_object();
    std::fputs((w.str() + "\n").c_str(), stdout);
    return variants[0].result.found ? 0 : 1;
  }
  std::printf("largest %s model on %d x %s (%d GPUs)\n", base.family.c_str(), cluster.nodes, cluster.name.c_str(),
              cluster.total_gpus());
  std::printf("rule: hidden = 128 x heads, layers = heads (heads in steps of %d), then extra layers\n",
              cluster.node.gpus);
  std::printf("global batch: %lld sequences%s; every answer simulated\n\n",
              static_cast<long long>(base.global_batch > 0 ? base.global_batch : cluster.total_gpus()),
              base.global_batch > 0 ? "" : " (one per GPU)");
  std::printf("%-24s %10s %7s %7s %12s %7s  %-16s %s\n", "variant", "params", "layers", "hidden", "tokens/s", "MFU",
              "binding", "plan");
  for (const Variant& v : variants) {
    const search::MaxSizeResult& r = v.result;
    if (!r.found) {
      std::printf("%-24s %10s %7s %7s %12s %7s  %-16s %s\n", v.name, "none", "-", "-", "-", "-", r.binding.c_str(),
                  ("even " + r.next_model.name + " does not fit").c_str());
      continue;
    }
    const search::Row& best = r.best.rows.front();
    std::printf("%-24s %10s %7d %7d %12s %6.1f%%  %-16s %s\n", v.name, units::human_count(r.parameters).c_str(),
                r.model.layers, r.model.hidden, units::human_count(simulated(r).tokens_per_s).c_str(),
                100 * simulated(r).mfu, r.binding.c_str(), best.label().c_str());
  }
  const search::MaxSizeResult& any = variants[0].result;
  if (any.found) {
    std::printf("\nbest plan at %s: %s\n", any.model.name.c_str(), plan_summary(any.best.job(any.best.rows.front())).c_str());
    std::printf("next size %s fails: %s\n", any.next_model.name.c_str(),
                any.binding_detail.empty() ? any.binding.c_str() : any.binding_detail.c_str());
  }
  const auto& st = variants[1].result;
  const auto& ch = variants[2].result;
  if (st.found && ch.found)
    std::printf("chunk runtime vs static partition: %.2fx the model size\n",
                static_cast<double>(ch.parameters) / static_cast<double>(st.parameters));
  if (!ch.found)
    std::printf("(chunked plans run each rank's whole batch as one micro-batch: the chunk runtime has no gradient\n"
                " accumulation; %s suits them)\n",
                base.global_batch > 0 ? "a smaller --batch" : "a --batch smaller than the default ~4Mi tokens");
  return any.found ? 0 : 1;
}

}  // namespace starfish::cli

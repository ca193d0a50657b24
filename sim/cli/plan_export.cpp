#include "sim/cli/plan_export.h"

#include <algorithm>
#include <cmath>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <fmt/format.h>

#include "sim/cli/plan_text.h"
#include "sim/search/analytic.h"
#include "sim/search/plan_export.h"
#include "sim/spec/error.h"
#include "sim/spec/spec_io.h"
#include "sim/spec/units.h"

namespace starfish::cli {
namespace {

// A signal handler can reach only static storage: this one flag is the exception to the
// no-globals rule, owned by SigintCancel's lifetime.
std::atomic<bool>& sigint_flag() {
  static std::atomic<bool> flag{false};
  return flag;
}
void on_sigint(int) { sigint_flag().store(true); }
using Handler = void (*)(int);
Handler& previous_handler() {
  static Handler h = SIG_DFL;
  return h;
}

std::string pct(double f) {
  return fmt::format("{:.0f}%", 100 * f);
}

void write_tier(JsonWriter& w, const char* name, const TierUse& u) {
  w.key(name).begin_object();
  w.field("total_bytes", u.total()).field("capacity_bytes", u.capacity_bytes);
  w.field("headroom_fraction", search::headroom_fraction(u));
  w.end_object();
}

// The tier with the least headroom (what a bigger batch or model would hit first), as the
// table shows it: the analytic memory per GPU, and per node for the host and NVMe.
struct Binding {
  const char* tier = "GPU memory";
  double free_bytes = 0;
  double free_fraction = 1;
};
Binding binding_tier(const Estimate& e) {
  Binding b;
  bool any = false;
  auto consider = [&](const char* name, const TierUse& u) {
    if (u.capacity_bytes <= 0 || u.total() <= 0) return;
    const double f = search::headroom_fraction(u);
    if (!any || f < b.free_fraction) b = {name, u.capacity_bytes - u.total(), f};
    any = true;
  };
  consider("GPU memory", e.gpu);
  consider("CPU memory", e.cpu);
  consider("NVMe", e.nvme);
  return b;
}

// A row as good as the winner for a planner who wants margin: within 2% of its throughput with
// at least twice its headroom on the binding tier.
bool safer_than_winner(const search::Row& row, const search::Row& winner) {
  const double winner_free = binding_tier(winner.analytic).free_fraction;
  return row.tokens_per_s >= 0.98 * winner.tokens_per_s && binding_tier(row.analytic).free_fraction >= 2 * winner_free &&
         winner_free < 0.5;
}

// Prints `text` wrapped at 100 columns, continuation lines indented by two.
void print_wrapped(const std::string& text) {
  size_t start = 0, column = 0;
  std::string line;
  while (start < text.size()) {
    size_t end = text.find(' ', start);
    if (end == std::string::npos) end = text.size();
    const std::string word = text.substr(start, end - start);
    if (column > 0 && column + 1 + word.size() > 100) {
      fmt::print("{}\n", line);
      line = "  ";
      column = 2;
    } else if (column > 0) {
      line += ' ';
      ++column;
    }
    line += word;
    column += word.size();
    start = end + 1;
  }
  if (!line.empty()) fmt::print("{}\n", line);
}

// The abbreviations of the plan labels shown, each explained once.
void print_legend(const search::SearchResult& r, int limit) {
  bool pipeline = false, interleaved = false, sp = false, recompute = false, offload = false, chunk = false;
  bool experts = false, uneven = false, slots = false, cpu_embedding = false, context = false, other_framework = false;
  for (size_t k = 0; k < r.rows.size() && k < static_cast<size_t>(std::max(limit, 0)); ++k) {
    const search::Candidate& c = r.rows[k].candidate;
    pipeline = pipeline || c.pp > 1;
    interleaved = interleaved || c.virtual_stages > 1;
    sp = sp || c.sequence_parallel;
    recompute = recompute || c.recompute != Recompute::none;
    offload = offload || c.params != Tier::gpu || c.grads != Tier::gpu || c.optimizer != Tier::gpu;
    chunk = chunk || c.chunk_elements > 0;
    other_framework = other_framework || c.framework == Framework::deepspeed || c.framework == Framework::fsdp;
    cpu_embedding = cpu_embedding || c.cpu_embedding;
    experts = experts || c.ep > 1 || c.etp > 1;
    context = context || c.cp > 1;
    uneven = uneven || c.first_stage_layers > 0 || c.last_stage_layers > 0;
    slots = slots || c.embedding_slot || c.loss_slot;
  }
  std::string s = "legend: TP/PP/DP tensor-, pipeline-, data-parallel degrees;";
  if (pipeline) s += " 1f1b/gpipe/interleaved the pipeline schedule;";
  if (interleaved) s += " vN N virtual stages (model chunks) per GPU;";
  if (sp) s += " SP sequence parallelism;";
  if (context) s += " CPN context-parallel degree (ring attention over N ranks per sequence);";
  if (experts) s += " EPN/ETPN expert-parallel / expert-tensor-parallel degrees (MoE);";
  if (uneven) s += " firstN lastN layers of the first / last pipeline stage (the others share the rest);";
  if (slots)
    s += " slots:emb+loss the embedding and the loss each take a layer's place in the pipeline split "
         "(Megatron-core's --account-for-embedding/loss-in-pipeline-split);";
  s += " mbN micro-batch of N sequences; ZeRO-N ZeRO stage (0: none, 1: optimizer, 2: +grads, 3: +params sharded);";
  if (recompute)
    s += " rc-full/rc-selective activation recompute (none when absent; rc-full/N: the first N layers of each virtual "
         "stage; rc-selective(...): the modules it redoes, Megatron-core's --recompute-modules, core_attn alone when absent);";
  if (offload) s += " off:P/G/O the tiers of params/grads/optimizer states;";
  if (chunk) s += " chunk 2^N chunk runtime with chunks of 2^N elements;";
  if (other_framework)
    s += " ds/fsdp the offload runs as DeepSpeed (ZeRO-Offload / ZeRO-Infinity) or FSDP (CPU offload) runs it, "
         "where the plan's framework cannot;";
  if (cpu_embedding) s += " cpu-emb embeddings on the CPU (PatrickStar's use_cpu_embedding);";
  s += " free: memory headroom per GPU (CPU, NVMe: per node)";
  if (r.refined > 0) s += "; tier: des = the event simulator's numbers, analytic = the analytic model's";
  fmt::print("\n");
  print_wrapped(s);
}

// "why this plan": each row against the winner, its binding tier and headroom; and the advice
// a planner wants when a row is nearly as fast with much more headroom.
void print_why(const search::SearchResult& r, int limit) {
  const size_t n = std::min(r.rows.size(), static_cast<size_t>(std::max(limit, 0)));
  if (n == 0) return;
  const search::Row& first = r.rows.front();
  fmt::print("\nwhy (binding: the tier with the least headroom):\n");
  for (size_t k = 0; k < n; ++k) {
    const search::Row& row = r.rows[k];
    const Binding b = binding_tier(row.analytic);
    std::string line = k == 0 ? fmt::format("fastest, {} tokens/s", units::human_count(row.tokens_per_s))
                              : fmt::format("{:.1f}% slower than #1", 100 * (1 - row.tokens_per_s / first.tokens_per_s));
    line += "; binding: " + std::string(b.tier) + ", " + units::human_bytes(b.free_bytes) + " free (" + pct(b.free_fraction) + ")";
    if (k > 0 && safer_than_winner(row, first))
      line += fmt::format(": {:.1f}x the headroom of #1", b.free_fraction / binding_tier(first.analytic).free_fraction);
    fmt::print("  #{:<3} {}\n", k + 1, line);
  }
  for (size_t k = 1; k < n; ++k) {
    if (!safer_than_winner(r.rows[k], first)) continue;
    const Binding a = binding_tier(first.analytic), b = binding_tier(r.rows[k].analytic);
    fmt::print("advice: #{} is {:.1f}% slower than #1 with {:.1f}x its headroom ({} vs {} {} free): the safer choice\n", k + 1,
               100 * (1 - r.rows[k].tokens_per_s / first.tokens_per_s), b.free_fraction / a.free_fraction, pct(b.free_fraction),
               pct(a.free_fraction), a.tier);
    break;
  }
}

}  // namespace

ProgressBar::ProgressBar() : enabled_(isatty(STDERR_FILENO) == 1) {}

std::string ProgressBar::line(const search::Progress& p) {
  const bool refining = std::string(p.phase) == "refine";
  const double f = refining ? static_cast<double>(p.refined) / std::max<int64_t>(1, p.refine_total)
                            : static_cast<double>(p.done) / std::max<int64_t>(1, p.total);
  const int width = 30, filled = std::clamp(static_cast<int>(f * width), 0, width);
  std::string bar(filled, '#');
  bar += std::string(width - filled, '.');
  if (refining)
    return fmt::format("[{}] {:>4}  simulating the best plans: {} / {} (of {} fitting)", bar, pct(f), p.refined,
                       p.refine_total, units::human_count(p.fitting));
  return fmt::format("[{}] {:>4}  analytic: {} / {} plans, {} fit, best {} tokens/s", bar, pct(f),
                     units::human_count(p.done), units::human_count(p.total), units::human_count(p.fitting),
                     units::human_count(p.best_tokens_per_s));
}

void ProgressBar::operator()(const search::Progress& p) {
  if (p.total > 0) draw(line(p));
}

void ProgressBar::say(const std::string& text) { draw(text); }

void ProgressBar::draw(const std::string& text) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (drawn_ && now - last_drawn_ < std::chrono::milliseconds(100)) return;  // ten redraws a second at most
  last_drawn_ = now;
  const std::string shown = context_.empty() ? text : context_ + "  " + text;
  fmt::print(stderr, "\r{:<140.140}", shown);
  std::fflush(stderr);
  drawn_ = true;
}

void ProgressBar::finish() {
  if (drawn_) fmt::print(stderr, "\r{:>140}\r", "");
  drawn_ = false;
}

SigintCancel::SigintCancel() {
  sigint_flag().store(false);
  previous_handler() = std::signal(SIGINT, on_sigint);
}
SigintCancel::~SigintCancel() { std::signal(SIGINT, previous_handler()); }
const std::atomic<bool>* SigintCancel::flag() const { return &sigint_flag(); }

double parse_positive_number(const std::string& option, const std::string& text, const std::string& what) {
  double v = 0;
  try {
    size_t used = 0;
    v = std::stod(text, &used);
    if (used != text.size()) throw std::invalid_argument("trailing text");
  } catch (const std::exception&) {
    throw UsageError("--" + option + " expects " + what + ", got '" + text + "'");
  }
  if (!(v > 0) || !std::isfinite(v)) throw UsageError("--" + option + " must be positive, got '" + text + "'");
  return v;
}

int parse_positive(const std::string& option, const std::string& text) {
  size_t used = 0;
  long v = 0;
  try {
    v = std::stol(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || v < 1 || v > 1000000)
    throw UsageError("--" + option + " expects a positive whole number, got '" + text + "'");
  return static_cast<int>(v);
}

Cluster resize_cluster(Cluster c, const std::optional<std::string>& gpus, const std::optional<std::string>& nodes,
                       const std::string& hw_path) {
  if (gpus && nodes) throw UsageError("give --gpus or --nodes, not both");
  int n = 0;
  if (nodes) n = parse_positive("nodes", *nodes);
  if (gpus) {
    const int g = parse_positive("gpus", *gpus);
    if (g < c.node.gpus) {
      c.node.gpus = g;  // part of one node
      n = 1;
    } else if (g % c.node.gpus != 0) {
      throw UsageError("--gpus " + *gpus + " is not a whole number of " + std::to_string(c.node.gpus) + "-GPU nodes of " +
                       hw_path);
    } else {
      n = g / c.node.gpus;
    }
  }
  if (n > 0) {
    if (n > 1 && !c.node.nic) throw UsageError(hw_path + " has no node.nic, so it cannot span " + std::to_string(n) + " nodes");
    c.nodes = n;
  }
  return c;
}

void print_search_rows(const search::SearchResult& r, int limit) {
  using units::human_bytes;
  using units::human_count;
  const bool price = r.cluster.price_per_gpu_hour > 0;
  const bool refined = r.refined > 0;
  // The plan column is as wide as the widest label printed, so the columns after it line up.
  int width = 40;
  for (size_t k = 0; k < r.rows.size() && k < static_cast<size_t>(std::max(limit, 0)); ++k)
    width = std::max(width, static_cast<int>(r.rows[k].label().size()));
  fmt::print("{:<4} {:<{}} {:>11} {:>6} {:>6} {:>9} {:>17} {:>8} {:>8}{}{}\n", "#", "plan", width, "tokens/s", "MFU", "bubble",
             "iteration", "GPU mem (free)", "CPU free", "NVMe free", price ? "   $/Mtok" : "", refined ? "  tier" : "");
  int i = 0;
  for (const search::Row& row : r.rows) {
    if (i >= limit) break;
    const Estimate& e = row.analytic;
    const bool des = row.refined.has_value();
    const double mfu = des ? row.refined->mfu : e.mfu;
    const double bubble = des ? row.refined->bubble_fraction : e.bubble_fraction;
    const double iter = des ? row.refined->iteration_s : e.time.iteration_s;
    std::string gpu = human_bytes(e.gpu.total()) + " (" + pct(search::headroom_fraction(e.gpu)) + ")";
    std::string cpu = e.cpu.capacity_bytes > 0 ? pct(search::headroom_fraction(e.cpu)) : "-";
    std::string nvme = e.nvme.capacity_bytes > 0 ? pct(search::headroom_fraction(e.nvme)) : "-";
    const std::string cost = price ? fmt::format(" {:>9.3f}", row.cost_per_million_tokens) : "";
    fmt::print("{:<4} {:<{}} {:>11} {:>5.1f}% {:>5.1f}% {:>9} {:>17} {:>8} {:>8}{}{}\n", ++i, row.label(), width,
               human_count(row.tokens_per_s), 100 * mfu, 100 * bubble, units::human_seconds(iter), gpu, cpu, nvme, cost,
               refined ? (des ? "  des" : "  analytic") : "");
  }
  print_legend(r, limit);
  print_why(r, limit);
}

void print_shortfall(const search::SearchResult& r, int asked) {
  const size_t shown = std::min(r.rows.size(), static_cast<size_t>(std::max(asked, 0)));
  if (shown >= static_cast<size_t>(asked)) return;
  std::string why;
  auto add = [&](const std::string& part) { why += (why.empty() ? "" : "; ") + part; };
  if (r.cancelled) add("the search was interrupted");
  if (r.fitting < asked)
    add(r.fitting == 1 ? std::string("only 1 plan fits the analytic model")
                       : "only " + std::to_string(r.fitting) + " plans fit the analytic model");
  if (!r.simulator_rejected.empty())
    add("the event simulator rejected " + std::to_string(r.simulator_rejected.size()) + " of those it simulated (below)");
  fmt::print("\n{} of the {} rows asked for{}{}\n", shown, asked, why.empty() ? "" : ": ", why);
}

void print_rejections(const search::SearchResult& r, int limit) {
  if (r.chunked_accumulation_left_out > 0)
    fmt::print("\nleft out: {} chunked plans with several micro-batches per rank (the chunk runtime has no gradient\n"
               "  accumulation, PatrickStar's grads overwrite the fp16 param chunks: a chunked plan runs each\n"
               "  data-parallel rank's whole batch, global batch / DP sequences, as one micro-batch; a smaller\n"
               "  --batch or more data parallelism suits them)\n",
               r.chunked_accumulation_left_out);
  if (r.rejected.empty()) return;
  fmt::print("\nrejected ({} plans; {} by the model-state bound before evaluation):\n", r.enumerated - r.fitting, r.pruned);
  int i = 0;
  for (const auto& f : r.rejected) {
    if (i++ >= limit) {
      fmt::print("  ... {} more families\n", r.rejected.size() - limit);
      break;
    }
    fmt::print("  {}\n", f.text());
  }
}

void write_search_json(JsonWriter& w, const search::SearchResult& r, const Exports* exports) {
  w.begin_object();
  w.field("model", r.model.name).field("hardware", r.cluster.name);
  w.field("nodes", r.cluster.nodes).field("gpus", r.cluster.total_gpus());
  w.field("global_batch", r.training.global_batch);
  w.field("enumerated", r.enumerated).field("evaluated", r.evaluated).field("pruned", r.pruned);
  w.field("fitting", r.fitting).field("refined", r.refined).field("cancelled", r.cancelled);
  w.field("chunked_accumulation_left_out", r.chunked_accumulation_left_out);
  w.field("elapsed_s", r.elapsed_s).field("threads", r.threads);
  w.key("rows").begin_array();
  for (const search::Row& row : r.rows) {
    const Estimate& e = row.analytic;
    w.begin_object();
    w.field("label", row.label()).field("index", row.index);
    w.key("plan");
    write_plan_json(w, r.job(row));
    w.field("tokens_per_s", row.tokens_per_s);
    if (r.cluster.price_per_gpu_hour > 0) w.field("cost_per_million_tokens", row.cost_per_million_tokens);
    w.key("analytic").begin_object();
    w.field("tokens_per_s", e.tokens_per_s).field("mfu", e.mfu).field("tflops_per_gpu", e.tflops_per_gpu);
    w.field("bubble_fraction", e.bubble_fraction).field("iteration_s", e.time.iteration_s);
    w.end_object();
    if (row.refined) {
      const search::Evaluation& v = *row.refined;
      w.key("refined").begin_object();
      w.field("source", v.source).field("fits", v.fits).field("tokens_per_s", v.tokens_per_s).field("mfu", v.mfu);
      w.field("bubble_fraction", v.bubble_fraction).field("iteration_s", v.iteration_s);
      if (!v.fits) w.field("why_not", v.why_not);
      w.end_object();
    }
    w.key("memory").begin_object();
    write_tier(w, "gpu_per_gpu", e.gpu);
    write_tier(w, "cpu_per_node", e.cpu);
    write_tier(w, "nvme_per_node", e.nvme);
    w.end_object();
    w.end_object();
  }
  w.end_array();
  w.key("rejected").begin_array();
  for (const auto& f : r.rejected) {
    w.begin_object();
    w.field("family", f.family).field("constraint", constraint_name(f.constraint)).field("needed", f.needed);
    w.field("capacity", f.capacity).field("plans", f.plans).field("text", f.text());
    w.end_object();
  }
  w.end_array();
  if (exports) write_exports_json(w, r, *exports);
  w.end_object();
}

namespace {

// A file name from a spec name: letters, digits, '.', '_' and '-' kept, anything else '-'.
std::string file_name_of(const std::string& name) {
  std::string out = name.empty() ? "unnamed" : name;
  for (char& ch : out)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '.' && ch != '_' && ch != '-') ch = '-';
  return out + ".yaml";
}

// The file a spec is written to beside the plans, and its text: a loaded file as it is (its
// comments and sources kept), else the spec written out.
template <typename Spec>
std::pair<std::string, std::string> spec_file(const Spec& spec) {
  namespace fs = std::filesystem;
  if (!spec.provenance.file.empty() && fs::exists(spec.provenance.file)) {
    std::ifstream in(spec.provenance.file, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return {fs::path(spec.provenance.file).filename().string(), text.str()};
  }
  return {file_name_of(spec.name), to_yaml(spec)};
}

}  // namespace

void emit_answers(const std::string& dir, const std::vector<EmittedAnswer>& answers, const std::string& hw_path,
                  bool force) {
  namespace fs = std::filesystem;
  const Cluster hw_file = load_cluster(hw_path);
  std::map<std::string, std::string> files;  // name in dir -> text
  auto add = [&](const std::string& name, const std::string& text) {
    auto [it, added] = files.emplace(name, text);
    if (!added && it->second != text)
      throw SpecError(dir + "/" + name + ": two different files of the same name would be written");
  };
  for (const EmittedAnswer& a : answers) {
    const auto [model_file, model_text] = spec_file(a.job.model);
    add(model_file, model_text);
    std::string hw_ref = fs::relative(fs::absolute(hw_path), fs::absolute(dir)).string();
    if (!(a.job.cluster.node == hw_file.node)) {  // resized below one node: the file would not say it
      Cluster node = a.job.cluster;
      node.nodes = 1;
      node.provenance = {};
      const auto [hw_name, hw_text] = spec_file(node);
      add(hw_name, hw_text);
      hw_ref = hw_name;
    }
    add(a.file, "# " + a.title + "\n" + search::plan_file_yaml(a.job, model_file, hw_ref));
  }
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw SpecError(dir + ": cannot create the directory: " + ec.message());
  if (!force)
    for (const auto& [name, text] : files)
      if (fs::exists(fs::path(dir) / name))
        throw SpecError((fs::path(dir) / name).string() + ": already exists (refusing to overwrite it; --force replaces it)");
  for (const auto& [name, text] : files) {
    const std::string path = (fs::path(dir) / name).string();
    save_text_file(path, text, true);
    fmt::print(stderr, "wrote {}\n", path);
  }
}

namespace {

// One framework an export is made for: how the user reads its name, the framework its plans
// are costed as, and what it cannot run.
struct Target {
  const char* name;
  Framework framework;
  std::string (*unsupported)(const Plan&, const Training&, const Model&);
  std::string (*unsupported_job)(const Job&);  // the same, with the plan file's line
  std::string (*model_unsupported)(const Model&);  // what no plan changes
};
const Target kMegatron{"Megatron-LM", Framework::megatron_lm,
                       [](const Plan& p, const Training& t, const Model&) { return search::megatron_unsupported(p, t); },
                       search::megatron_unsupported, [](const Model&) { return std::string(); }};
const Target kDeepSpeed{"DeepSpeed", Framework::deepspeed,
                        [](const Plan& p, const Training& t, const Model&) { return search::deepspeed_unsupported(p, t); },
                        search::deepspeed_unsupported, search::deepspeed_model_unsupported};
const Target kMegatronBridge{
    "Megatron-Bridge", Framework::megatron_core,
    [](const Plan& p, const Training& t, const Model&) { return search::megatron_bridge_unsupported(p, t); },
    search::megatron_bridge_unsupported, search::megatron_bridge_model_unsupported};
const Target kTorchtitan{"torchtitan", Framework::fsdp, search::torchtitan_unsupported, search::torchtitan_unsupported,
                         search::torchtitan_model_unsupported};

// The plan an export is made from: the best row of the search that the framework runs as
// simulated, else the winner of a second search over only the plans it runs, each costed as it
// runs them (one analytic pass and a few simulations, never thousands).
FrameworkExport choose(const search::SearchResult& r, const Target& target, const search::SearchOptions& options) {
  FrameworkExport x;
  x.framework = target.name;
  x.model_refused = target.model_unsupported(r.model);
  if (!x.model_refused.empty()) return x;  // no plan of this model is one the export describes
  for (size_t i = 0; i < r.rows.size(); ++i)
    if (target.unsupported(r.rows[i].plan, r.training, r.model).empty()) {
      x.row = r.rows[i];
      x.rank = static_cast<int>(i) + 1;
      break;
    }
  if (!r.rows.empty() && x.rank != 1) x.why_not_first = target.unsupported_job(r.job(r.rows.front()));
  if (x.row || r.cancelled) return x;
  search::SearchOptions o = options;
  o.top_k = 1;
  o.refine_top = 1;
  o.space.framework = target.framework;
  // A Megatron-core search (search --framework megatron-core) exports Megatron-core plans, fp8
  // ones included: Megatron-LM's export takes both.
  if (target.framework == Framework::megatron_lm && options.space.framework == Framework::megatron_core)
    o.space.framework = Framework::megatron_core;
  const Training training = r.training;
  const Model model = r.model;
  o.admit = [&target, training, model](const Plan& p) { return target.unsupported(p, training, model).empty(); };
  const search::SearchResult own = search::search(r.model, r.cluster, r.training, o);
  if (!own.rows.empty() && (!o.refiner || search::has_simulated_answer(own))) x.row = own.rows.front();
  return x;
}

enum class Kind { megatron, megatron_bridge, deepspeed, torchtitan };

// The exports asked for, in the order they are printed.
std::vector<std::pair<Kind, const FrameworkExport*>> asked(const Exports& e) {
  std::vector<std::pair<Kind, const FrameworkExport*>> out;
  if (e.megatron) out.emplace_back(Kind::megatron, &*e.megatron);
  if (e.megatron_bridge) out.emplace_back(Kind::megatron_bridge, &*e.megatron_bridge);
  if (e.deepspeed) out.emplace_back(Kind::deepspeed, &*e.deepspeed);
  if (e.torchtitan) out.emplace_back(Kind::torchtitan, &*e.torchtitan);
  return out;
}

}  // namespace

Exports make_exports(const search::SearchResult& r, const Args& args, const search::SearchOptions& options) {
  Exports e;
  if (auto path = args.get("nvme-path")) e.options.nvme_path = *path;
  if (args.flag("megatron")) e.megatron = choose(r, kMegatron, options);
  if (args.flag("megatron-bridge")) e.megatron_bridge = choose(r, kMegatronBridge, options);
  if (args.flag("deepspeed")) e.deepspeed = choose(r, kDeepSpeed, options);
  if (args.flag("torchtitan")) e.torchtitan = choose(r, kTorchtitan, options);
  return e;
}

void print_exports(const search::SearchResult& r, const Exports& e) {
  for (const auto& [kind, x] : asked(e)) {
    if (!x->model_refused.empty()) {
      fmt::print("\n{}: cannot export this model: {}\n", x->framework, x->model_refused);
      continue;
    }
    if (!x->row) {
      fmt::print("\n{}: no plan it runs fits (plan #1: {})\n", x->framework, x->why_not_first);
      continue;
    }
    if (x->rank != 1 && !x->why_not_first.empty()) fmt::print("\n({} cannot run plan #1: {})", x->framework, x->why_not_first);
    std::string which = x->rank > 0 ? "plan #" + std::to_string(x->rank) + ", " + x->row->label()
                                    : "the best plan it runs, simulated as it runs it: " + x->row->label() + ", " +
                                          units::human_count(x->row->tokens_per_s) + " tokens/s";
    const Job job = r.job(*x->row);
    const Plan& p = job.plan;
    switch (kind) {
      case Kind::megatron:
        fmt::print("\nMegatron-LM arguments ({}):\n{}", which, search::megatron_arguments(job));
        break;
      case Kind::megatron_bridge:
        fmt::print("\nMegatron-Bridge command ({}):\n{}", which, search::megatron_bridge_command(job));
        break;
      case Kind::deepspeed:
        fmt::print("\nDeepSpeed config ({}; the launcher sets TP {}, PP {}{}{}):\n{}", which, p.tp, p.pp,
                   p.sequence_parallel ? ", sequence parallelism" : "",
                   p.recompute == Recompute::selective ? ", selective recompute" : "", search::deepspeed_config(job, e.options));
        break;
      case Kind::torchtitan:
        fmt::print("\ntorchtitan recipe, starfish_plan.py ({}):\n{}", which, search::torchtitan_recipe(job).text);
        break;
    }
  }
}

void write_exports_json(JsonWriter& w, const search::SearchResult& r, const Exports& e) {
  if (asked(e).empty()) return;
  w.key("exports").begin_object();
  for (const auto& [kind, x] : asked(e)) {
    static const char* const keys[] = {"megatron", "megatron_bridge", "deepspeed", "torchtitan"};
    w.key(keys[static_cast<int>(kind)]).begin_object();
    if (!x->model_refused.empty()) w.field("refused", x->model_refused);
    if (!x->why_not_first.empty()) w.field("plan_1_refused", x->why_not_first);
    if (x->row) {
      const Job job = r.job(*x->row);
      w.field("label", x->row->label()).field("row", x->rank).field("tokens_per_s", x->row->tokens_per_s);
      w.key("plan");
      write_plan_json(w, job);
      if (kind == Kind::megatron) {
        w.key("arguments").begin_array();
        for (const auto& [name, value] : search::megatron_argument_list(job)) {
          w.value(name);
          if (!value.empty()) w.value(value);
        }
        w.end_array();
      } else if (kind == Kind::megatron_bridge) {
        w.field("recipe", "vanilla_gpt_pretrain_config");
        w.key("overrides").begin_array();
        for (const auto& [key, value] : search::megatron_bridge_overrides(job)) w.value(key + "=" + value);
        w.end_array();
        w.field("command", search::megatron_bridge_command(job));
      } else if (kind == Kind::deepspeed) {
        // What the launcher (Megatron-DeepSpeed) sets, not the JSON.
        w.field("tensor_parallel", job.plan.tp).field("pipeline_parallel", job.plan.pp);
        w.field("sequence_parallel", job.plan.sequence_parallel).field("recompute", to_string(job.plan.recompute));
        w.key("config");
        search::write_deepspeed_config(w, job, e.options);
      } else {
        w.field("module", "starfish_plan").field("config", "starfish_plan");
        w.field("launch", search::torchtitan_launch(job)).field("recipe", search::torchtitan_recipe(job).text);
      }
    }
    w.end_object();
  }
  w.end_object();
}

void emit_winner(const search::SearchResult& r, const Args& args, const std::string& model_path,
                 const std::string& hw_path) {
  if (!args.get("emit")) return;
  if (r.rows.empty()) throw std::runtime_error("no plan fits, so there is nothing to export");
  namespace fs = std::filesystem;
  const std::string path = *args.get("emit");
  const fs::path dir = fs::absolute(fs::path(path)).parent_path();
  auto rel = [&](const std::string& p) { return fs::relative(fs::absolute(p), dir).string(); };
  std::string text = "# starfish search: best plan for " + r.model.name + " on " + std::to_string(r.cluster.nodes) +
                     " x " + r.cluster.name + " (" + std::to_string(r.cluster.total_gpus()) + " GPUs)";
  if (r.cluster.nodes != 1) text += "; run with --nodes " + std::to_string(r.cluster.nodes);
  text += "\n" + search::plan_file_yaml(r.job(r.rows.front()), rel(model_path), rel(hw_path));
  save_text_file(path, text, args.flag("force"));
  fmt::print(stderr, "wrote {}\n", path);
}

}  // namespace starfish::cli

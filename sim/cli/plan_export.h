#pragma once
// What the search verbs (search, maxsize, size-cluster) share on the command line: the progress
// bar, Ctrl-C handling, the ranked table and JSON of a search, and the exports of its winner
// (--emit plan.yaml, --megatron, --megatron-bridge, --deepspeed, --torchtitan; the exporters are in
// sim/search/plan_export.h so the GUI can call them too).
#include <atomic>
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "sim/cli/cli.h"
#include "sim/search/plan_export.h"
#include "sim/search/search.h"
#include "sim/spec/json_writer.h"

namespace starfish::cli {

// Draws "[#####.....]  45%  analytic: 150 K / 335 K plans, 12 K fit, best 199 K tokens/s", then
// "[###.......]  30%  simulating the best plans: 3 / 10 (of 12 K fitting)" on stderr when stderr
// is a terminal (nothing otherwise), and clears the line when done. Every verb that can take
// more than a second draws one: search, maxsize and size-cluster (per probe), simulate.
class ProgressBar {
 public:
  ProgressBar();
  static std::string line(const search::Progress& p);  // the text of one redraw
  void operator()(const search::Progress& p);
  // What the bar is part of, drawn before it: "Megatron 3D, size 4: 13.1 B parameters".
  void set_context(std::string context) { context_ = std::move(context); }
  // One line of progress without a bar (a phase of a single long step: "simulating").
  void say(const std::string& text);
  void finish();
  bool enabled() const { return enabled_; }

 private:
  void draw(const std::string& text);
  bool enabled_ = false;
  bool drawn_ = false;
  std::string context_;
  std::chrono::steady_clock::time_point last_drawn_{};
};

// While alive, Ctrl-C (SIGINT) sets flag() instead of killing the process, so a search returns
// the best plans found so far; the previous handler is restored on destruction.
class SigintCancel {
 public:
  SigintCancel();
  ~SigintCancel();
  SigintCancel(const SigintCancel&) = delete;
  SigintCancel& operator=(const SigintCancel&) = delete;
  const std::atomic<bool>* flag() const;
};

// The cluster of --gpus N (fewer GPUs of one node, or whole nodes) or --nodes N.
Cluster resize_cluster(Cluster cluster, const std::optional<std::string>& gpus, const std::optional<std::string>& nodes,
                       const std::string& hw_path);
int parse_positive(const std::string& option, const std::string& text);
// A positive finite real ("30", "7.5", "1e3"); `what` names it in the error ("a number of days").
double parse_positive_number(const std::string& option, const std::string& text, const std::string& what);

void print_search_rows(const search::SearchResult& r, int limit);
void print_rejections(const search::SearchResult& r, int limit);
// Why fewer rows than asked for are shown (nothing when `asked` are shown): only that many plans
// fit, the simulator rejected some of the analytic tier's best, or the search was interrupted.
void print_shortfall(const search::SearchResult& r, int asked);
struct Exports;
// The search as JSON; with `exports`, their "exports" object too.
void write_search_json(JsonWriter& w, const search::SearchResult& r, const Exports* exports = nullptr);

// One answer of a verb, to be written as a plan file: `file` is its name in the --emit
// directory ("plan.yaml"), `title` its first comment line.
struct EmittedAnswer {
  std::string file;
  std::string title;
  Job job;
};

// --emit DIR of maxsize and size-cluster: each answer as DIR/<file>, a plan file that names its
// model file beside it (the model's own file copied as it is, or written from the Model when it
// was built in code, as maxsize's are) and its hardware file by a path relative to DIR (the file
// given, or one written beside when the CLI changed the node, --gpus N below one node), with the
// node count. `simulate --plan` and `estimate --plan` take them as they are. DIR is created
// when missing; nothing is written when one of the files exists, unless `force`. Says on
// stderr what it wrote.
void emit_answers(const std::string& dir, const std::vector<EmittedAnswer>& answers, const std::string& hw_path,
                  bool force);

// --megatron / --megatron-bridge / --deepspeed / --torchtitan: the plan each export is made from. It is the best row
// of the search when the framework runs it as simulated (rank = its row), else the winner of a
// second search over only the plans the framework runs, costed as it runs them (rank 0): an
// analytic pass and a simulation or two, never thousands of plans re-simulated.
struct FrameworkExport {
  std::string framework;           // "Megatron-LM", "Megatron-Bridge", "DeepSpeed", "torchtitan"
  std::optional<search::Row> row;  // none: no plan the framework runs fits
  int rank = 0;                    // 1-based row of the search; 0: from the framework's own search
  std::string why_not_first;       // why the framework cannot run row #1 ("" when it can)
  std::string model_refused;       // why its export cannot describe the model at all ("" when it can)
};
struct Exports {
  std::optional<FrameworkExport> megatron, megatron_bridge, deepspeed, torchtitan;
  search::ExportOptions options;  // --nvme-path
};
Exports make_exports(const search::SearchResult& r, const Args& args, const search::SearchOptions& options);
void print_exports(const search::SearchResult& r, const Exports& e);
// "exports": {"megatron": {"label", "row", "plan", "arguments": [...]},
//             "megatron_bridge": {..., "recipe", "overrides": ["key=value", ...], "command"},
//             "deepspeed": {..., "config"},
//             "torchtitan": {..., "module", "config", "launch", "recipe"}}
void write_exports_json(JsonWriter& w, const search::SearchResult& r, const Exports& e);

// --emit plan.yaml [--force]: the winner as a plan file naming the model and hardware files.
void emit_winner(const search::SearchResult& r, const Args& args, const std::string& model_path,
                 const std::string& hw_path);

}  // namespace starfish::cli

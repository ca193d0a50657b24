// What a new user meets in the first hour, run as they run it: the README's setup command, the
// main job's table, `compare`'s exit status.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "support/run_command.h"

namespace starfish {
namespace {

using testing::run_command;
using testing::slurp;

const std::string kCli = STARFISH_CLI;
const std::string kRoot = STARFISH_SOURCE_DIR;

// The README's setup line ("bash scripts/setup-debian.sh   # ..."), without its comment.
std::string readme_setup_command() {
  const std::string readme = slurp(kRoot + "/README.md");
  const size_t at = readme.find("scripts/setup-debian.sh");
  if (at == std::string::npos) return "";
  const size_t begin = readme.rfind('\n', at) + 1;
  std::string line = readme.substr(begin, readme.find('\n', at) - begin);
  line = line.substr(0, line.find('#'));
  while (!line.empty() && line.back() == ' ') line.pop_back();
  return line;
}

// A folder on PATH with an `id` that says uid 1000 (and, when asked, a `sudo`), so the script's
// non-root paths run without being another user.
std::string fake_user_bin(bool with_sudo) {
  const std::string dir = "/tmp/starfish_fake_user_" + std::to_string(::getpid()) + (with_sudo ? "_sudo" : "");
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/id") << "#!/bin/sh\necho 1000\n";
  std::filesystem::permissions(dir + "/id", std::filesystem::perms::owner_all);
  if (with_sudo) {
    std::ofstream(dir + "/sudo") << "#!/bin/sh\nexit 99\n";
    std::filesystem::permissions(dir + "/sudo", std::filesystem::perms::owner_all);
  }
  return dir;
}

TEST(FirstHour, ReadmeSetupCommandRunsAsItIsWritten) {
  const std::string command = readme_setup_command();
  ASSERT_EQ(command, "bash scripts/setup-debian.sh") << "the README's setup line changed: " << command;
  // As whoever runs the tests (root in CI, on a minimal image without sudo).
  const auto r = run_command("cd " + kRoot + " && " + command + " --dry-run");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const bool root = ::geteuid() == 0;
  EXPECT_EQ(r.out.rfind(root ? "env DEBIAN_FRONTEND=noninteractive apt-get update" : "sudo env DEBIAN_FRONTEND", 0), 0u)
      << r.out;
  EXPECT_NE(r.out.find("apt-get install -y -q --no-install-recommends build-essential cmake"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("libyaml-cpp-dev"), std::string::npos) << r.out;
}

TEST(FirstHour, SetupScriptUsesSudoOnlyForOtherUsers) {
  // Not root, sudo present: every apt-get goes through sudo.
  const std::string with_sudo = fake_user_bin(true);
  auto r = run_command("cd " + kRoot + " && PATH=" + with_sudo + ":$PATH /bin/bash scripts/setup-debian.sh --dry-run");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("sudo env DEBIAN_FRONTEND=noninteractive apt-get update -q\n"
                        "sudo env DEBIAN_FRONTEND=noninteractive apt-get install",
                        0),
            0u)
      << r.out;
  // Not root and no sudo: one line saying what to do, exit 1.
  const std::string without = fake_user_bin(false);
  r = run_command("cd " + kRoot + " && PATH=" + without + " /bin/bash scripts/setup-debian.sh --dry-run");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "setup-debian.sh: not root and no sudo: run it as root (su -c 'bash scripts/setup-debian.sh')\n");
  r = run_command("cd " + kRoot + " && /bin/bash scripts/setup-debian.sh --frobnicate");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "usage: bash scripts/setup-debian.sh [--dry-run]\n");
  std::filesystem::remove_all(with_sudo);
  std::filesystem::remove_all(without);
}


// A move log of one copy of `chunk` per line.
std::string write_moves(const std::string& name, std::initializer_list<int> chunks) {
  const std::string path = "/tmp/starfish_first_hour_" + std::to_string(::getpid()) + "_" + name;
  std::ofstream out(path);
  for (int c : chunks)
    out << R"({"rank":0,"moment":1,"chunk":)" << c << R"(,"op":"copy","from":"gpu","to":"cpu","bytes":8,"reason":"eviction"})"
        << "\n";
  return path;
}

TEST(FirstHour, CompareExitsNonZeroWhenTheMoveLogsDiverge) {
  const std::string report = "/tmp/starfish_first_hour_" + std::to_string(::getpid()) + "_report.json";
  std::ofstream(report) << R"({"iteration_s": 1.5, "moves": 3})" << "\n";
  const std::string base = write_moves("a.jsonl", {1, 2, 3});
  const std::string same = write_moves("b.jsonl", {1, 2, 3});
  const std::string differs = write_moves("c.jsonl", {1, 4, 3});
  const std::string shorter = write_moves("d.jsonl", {1, 2});
  auto compare = [&](const std::string& right) {
    return run_command(kCli + " compare " + report + " " + report + " --moves " + base + " " + right);
  };
  auto r = compare(same);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("move logs: identical (3 moves)"), std::string::npos) << r.out;
  r = compare(differs);
  EXPECT_EQ(r.exit_code, 3) << r.out;
  EXPECT_NE(r.out.find("move logs: move 1 differs:"), std::string::npos) << r.out;
  r = compare(shorter);
  EXPECT_EQ(r.exit_code, 3) << r.out;
  EXPECT_NE(r.out.find("move 2 differs: " + std::string(R"({"rank":0,"moment":1,"chunk":3)")), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("vs <end of log>"), std::string::npos) << r.out;
  // --help says so, for whoever writes the script.
  r = run_command(kCli + " compare --help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("exit status: 0 when the move logs are identical (or --moves is not given), 3 when they\n"
                       "  diverge"),
            std::string::npos)
      << r.out;
  for (const std::string& f : {report, base, same, differs, shorter}) std::remove(f.c_str());
}


// The table rows of a `search` output: lines starting with the rank ("1    TP4 PP8 ...").
std::vector<std::string> table_rows(const std::string& out) {
  std::vector<std::string> rows;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);)
    if (std::regex_search(line, std::regex("^[0-9]+ +TP[0-9]+ PP"))) rows.push_back(line);
  return rows;
}

std::string line_with(const std::string& out, const std::string& needle) {
  const size_t at = out.find(needle);
  if (at == std::string::npos) return "";
  const size_t begin = out.rfind('\n', at) + 1;
  return out.substr(begin, out.find('\n', at) - begin);
}

TEST(FirstHour, MainJobExplainsItsAbbreviationsAndEachRow) {
  const auto r = run_command("cd " + kRoot + " && " + kCli + " search --model gpt3-175b --hw dgx-a100-80gb --nodes 128");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> rows = table_rows(r.out);
  ASSERT_EQ(rows.size(), 10u) << r.out;
  const size_t legend_at = r.out.find("\nlegend: TP/PP/DP tensor-, pipeline-, data-parallel degrees;");
  ASSERT_NE(legend_at, std::string::npos) << r.out;
  const std::string legend = r.out.substr(legend_at, r.out.find("\n\n", legend_at + 1) - legend_at);
  // Every abbreviation a shown label uses is in the legend.
  auto label_uses = [&](const std::string& token) {
    return std::any_of(rows.begin(), rows.end(), [&](const std::string& row) { return row.find(token) != std::string::npos; });
  };
  const std::pair<const char*, const char*> explained[] = {
      {" interleaved ", "1f1b/gpipe/interleaved the pipeline"}, {" v", "vN N virtual stages"},
      {" SP ", "SP sequence parallelism"},                      {" mb", "mbN micro-batch of N sequences"},
      {" ZeRO-", "ZeRO-N ZeRO stage"},                          {" rc-", "rc-full/rc-selective activation recompute"},
      {" off:", "off:P/G/O the tiers of"},                      {" chunk 2^", "chunk 2^N chunk runtime"},
      {" des", "tier: des = the event simulator's"}};
  for (const auto& [token, text] : explained) {
    std::string flat = legend;
    std::replace(flat.begin(), flat.end(), '\n', ' ');
    for (size_t at; (at = flat.find("   ")) != std::string::npos;) flat.erase(at, 2);  // wrapped lines' indent
    if (label_uses(token)) EXPECT_NE(flat.find(text), std::string::npos) << token << " unexplained in:\n" << legend;
  }
  // One "why" line per row: its binding tier and headroom, the same headroom the table shows.
  ASSERT_NE(r.out.find("\nwhy (binding: the tier with the least headroom):\n"), std::string::npos) << r.out;
  for (size_t k = 0; k < rows.size(); ++k) {
    const std::string why = line_with(r.out, "  #" + std::to_string(k + 1) + (k + 1 < 10 ? "   " : "  "));
    ASSERT_FALSE(why.empty()) << "no why line for row " << k + 1 << "\n" << r.out;
    EXPECT_NE(why.find(k == 0 ? "fastest, " : "% slower than #1; "), std::string::npos) << why;
    EXPECT_NE(why.find("; binding: "), std::string::npos) << why;
    if (why.find("binding: GPU memory") != std::string::npos) {
      const std::string free = why.substr(why.find('(') + 1, why.find(')') - why.find('(') - 1);  // "14%"
      EXPECT_NE(rows[k].find("(" + free + ")"), std::string::npos) << rows[k] << " vs " << why;
    }
  }
  // Advice when a row is nearly as fast with far more headroom: the first such row is named.
  const size_t safer = r.out.find("x the headroom of #1");
  if (safer != std::string::npos) {
    const std::string why = line_with(r.out, "x the headroom of #1");
    const std::string rank = why.substr(why.find('#') + 1, why.find(' ', why.find('#')) - why.find('#') - 1);
    EXPECT_NE(r.out.find("\nadvice: #" + rank + " is "), std::string::npos) << r.out;
    EXPECT_NE(line_with(r.out, "advice: ").find("the safer choice"), std::string::npos);
  } else {
    EXPECT_EQ(r.out.find("advice: "), std::string::npos) << r.out;
  }
}

TEST(FirstHour, SearchSaysWhyItShowsFewerRowsThanAsked) {
  // One GPU and a batch of one: few plans exist, so --top 100 cannot be met.
  auto r = run_command(kCli + " search --model gpt2-small --hw dgx-a100-80gb --gpus 1 --batch 1 --top 100 --analytic-only");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const size_t rows = table_rows(r.out).size();
  ASSERT_GT(rows, 0u);
  ASSERT_LT(rows, 100u);
  const std::string header = line_with(r.out, " plans, ");  // "N plans, F fit; ..."
  const std::string fit = header.substr(header.find(", ") + 2, header.find(" fit") - header.find(", ") - 2);
  EXPECT_EQ(std::to_string(rows), fit) << r.out;
  EXPECT_NE(r.out.find("\n" + std::to_string(rows) + " of the 100 rows asked for: only " + fit +
                       " plans fit the analytic model\n"),
            std::string::npos)
      << r.out;
  // Nothing fits at all: still said why.
  r = run_command(kCli + " search --model gpt2-small --hw dgx-a100-80gb --nodes 4 --batch 3");
  EXPECT_NE(r.out.find("no plan fits.\n\n0 of the 10 rows asked for: only 0 plans fit the analytic model\n"),
            std::string::npos)
      << r.out;
  // All rows asked for are shown: no such line.
  r = run_command(kCli + " search --model gpt2-small --hw dgx-a100-80gb --top 3 --analytic-only");
  EXPECT_EQ(table_rows(r.out).size(), 3u) << r.out;
  EXPECT_EQ(r.out.find("rows asked for"), std::string::npos) << r.out;
}

TEST(FirstHour, SimulatorRejectionsAreReplacedOrExplained) {
  // The issue's case: the analytic tier passed plans the simulator then rejected, and the table
  // said "no plan fits" (or showed fewer rows) without a word.
  const auto r = run_command(kCli + " search --model llama2-7b --hw consumer-pc --top 3");
  ASSERT_LE(r.exit_code, 1) << r.err;
  const size_t rows = table_rows(r.out).size();
  if (rows < 3)
    EXPECT_NE(r.out.find("\n" + std::to_string(rows) + " of the 3 rows asked for: "), std::string::npos) << r.out;
  if (r.out.find("rejected by the simulator: ") != std::string::npos && rows < 3)
    EXPECT_NE(r.out.find("the event simulator rejected "), std::string::npos) << r.out;
  // Chunked plans with gradient accumulation are not in the space, and the output says so.
  EXPECT_NE(r.out.find("\nleft out: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" chunked plans with several micro-batches per rank (the chunk runtime has no gradient\n"),
            std::string::npos)
      << r.out;
}

TEST(FirstHour, ProgressCoversTheSimulationPhase) {
  // On a terminal the bar is drawn; after the analytic tier it shows the simulator's progress
  // instead of sitting at 100%.
  const auto r = run_command("script -qec '" + kCli +
                             " search --model gpt3-175b --hw dgx-a100-80gb --nodes 16 --top 4' /dev/null");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("analytic: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("simulating the best plans: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("/ 4 (of "), std::string::npos) << r.out;
}

TEST(FirstHour, ChunkedPlansRunOneMicroBatchPerRankEverywhere) {
  // The bundled CPU plan passes check and simulate (and starfish-run trains it: tests/exec).
  auto r = run_command("cd " + kRoot + " && " + kCli + " check configs/plans/tiny-cpu.yaml");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = run_command("cd " + kRoot + " && " + kCli + " simulate --plan configs/plans/tiny-cpu.yaml");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("micro-batch 8 x 1, global batch 8"), std::string::npos) << r.out;
  // The same plan accumulating over two micro-batches is refused by every verb, in one line.
  const std::string bad = "/tmp/starfish_first_hour_" + std::to_string(::getpid()) + "_accumulating.yaml";
  std::string text = slurp(kRoot + "/configs/plans/tiny-cpu.yaml");
  text.replace(text.find("  micro_batch: 8"), 16, "  micro_batch: 4");
  text.replace(text.find("../models/tiny-gpt.yaml"), 23, kRoot + "/configs/models/tiny-gpt.yaml");
  text.replace(text.find("../../hwprofiles/cpu-host.yaml"), 30, kRoot + "/hwprofiles/cpu-host.yaml");
  std::ofstream(bad) << text;
  const int line = 1 + static_cast<int>(std::count(text.begin(), text.begin() + text.find("  micro_batch: 4"), '\n'));
  const std::string expected = bad + ":" + std::to_string(line) +
                               ":3: field 'plan.micro_batch': the chunk runtime runs each rank's batch as one "
                               "micro-batch (no gradient accumulation, as PatrickStar): micro_batch must be "
                               "global_batch / data_parallel = 8, got 4\n";
  for (const std::string verb : {"check " + bad, "simulate --plan " + bad, "estimate --plan " + bad}) {
    r = run_command(kCli + " " + verb);
    EXPECT_EQ(r.exit_code, 1) << verb;
    EXPECT_EQ(r.err, expected) << verb;
  }
  std::remove(bad.c_str());
}

}  // namespace
}  // namespace starfish

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/des/trace.h"
#include "sim/spec/error.h"
#include "tests/sim/des/des_clusters.h"

namespace starfish::des {
namespace {

using testing::dgx_a100;

// A strict little JSON parser (RFC 8259 values), enough to prove the trace is valid JSON and
// to read its structure back.
struct Json {
  enum Type { Null, Bool, Number, String, Array, Object } type = Null;
  bool b = false;
  double num = 0;
  std::string str;
  std::vector<Json> items;
  std::map<std::string, Json> fields;
  const Json& at(const std::string& k) const {
    auto it = fields.find(k);
    if (it == fields.end()) throw std::runtime_error("missing field " + k);
    return it->second;
  }
  bool has(const std::string& k) const { return fields.count(k) > 0; }
};

class Parser {
 public:
  explicit Parser(const std::string& s) : s_(s) {}
  Json parse() {
    Json v = value();
    ws();
    if (i_ != s_.size()) fail("trailing characters");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& m) { throw std::runtime_error(m + " at " + std::to_string(i_)); }
  void ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\t' || s_[i_] == '\r')) ++i_;
  }
  char peek() {
    ws();
    if (i_ >= s_.size()) fail("unexpected end");
    return s_[i_];
  }
  void expect(char c) {
    if (peek() != c) fail(std::string("expected ") + c);
    ++i_;
  }
  Json value() {
    const char c = peek();
    if (c == '{') return object();
    if (c == '[') return array();
    if (c == '"') {
      Json j;
      j.type = Json::String;
      j.str = string();
      return j;
    }
    Json j;
    if (s_.compare(i_, 4, "true") == 0) return i_ += 4, j.type = Json::Bool, j.b = true, j;
    if (s_.compare(i_, 5, "false") == 0) return i_ += 5, j.type = Json::Bool, j;
    if (s_.compare(i_, 4, "null") == 0) return i_ += 4, j;
    return number();
  }
  Json object() {
    Json j;
    j.type = Json::Object;
    expect('{');
    if (peek() == '}') return ++i_, j;
    for (;;) {
      if (peek() != '"') fail("expected key");
      std::string k = string();
      expect(':');
      j.fields[k] = value();
      if (peek() == ',') {
        ++i_;
        continue;
      }
      expect('}');
      return j;
    }
  }
  Json array() {
    Json j;
    j.type = Json::Array;
    expect('[');
    if (peek() == ']') return ++i_, j;
    for (;;) {
      j.items.push_back(value());
      if (peek() == ',') {
        ++i_;
        continue;
      }
      expect(']');
      return j;
    }
  }
  std::string string() {
    expect('"');
    std::string out;
    while (i_ < s_.size() && s_[i_] != '"') {
      const char c = s_[i_++];
      if (static_cast<unsigned char>(c) < 0x20) fail("control character in string");
      if (c != '\\') {
        out += c;
        continue;
      }
      const char e = s_[i_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'u': {
          const int code = std::stoi(s_.substr(i_, 4), nullptr, 16);
          i_ += 4;
          if (code >= 0x80) fail("test parser handles only ASCII escapes");
          out += static_cast<char>(code);
          break;
        }
        default: fail("bad escape");
      }
    }
    expect('"');
    return out;
  }
  Json number() {
    const size_t start = i_;
    if (s_[i_] == '-') ++i_;
    if (i_ >= s_.size() || !std::isdigit(static_cast<unsigned char>(s_[i_]))) fail("bad number");
    if (s_[i_] == '0') ++i_;
    else while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) ++i_;
    if (i_ < s_.size() && s_[i_] == '.') {
      ++i_;
      if (!std::isdigit(static_cast<unsigned char>(s_[i_]))) fail("bad fraction");
      while (std::isdigit(static_cast<unsigned char>(s_[i_]))) ++i_;
    }
    if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      ++i_;
      if (s_[i_] == '+' || s_[i_] == '-') ++i_;
      if (!std::isdigit(static_cast<unsigned char>(s_[i_]))) fail("bad exponent");
      while (std::isdigit(static_cast<unsigned char>(s_[i_]))) ++i_;
    }
    Json j;
    j.type = Json::Number;
    j.num = std::stod(s_.substr(start, i_ - start));
    return j;
  }
  const std::string& s_;
  size_t i_ = 0;
};

struct Fixture {
  Topology topo{dgx_a100(2)};
  std::unique_ptr<Engine> e = std::make_unique<Engine>(topo);
  TaskId k, cp, ar, x, x2, odd;
  CategoryId fwd, dp;
  Fixture() {
    fwd = e->category("fwd");
    dp = e->category("dp");
    k = e->compute(0, 2e-3, {fwd, "fwd s0 mb0"});
    cp = e->copy(0, CopyDir::D2H, 50e6, {e->category("offload"), "offload chunk 3"});
    ar = e->collective(CollectiveKind::all_reduce, e->group({0, 8}), 100e6, {dp, "dp grads"});
    x = e->transfer(topo.gpu(3), topo.gpu(11), 20e6, {e->category("pp"), "pp send"});
    x2 = e->transfer(topo.gpu(3), topo.gpu(12), 20e6, {e->category("pp"), "pp send 2"});  // overlaps x
    odd = e->delay(1e-3, {0, "quote \" backslash \\ newline \n tab \t"});
    e->depends(cp, k);
    e->depends(ar, k);
    e->run();
  }
};

Json trace_of(const Fixture& f, TraceOptions options = {}) {
  std::ostringstream out;
  write_chrome_trace(out, *f.e, f.e->results(), options);
  const std::string text = out.str();
  return Parser(text).parse();
}

TEST(Trace, IsValidJsonWithOneEventPerTaskAndLane) {
  Fixture f;
  const Json root = trace_of(f);
  const Json& events = root.at("traceEvents");
  ASSERT_EQ(events.type, Json::Array);
  std::map<TaskId, int> seen;
  int processes = 0;
  for (const Json& ev : events.items) {
    const std::string ph = ev.at("ph").str;
    if (ph == "M") {
      processes += ev.at("name").str == "process_name";
      continue;
    }
    ASSERT_EQ(ph, "X");
    const TaskId t = static_cast<TaskId>(ev.at("args").at("task").num);
    ++seen[t];
    EXPECT_EQ(ev.at("name").str, f.e->task_name(t));
    EXPECT_EQ(ev.at("cat").str, f.e->category_name(f.e->task_category(t)));
    EXPECT_DOUBLE_EQ(ev.at("ts").num, f.e->results().start_s[t] * 1e6);
    EXPECT_DOUBLE_EQ(ev.at("dur").num, f.e->results().duration_s(t) * 1e6);
  }
  EXPECT_EQ(processes, 3);  // two nodes, and one for the delay without a stream
  EXPECT_EQ(seen[f.k], 1);
  EXPECT_EQ(seen[f.cp], 1);
  EXPECT_EQ(seen[f.ar], 2);  // on both GPUs of its group
  EXPECT_EQ(seen[f.x], 1);
  EXPECT_EQ(seen[f.odd], 1);
}

TEST(Trace, EventsOnOneThreadNeverOverlapAndThreadsAreNamed) {
  Fixture f;
  const Json root = trace_of(f);
  std::map<std::pair<int, int>, std::vector<std::pair<double, double>>> threads;
  std::map<std::pair<int, int>, std::string> names;
  for (const Json& ev : root.at("traceEvents").items) {
    const std::pair<int, int> key{static_cast<int>(ev.at("pid").num), static_cast<int>(ev.at("tid").num)};
    if (ev.at("ph").str == "M") {
      if (ev.at("name").str == "thread_name") names[key] = ev.at("args").at("name").str;
      continue;
    }
    threads[key].emplace_back(ev.at("ts").num, ev.at("ts").num + ev.at("dur").num);
  }
  for (auto& [key, spans] : threads) {
    ASSERT_TRUE(names.count(key)) << key.first << "/" << key.second;
    std::sort(spans.begin(), spans.end());
    for (size_t i = 1; i < spans.size(); ++i) EXPECT_LE(spans[i - 1].second, spans[i].first) << names[key];
  }
  // The two overlapping sends from GPU 3 went to two comm lanes of node 0.
  int gpu3_lanes = 0;
  for (const auto& [key, name] : names) gpu3_lanes += key.first == 0 && name.rfind("gpu3 comm", 0) == 0;
  EXPECT_EQ(gpu3_lanes, 2);
  const std::pair<int, int> compute0{0, static_cast<int>(f.e->compute_stream(0)) + 1};
  EXPECT_EQ(names[compute0], "gpu0 compute");
}

TEST(Trace, ArgsCarryKindBytesAndCollective) {
  Fixture f;
  const Json root = trace_of(f);
  bool found = false;
  for (const Json& ev : root.at("traceEvents").items) {
    if (ev.at("ph").str != "X" || ev.at("args").at("task").num != f.ar) continue;
    found = true;
    EXPECT_EQ(ev.at("args").at("kind").str, "collective");
    EXPECT_EQ(ev.at("args").at("collective").str, "all-reduce");
    EXPECT_EQ(ev.at("args").at("group_size").num, 2);
    EXPECT_EQ(ev.at("args").at("bytes").num, 100e6);
    EXPECT_DOUBLE_EQ(ev.at("args").at("ready_us").num, 2e3);
  }
  EXPECT_TRUE(found);
}

TEST(Trace, ListedGpusAloneAreDrawn) {
  Fixture f;
  TraceOptions only;
  only.gpus = {0};  // node 0's GPU 0: its compute, its copy, its half of the all-reduce
  std::map<TaskId, int> seen;
  int processes = 0;
  const Json root = trace_of(f, only);
  for (const Json& ev : root.at("traceEvents").items) {
    if (ev.at("ph").str == "M") {
      processes += ev.at("name").str == "process_name";
      continue;
    }
    EXPECT_EQ(ev.at("pid").num, 0);
    ++seen[static_cast<TaskId>(ev.at("args").at("task").num)];
  }
  EXPECT_EQ(processes, 1);  // node 0 only: no node 1, no "unplaced" delays
  EXPECT_EQ(seen[f.k], 1);
  EXPECT_EQ(seen[f.cp], 1);
  EXPECT_EQ(seen[f.ar], 1);  // on GPU 0 alone
  EXPECT_EQ(seen.count(f.x), 0u);  // GPU 3 -> 11: neither is drawn
  EXPECT_EQ(seen.count(f.odd), 0u);
  only.gpus = {16};
  EXPECT_THROW(trace_of(f, only), SpecError);
}

TEST(Trace, CounterTracksAreCounterEvents) {
  Fixture f;
  TraceOptions with;
  with.counters.push_back({1, "stage 1 GPU memory", {{0, 1e9}, {2e-3, 3.5e9}}});
  std::vector<std::pair<double, double>> points;
  const Json root = trace_of(f, with);
  for (const Json& ev : root.at("traceEvents").items) {
    if (ev.at("ph").str != "C") continue;
    EXPECT_EQ(ev.at("name").str, "stage 1 GPU memory");
    EXPECT_EQ(ev.at("pid").num, 1);
    points.emplace_back(ev.at("ts").num, ev.at("args").at("bytes").num);
  }
  EXPECT_EQ(points, (std::vector<std::pair<double, double>>{{0, 1e9}, {2e3, 3.5e9}}));  // microseconds
}

}  // namespace
}  // namespace starfish::des

#include "sim/chunk/move_log.h"

#include <charconv>
#include <cstdint>
#include <istream>
#include <map>
#include <ostream>
#include <sstream>

#include "sim/spec/error.h"
#include "sim/spec/input_file.h"

namespace starfish {
namespace {

// Where a line is and how to say what is wrong with it.
struct LineAt {
  const std::string& source;
  int number;
  const std::string& text;
  [[noreturn]] void bad(const std::string& why, size_t column = 0) const {
    throw SpecError(source + ":" + std::to_string(number) + ":" + std::to_string(column + 1) + ": " + why + ": " +
                    one_line(text, 120));
  }
};

// A flat JSON object of string and integer values, the only shape the log uses.
std::map<std::string, std::string> parse_flat_object(const LineAt& at) {
  const std::string& line = at.text;
  std::map<std::string, std::string> out;
  size_t i = 0;
  auto ws = [&] { while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i; };
  auto expect = [&](char c) {
    ws();
    if (i >= line.size() || line[i] != c) at.bad(std::string("expected '") + c + "'", i);
    ++i;
  };
  auto string = [&] {
    expect('"');
    std::string s;
    while (i < line.size() && line[i] != '"') {
      if (line[i] == '\\') at.bad("escapes are not used in move logs", i);
      s += line[i++];
    }
    if (i >= line.size()) at.bad("unterminated string", i);
    ++i;
    return s;
  };
  expect('{');
  ws();
  if (i < line.size() && line[i] == '}') at.bad("empty object", i);
  while (true) {
    const std::string key = string();
    expect(':');
    ws();
    std::string value;
    if (i < line.size() && line[i] == '"') {
      value = "\"" + string();
    } else {
      const size_t start = i;
      if (i < line.size() && line[i] == '-') ++i;
      while (i < line.size() && line[i] >= '0' && line[i] <= '9') ++i;
      if (i == start) at.bad("value of '" + key + "' is neither a string nor an integer", i);
      value = line.substr(start, i - start);
    }
    if (!out.emplace(key, value).second) at.bad("duplicate key '" + key + "'", i);
    ws();
    if (i < line.size() && line[i] == ',') {
      ++i;
      continue;
    }
    expect('}');
    break;
  }
  ws();
  if (i != line.size()) at.bad("text after the object", i);
  return out;
}

}  // namespace

std::string to_json_line(const Move& m) {
  return "{\"rank\":" + std::to_string(m.rank) + ",\"moment\":" + std::to_string(m.moment) +
         ",\"chunk\":" + std::to_string(m.chunk) + ",\"op\":\"" + m.op + "\",\"from\":\"" + to_string(m.from) +
         "\",\"to\":\"" + to_string(m.to) + "\",\"bytes\":" + std::to_string(m.bytes) + ",\"reason\":\"" +
         to_string(m.reason) + "\"}";
}

Move parse_move_line(const std::string& line, int n, const std::string& source) {
  const LineAt at{source, n, line};
  auto fields = parse_flat_object(at);
  auto take = [&](const char* key, bool text) {
    auto it = fields.find(key);
    if (it == fields.end()) at.bad(std::string("missing '") + key + "'");
    std::string v = it->second;
    fields.erase(it);
    const bool is_text = !v.empty() && v[0] == '"';
    if (is_text != text) at.bad(std::string("'") + key + "' must be " + (text ? "a string" : "an integer"));
    return text ? v.substr(1) : v;
  };
  auto integer = [&](const char* key) {
    const std::string v = take(key, false);
    int64_t x = 0;
    const auto r = std::from_chars(v.data(), v.data() + v.size(), x);
    if (r.ec != std::errc() || r.ptr != v.data() + v.size()) at.bad(std::string("'") + key + "' out of range");
    return x;
  };
  Move m;
  auto small = [&](const char* key, int64_t min) {
    const int64_t v = integer(key);
    if (v < min || v > INT32_MAX) at.bad(std::string("'") + key + "' out of range");
    return static_cast<int>(v);
  };
  m.rank = small("rank", 0);
  m.moment = integer("moment");
  m.chunk = small("chunk", -1);
  m.op = take("op", true);
  if (!parse_tier(take("from", true), m.from)) at.bad("unknown tier in 'from'");
  if (!parse_tier(take("to", true), m.to)) at.bad("unknown tier in 'to'");
  m.bytes = integer("bytes");
  if (!parse_move_reason(take("reason", true), m.reason)) at.bad("unknown reason");
  if (!fields.empty()) at.bad("unknown key '" + fields.begin()->first + "'");
  return m;
}

void write_move_log(std::ostream& out, const std::vector<Move>& moves) {
  for (const Move& m : moves) out << to_json_line(m) << '\n';
}

std::vector<Move> read_move_log(std::istream& in, const std::string& source) {
  std::vector<Move> moves;
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    moves.push_back(parse_move_line(line, n, source));
  }
  return moves;
}

std::vector<Move> read_move_log_file(const std::string& path) {
  std::istringstream in(read_input_file(path));
  return read_move_log(in, path);
}

std::string MoveDiff::describe() const {
  if (same) return "identical (" + std::to_string(index) + " moves)";
  return "move " + std::to_string(index) + " differs: " + (left ? to_json_line(*left) : std::string("<end of log>")) +
         " vs " + (right ? to_json_line(*right) : std::string("<end of log>"));
}

MoveDiff diff_move_logs(const std::vector<Move>& a, const std::vector<Move>& b) {
  const size_t n = std::min(a.size(), b.size());
  for (size_t i = 0; i < n; ++i)
    if (!(a[i] == b[i])) return MoveDiff{false, i, a[i], b[i]};
  if (a.size() == b.size()) return MoveDiff{true, n, std::nullopt, std::nullopt};
  MoveDiff d{false, n, std::nullopt, std::nullopt};
  if (n < a.size()) d.left = a[n];
  if (n < b.size()) d.right = b[n];
  return d;
}

}  // namespace starfish

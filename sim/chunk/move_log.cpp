#include "sim/chunk/move_log.h"

#include <charconv>
#include <istream>
#include <map>
#include <ostream>

#include "sim/spec/error.h"

namespace starfish {
namespace {

[[noreturn]] void bad(int n, const std::string& why, const std::string& line) {
  throw SpecError("move log line " + std::to_string(n) + ": " + why + ": " + line);
}

// A flat JSON object of string and integer values, the only shape the log uses.
std::map<std::string, std::string> parse_flat_object(const std::string& line, int n) {
  std::map<std::string, std::string> out;
  size_t i = 0;
  auto ws = [&] { while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i; };
  auto expect = [&](char c) {
    ws();
    if (i >= line.size() || line[i] != c) bad(n, std::string("expected '") + c + "'", line);
    ++i;
  };
  auto string = [&] {
    expect('"');
    std::string s;
    while (i < line.size() && line[i] != '"') {
      if (line[i] == '\\') bad(n, "escapes are not used in move logs", line);
      s += line[i++];
    }
    if (i >= line.size()) bad(n, "unterminated string", line);
    ++i;
    return s;
  };
  expect('{');
  ws();
  if (i < line.size() && line[i] == '}') bad(n, "empty object", line);
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
      if (i == start) bad(n, "value of '" + key + "' is neither a string nor an integer", line);
      value = line.substr(start, i - start);
    }
    if (!out.emplace(key, value).second) bad(n, "duplicate key '" + key + "'", line);
    ws();
    if (i < line.size() && line[i] == ',') {
      ++i;
      continue;
    }
    expect('}');
    break;
  }
  ws();
  if (i != line.size()) bad(n, "text after the object", line);
  return out;
}

}  // namespace

std::string to_json_line(const Move& m) {
  return "{\"rank\":" + std::to_string(m.rank) + ",\"moment\":" + std::to_string(m.moment) +
         ",\"chunk\":" + std::to_string(m.chunk) + ",\"op\":\"" + m.op + "\",\"from\":\"" + to_string(m.from) +
         "\",\"to\":\"" + to_string(m.to) + "\",\"bytes\":" + std::to_string(m.bytes) + ",\"reason\":\"" +
         to_string(m.reason) + "\"}";
}

Move parse_move_line(const std::string& line, int n) {
  auto fields = parse_flat_object(line, n);
  auto take = [&](const char* key, bool text) {
    auto it = fields.find(key);
    if (it == fields.end()) bad(n, std::string("missing '") + key + "'", line);
    std::string v = it->second;
    fields.erase(it);
    const bool is_text = !v.empty() && v[0] == '"';
    if (is_text != text) bad(n, std::string("'") + key + "' must be " + (text ? "a string" : "an integer"), line);
    return text ? v.substr(1) : v;
  };
  auto integer = [&](const char* key) {
    const std::string v = take(key, false);
    int64_t x = 0;
    const auto r = std::from_chars(v.data(), v.data() + v.size(), x);
    if (r.ec != std::errc() || r.ptr != v.data() + v.size()) bad(n, std::string("'") + key + "' out of range", line);
    return x;
  };
  Move m;
  m.rank = static_cast<int>(integer("rank"));
  m.moment = integer("moment");
  m.chunk = static_cast<int>(integer("chunk"));
  m.op = take("op", true);
  if (!parse_tier(take("from", true), m.from)) bad(n, "unknown tier in 'from'", line);
  if (!parse_tier(take("to", true), m.to)) bad(n, "unknown tier in 'to'", line);
  m.bytes = integer("bytes");
  if (!parse_move_reason(take("reason", true), m.reason)) bad(n, "unknown reason", line);
  if (!fields.empty()) bad(n, "unknown key '" + fields.begin()->first + "'", line);
  return m;
}

void write_move_log(std::ostream& out, const std::vector<Move>& moves) {
  for (const Move& m : moves) out << to_json_line(m) << '\n';
}

std::vector<Move> read_move_log(std::istream& in) {
  std::vector<Move> moves;
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    moves.push_back(parse_move_line(line, n));
  }
  return moves;
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

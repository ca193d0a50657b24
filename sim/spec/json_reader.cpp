#include "sim/spec/json_reader.h"

#include <cmath>
#include <cstdlib>
#include <set>

#include "sim/spec/error.h"
#include "sim/spec/input_file.h"

namespace starfish {
namespace {

class Parser {
 public:
  Parser(const std::string& text, const std::string& source) : s_(text), source_(source) {}

  JsonValue document() {
    JsonValue v = value();
    skip_space();
    if (i_ != s_.size()) fail("unexpected text after the value");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    int line = 1, col = 1;
    for (size_t k = 0; k < i_ && k < s_.size(); ++k) {
      if (s_[k] == '\n') ++line, col = 1;
      else ++col;
    }
    throw SpecError(source_ + ":" + std::to_string(line) + ":" + std::to_string(col) + ": invalid JSON: " + why);
  }
  void skip_space() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\t' || s_[i_] == '\r')) ++i_;
  }
  bool take(char c) {
    skip_space();
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!take(c)) fail(std::string("expected '") + c + "'");
  }
  bool word(const char* w) {
    const std::string_view v(w);
    if (s_.compare(i_, v.size(), v) != 0) return false;
    i_ += v.size();
    return true;
  }

  std::string string_body() {
    expect('"');
    std::string out;
    while (i_ < s_.size() && s_[i_] != '"') {
      char c = s_[i_++];
      if (c != '\\') {
        out += c;
        continue;
      }
      if (i_ >= s_.size()) fail("unterminated escape");
      const char e = s_[i_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          if (i_ + 4 > s_.size()) fail("short \\u escape");
          const unsigned code = static_cast<unsigned>(std::strtoul(s_.substr(i_, 4).c_str(), nullptr, 16));
          i_ += 4;
          if (code < 0x80) out += static_cast<char>(code);
          else if (code < 0x800) out += static_cast<char>(0xC0 | (code >> 6)), out += static_cast<char>(0x80 | (code & 0x3F));
          else
            out += static_cast<char>(0xE0 | (code >> 12)), out += static_cast<char>(0x80 | ((code >> 6) & 0x3F)),
                out += static_cast<char>(0x80 | (code & 0x3F));
          break;
        }
        default: fail(std::string("bad escape \\") + e);
      }
    }
    if (i_ >= s_.size()) fail("unterminated string");
    ++i_;
    return out;
  }

  // Nesting deeper than this is no report Starfish writes, and would overflow the stack.
  static constexpr int kMaxDepth = 256;

  JsonValue value(int depth = 0) {
    skip_space();
    if (i_ >= s_.size()) fail("unexpected end");
    JsonValue v;
    const char c = s_[i_];
    if ((c == '{' || c == '[') && depth >= kMaxDepth) fail("nested deeper than " + std::to_string(kMaxDepth) + " levels");
    if (c == '{') {
      ++i_;
      v.type = JsonValue::Type::object;
      if (take('}')) return v;
      std::set<std::string> keys;
      do {
        skip_space();
        const size_t key_at = i_;
        std::string key = string_body();
        if (!keys.insert(key).second) {
          i_ = key_at;
          fail("key " + quote_value(key) + " appears twice in one object");
        }
        expect(':');
        v.object.emplace_back(std::move(key), value(depth + 1));
      } while (take(','));
      expect('}');
    } else if (c == '[') {
      ++i_;
      v.type = JsonValue::Type::array;
      if (take(']')) return v;
      do v.array.push_back(value(depth + 1));
      while (take(','));
      expect(']');
    } else if (c == '"') {
      v.type = JsonValue::Type::string;
      v.string = string_body();
    } else if (word("true")) {
      v.type = JsonValue::Type::boolean;
      v.boolean = true;
    } else if (word("false")) {
      v.type = JsonValue::Type::boolean;
    } else if (word("null")) {
      v.type = JsonValue::Type::null;
    } else {
      const char* begin = s_.c_str() + i_;
      char* end = nullptr;
      v.number = std::strtod(begin, &end);
      if (end == begin) fail("expected a value");
      if (!std::isfinite(v.number)) fail("number out of range");
      i_ += static_cast<size_t>(end - begin);
      v.type = JsonValue::Type::number;
    }
    return v;
  }

  const std::string& s_;
  std::string source_;
  size_t i_ = 0;
};

}  // namespace

JsonValue::JsonValue() = default;
JsonValue::JsonValue(const JsonValue&) = default;
JsonValue::JsonValue(JsonValue&&) noexcept = default;
JsonValue& JsonValue::operator=(const JsonValue&) = default;
JsonValue& JsonValue::operator=(JsonValue&&) noexcept = default;
JsonValue::~JsonValue() = default;

const JsonValue* JsonValue::find(const std::string& key) const {
  if (type != Type::object) return nullptr;
  for (const auto& [k, v] : object)
    if (k == key) return &v;
  return nullptr;
}

namespace {
const JsonValue* at_path(const JsonValue& root, const std::string& path) {
  const JsonValue* v = &root;
  size_t start = 0;
  while (v && start <= path.size()) {
    const size_t dot = path.find('.', start);
    v = v->find(path.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return v;
}
}  // namespace

std::optional<double> JsonValue::number_at(const std::string& path) const {
  const JsonValue* v = at_path(*this, path);
  if (!v || v->type != Type::number) return std::nullopt;
  return v->number;
}

std::optional<std::string> JsonValue::string_at(const std::string& path) const {
  const JsonValue* v = at_path(*this, path);
  if (!v || v->type != Type::string) return std::nullopt;
  return v->string;
}

JsonValue parse_json(const std::string& text, const std::string& source) { return Parser(text, source).document(); }

JsonValue read_json_file(const std::string& path) { return parse_json(read_input_file(path), input_name(path)); }

}  // namespace starfish

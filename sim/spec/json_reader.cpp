#include "sim/spec/json_reader.h"

#include <nlohmann/json.hpp>

#include <cstring>
#include <iterator>
#include <string_view>
#include <unordered_set>

#include "sim/spec/error.h"
#include "sim/spec/input_file.h"

namespace starfish {
namespace {

// A pointer into the text that tells the SAX handler how far nlohmann's lexer has read: the
// lexer pulls one character at a time through the iterator, so after each SAX event the
// cursor sits just past the token (one further for a number, whose end the lexer finds by
// reading the next character).
class CountingIterator {
 public:
  using iterator_category = std::input_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char*;
  using reference = const char&;

  CountingIterator(const char* p, const char** cursor) : p_(p), cursor_(cursor) {}
  reference operator*() const { return *p_; }
  CountingIterator& operator++() {
    *cursor_ = ++p_;
    return *this;
  }
  CountingIterator operator++(int) {
    CountingIterator before = *this;
    ++*this;
    return before;
  }
  bool operator==(const CountingIterator& o) const { return p_ == o.p_; }
  bool operator!=(const CountingIterator& o) const { return p_ != o.p_; }

 private:
  const char* p_;
  const char** cursor_;
};

bool number_char(char c) { return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'; }

// Builds the JsonValue tree from nlohmann's SAX events, with each value's start position.
class TreeBuilder : public nlohmann::json_sax<nlohmann::json> {
 public:
  TreeBuilder(const std::string& text, const std::string& source)
      : text_(text), source_(source), cursor_(text.data()) {}

  JsonValue parse() {
    const char* begin = text_.data();
    nlohmann::json::sax_parse(CountingIterator(begin, &cursor_), CountingIterator(begin + text_.size(), &cursor_), this);
    return std::move(root_);
  }

  bool null() override {
    leaf(JsonValue::Type::null, read() - 4);
    return true;
  }
  bool boolean(bool v) override {
    leaf(JsonValue::Type::boolean, read() - (v ? 4 : 5)).boolean = v;
    return true;
  }
  bool number_integer(number_integer_t v) override { return number(static_cast<double>(v), true); }
  bool number_unsigned(number_unsigned_t v) override { return number(static_cast<double>(v), true); }
  bool number_float(number_float_t v, const string_t&) override { return number(v, false); }
  bool string(string_t& v) override {
    leaf(JsonValue::Type::string, string_start()).string = std::move(v);
    return true;
  }
  bool binary(binary_t&) override { return true; }  // not in JSON text
  bool start_object(std::size_t) override { return open(JsonValue::Type::object); }
  bool start_array(std::size_t) override { return open(JsonValue::Type::array); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }
  bool key(string_t& k) override {
    const size_t at = string_start();
    if (!keys_.back().insert(k).second) fail(at, "key " + quote_value(k) + " appears twice in one object");
    pending_key_ = std::move(k);
    return true;
  }
  bool parse_error(std::size_t position, const std::string& last_token, const nlohmann::detail::exception& e) override {
    fail(error_offset(position, last_token, e.what()), reason(e.what()));
  }

 private:
  // Nesting deeper than this is no file Starfish reads, and would overflow the stack of any
  // recursive reader of the tree.
  static constexpr size_t kMaxDepth = 256;

  size_t read() const { return static_cast<size_t>(cursor_ - text_.data()); }

  // The opening quote of the string token that just ended (the cursor is past its closing one):
  // the nearest earlier quote not escaped, i.e. after an even run of backslashes.
  size_t string_start() const {
    size_t k = read() - 1;
    while (k-- > 0) {
      if (text_[k] != '"') continue;
      size_t backslashes = 0;
      while (backslashes < k && text_[k - 1 - backslashes] == '\\') ++backslashes;
      if (backslashes % 2 == 0) return k;
    }
    return 0;
  }

  bool number(double v, bool integer) {
    size_t end = read();  // past the character after the number, unless the text ended there
    if (end > 0 && !number_char(text_[end - 1])) --end;
    size_t start = end;
    while (start > 0 && number_char(text_[start - 1])) --start;
    JsonValue& n = leaf(JsonValue::Type::number, start);
    n.number = v;
    n.integer = integer;
    return true;
  }

  // The new value's slot: the root, the next element of the open array, or the pending key's.
  JsonValue& slot(size_t start) {
    JsonValue* v = &root_;
    if (!open_.empty()) {
      JsonValue& parent = *open_.back();
      if (parent.type == JsonValue::Type::array) v = &parent.array.emplace_back();
      else v = &parent.object.emplace_back(std::move(pending_key_), JsonValue()).second;
    }
    position(start, v->line, v->column);
    return *v;
  }
  JsonValue& leaf(JsonValue::Type type, size_t start) {
    JsonValue& v = slot(start);
    v.type = type;
    return v;
  }
  bool open(JsonValue::Type type) {
    const size_t at = read() - 1;  // the bracket
    if (open_.size() >= kMaxDepth) fail(at, "nested deeper than " + std::to_string(kMaxDepth) + " levels");
    JsonValue& v = leaf(type, at);
    open_.push_back(&v);  // stable: only the innermost container grows while it is open
    if (type == JsonValue::Type::object) keys_.emplace_back();
    return true;
  }
  bool close() {
    if (open_.back()->type == JsonValue::Type::object) keys_.pop_back();
    open_.pop_back();
    return true;
  }

  // Where a parse error is: nlohmann's `position` counts the characters read, the end of input
  // as one. A token the parser did not expect is pointed at from its start; a character the
  // lexer could not take (a broken literal or string) is pointed at itself; a missing end, at
  // the end.
  size_t error_offset(size_t position, const std::string& token, std::string_view what) const {
    if (what.find("unexpected end of input") != std::string_view::npos) return text_.size();
    const size_t read = std::min(position, text_.size());
    const size_t last = read > 0 ? read - 1 : 0;
    if (what.find("; last read: ") != std::string_view::npos || token.size() > read) return last;
    const size_t start = read - token.size();
    return text_.compare(start, token.size(), token) == 0 ? start : last;
  }

  // nlohmann's "[json.exception.parse_error.101] parse error at line 3, column 7: syntax error
  // while parsing object separator - unexpected number literal; expected ':'" as "expected ':'"
  // (the place is said once, as file:line:column).
  static std::string reason(std::string_view what) {
    if (what.find("number overflow") != std::string_view::npos) return "number out of range";
    if (what.find("; expected end of input") != std::string_view::npos) return "unexpected text after the value";
    if (const size_t colon = what.find(": "); colon != std::string_view::npos) what.remove_prefix(colon + 2);
    if (const size_t dash = what.find(" - "); dash != std::string_view::npos) what.remove_prefix(dash + 3);
    if (what.rfind("unexpected end of input", 0) == 0) return std::string(what);
    if (const size_t read = what.find("; last read: "); read != std::string_view::npos) return std::string(what.substr(0, read));
    if (const size_t expected = what.find("; expected "); expected != std::string_view::npos)
      return std::string(what.substr(expected + 2));
    return std::string(what);
  }

  // Line and column (1-based, in bytes) of an offset; offsets mostly grow, so counting resumes.
  void position(size_t offset, int& line, int& column) {
    if (offset < counted_) counted_ = 0, line_ = 1, line_start_ = 0;
    for (; counted_ < offset && counted_ < text_.size(); ++counted_)
      if (text_[counted_] == '\n') ++line_, line_start_ = counted_ + 1;
    line = line_;
    column = static_cast<int>(offset - line_start_) + 1;
  }

  [[noreturn]] void fail(size_t offset, const std::string& why) {
    int line = 0, column = 0;
    position(offset, line, column);
    throw SpecError(source_ + ":" + std::to_string(line) + ":" + std::to_string(column) + ": invalid JSON: " + why);
  }

  const std::string& text_;
  const std::string& source_;
  const char* cursor_;
  JsonValue root_;
  std::vector<JsonValue*> open_;
  std::vector<std::unordered_set<std::string>> keys_;  // per open object: its keys so far
  std::string pending_key_;
  size_t counted_ = 0, line_start_ = 0;
  int line_ = 1;
};

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

JsonValue parse_json(const std::string& text, const std::string& source) { return TreeBuilder(text, source).parse(); }

JsonValue read_json_file(const std::string& path) { return parse_json(read_input_file(path), input_name(path)); }

}  // namespace starfish

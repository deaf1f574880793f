// A small JSON reader (RFC 8259) for the documents meshcast takes as input: pipeline
// descriptions, model graphs, spec assignments. Bounded by construction: nesting depth and
// document size are capped, integers are kept exact when they fit in 64 bits, reals must be
// finite, and every failure is a `meshcast::error` naming the line and column.
#pragma once

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <system_error>
#include <limits>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../error.hpp"

namespace meshcast::json {

/// Deepest nesting of arrays and objects a document may have.
inline constexpr int max_depth = 128;
/// Largest document accepted, in bytes.
inline constexpr std::size_t max_document_bytes = std::size_t{256} << 20;

class value;
using array = std::vector<value>;
using member = std::pair<std::string, value>;
using object = std::vector<member>;  ///< members in document order (duplicates are an error)

class value {
 public:
  enum class kind { null, boolean, number, string, array, object };

  value() = default;
  static value make_bool(bool b) {
    value v;
    v.kind_ = kind::boolean;
    v.bool_ = b;
    return v;
  }
  static value make_number(double d, bool integral, std::int64_t i) {
    value v;
    v.kind_ = kind::number;
    v.number_ = d;
    v.integral_ = integral;
    v.int_ = i;
    return v;
  }
  static value make_string(std::string s) {
    value v;
    v.kind_ = kind::string;
    v.data_ = std::make_shared<const std::string>(std::move(s));
    return v;
  }
  static value make_array(array a) {
    value v;
    v.kind_ = kind::array;
    v.data_ = std::make_shared<const array>(std::move(a));
    return v;
  }
  static value make_object(object o) {
    value v;
    v.kind_ = kind::object;
    v.data_ = std::make_shared<const object>(std::move(o));
    return v;
  }

  kind type() const noexcept { return kind_; }
  bool is_null() const noexcept { return kind_ == kind::null; }
  bool is_bool() const noexcept { return kind_ == kind::boolean; }
  bool is_number() const noexcept { return kind_ == kind::number; }
  bool is_string() const noexcept { return kind_ == kind::string; }
  bool is_array() const noexcept { return kind_ == kind::array; }
  bool is_object() const noexcept { return kind_ == kind::object; }

  /// The typed accessors throw `meshcast::error` naming `what` (e.g. "stages[2].forward").
  bool as_bool(std::string_view what) const {
    if (!is_bool()) wrong(what, "true or false");
    return bool_;
  }
  double as_double(std::string_view what) const {
    if (!is_number()) wrong(what, "a number");
    return number_;
  }
  /// An integer in [lo, hi]; reals with a fraction, and integers beyond 64 bits, are refused.
  std::int64_t as_int(std::string_view what, std::int64_t lo = std::numeric_limits<std::int64_t>::min(),
                      std::int64_t hi = std::numeric_limits<std::int64_t>::max()) const {
    if (!is_number() || !integral_) wrong(what, "an integer");
    if (int_ < lo || int_ > hi)
      throw error(std::string(what) + " is " + std::to_string(int_) + ", outside [" + std::to_string(lo) + ", " +
                  std::to_string(hi) + "]");
    return int_;
  }
  const std::string& as_string(std::string_view what) const {
    if (!is_string()) wrong(what, "a string");
    return *static_cast<const std::string*>(data_.get());
  }
  const array& as_array(std::string_view what) const {
    if (!is_array()) wrong(what, "an array");
    return *static_cast<const array*>(data_.get());
  }
  const object& as_object(std::string_view what) const {
    if (!is_object()) wrong(what, "an object");
    return *static_cast<const object*>(data_.get());
  }
  /// The member named `key` of an object, or nullptr (also when this is not an object).
  const value* find(std::string_view key) const noexcept {
    if (!is_object()) return nullptr;
    for (const member& m : *static_cast<const object*>(data_.get()))
      if (m.first == key) return &m.second;
    return nullptr;
  }
  /// The member named `key`; throws naming `what` and the key when it is missing.
  const value& at(std::string_view key, std::string_view what) const {
    as_object(what);
    if (const value* v = find(key)) return *v;
    throw error(std::string(what) + " has no \"" + std::string(key) + "\"");
  }

 private:
  [[noreturn]] static void wrong(std::string_view what, const char* expected) {
    throw error(std::string(what) + " must be " + expected);
  }
  kind kind_ = kind::null;
  bool bool_ = false;
  bool integral_ = false;
  double number_ = 0;
  std::int64_t int_ = 0;
  // The string, array or object, as kind_ says: one pointer for the three, so that a value takes
  // 40 bytes (a document of small numbers took 88 a value with a string and two pointers inline).
  // Values are never changed once made, so copies share it.
  std::shared_ptr<const void> data_;
};

namespace detail {
class parser {
 public:
  explicit parser(std::string_view text) : s_(text) {}

  value document() {
    if (s_.size() > max_document_bytes)
      throw error("JSON document of " + std::to_string(s_.size()) + " bytes exceeds the limit of " +
                  std::to_string(max_document_bytes));
    skip_space();
    value v = parse(0);
    skip_space();
    if (at_ < s_.size()) fail("unexpected text after the document");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    std::size_t line = 1, column = 1;
    for (std::size_t i = 0; i < at_ && i < s_.size(); ++i) {
      if (s_[i] == '\n') ++line, column = 1;
      else ++column;
    }
    throw error("JSON at line " + std::to_string(line) + " column " + std::to_string(column) + ": " + why);
  }
  void skip_space() noexcept {
    while (at_ < s_.size() && (s_[at_] == ' ' || s_[at_] == '\t' || s_[at_] == '\n' || s_[at_] == '\r')) ++at_;
  }
  bool eat(char c) noexcept {
    if (at_ < s_.size() && s_[at_] == c) return ++at_, true;
    return false;
  }
  void expect(char c) {
    if (!eat(c)) fail(std::string("expected '") + c + "'");
  }
  void literal(std::string_view word) {
    if (s_.substr(at_, word.size()) != word) fail("unexpected character");
    at_ += word.size();
  }

  value parse(int depth) {
    if (depth >= max_depth) fail("nesting deeper than " + std::to_string(max_depth) + " levels");
    if (at_ >= s_.size()) fail("unexpected end of the document");
    switch (s_[at_]) {
      case '{': return parse_object(depth);
      case '[': return parse_array(depth);
      case '"': return value::make_string(parse_string());
      case 't': literal("true"); return value::make_bool(true);
      case 'f': literal("false"); return value::make_bool(false);
      case 'n': literal("null"); return value{};
      default: return parse_number();
    }
  }

  value parse_object(int depth) {
    expect('{');
    object o;
    std::set<std::string> names;  // filled once `o` is long enough that a linear search would be quadratic
    skip_space();
    if (eat('}')) return value::make_object(std::move(o));
    while (true) {
      skip_space();
      if (at_ >= s_.size() || s_[at_] != '"') fail("expected a member name in quotes");
      std::string key = parse_string();
      if (seen_before(o, names, key)) fail("member \"" + meshcast::detail::printable(key) + "\" appears twice");
      skip_space();
      expect(':');
      skip_space();
      value v = parse(depth + 1);
      o.emplace_back(std::move(key), std::move(v));
      skip_space();
      if (eat('}')) return value::make_object(std::move(o));
      expect(',');
    }
  }

  // Whether `key` names a member already in `o`: a linear search for short objects, a set for long
  // ones, so that an object of n members costs O(n log n), not O(n^2).
  static bool seen_before(const object& o, std::set<std::string>& names, const std::string& key) {
    constexpr std::size_t linear_up_to = 16;
    if (o.size() < linear_up_to) {
      for (const member& m : o)
        if (m.first == key) return true;
      return false;
    }
    if (names.empty())
      for (const member& m : o) names.insert(m.first);
    return !names.insert(key).second;
  }

  value parse_array(int depth) {
    expect('[');
    array a;
    skip_space();
    if (eat(']')) return value::make_array(std::move(a));
    while (true) {
      skip_space();
      a.push_back(parse(depth + 1));
      skip_space();
      if (eat(']')) return value::make_array(std::move(a));
      expect(',');
    }
  }

  unsigned hex4() {
    if (at_ + 4 > s_.size()) fail("truncated \\u escape");
    unsigned v = 0;
    for (int i = 0; i < 4; ++i) {
      char c = s_[at_++];
      v <<= 4;
      if (c >= '0' && c <= '9') v |= static_cast<unsigned>(c - '0');
      else if (c >= 'a' && c <= 'f') v |= static_cast<unsigned>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') v |= static_cast<unsigned>(c - 'A' + 10);
      else fail("bad hex digit in a \\u escape");
    }
    return v;
  }
  static void utf8(std::string& out, unsigned cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  std::string parse_string() {
    expect('"');
    std::string out;
    while (true) {
      if (at_ >= s_.size()) fail("unterminated string");
      const char c = s_[at_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) fail("control character inside a string");
      if (static_cast<unsigned char>(c) >= 0x80) {  // JSON text is UTF-8: a whole, shortest sequence
        const std::size_t lead = at_ - 1;
        const meshcast::detail::utf8_scan u = meshcast::detail::scan_utf8(s_.substr(lead));
        if (u.length == 0) {
          at_ = lead + u.bad_at;  // the error's column is the byte that breaks the sequence
          fail("invalid UTF-8 inside a string");
        }
        out.append(s_.substr(lead, u.length));
        at_ = lead + u.length;
        continue;
      }
      if (c != '\\') {
        out += c;
        continue;
      }
      if (at_ >= s_.size()) fail("unterminated escape");
      switch (const char e = s_[at_++]) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          unsigned cp = hex4();
          if (cp >= 0xD800 && cp <= 0xDBFF) {  // a surrogate pair
            if (!(eat('\\') && eat('u'))) fail("lone high surrogate in a \\u escape");
            unsigned low = hex4();
            if (low < 0xDC00 || low > 0xDFFF) fail("bad low surrogate in a \\u escape");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            fail("lone low surrogate in a \\u escape");
          }
          utf8(out, cp);
          break;
        }
        default: fail(std::string("unknown escape '\\") + meshcast::detail::printable(std::string(1, e)) + "'");
      }
    }
  }

  value parse_number() {
    const std::size_t begin = at_;
    eat('-');
    if (at_ >= s_.size() || s_[at_] < '0' || s_[at_] > '9') fail("unexpected character");
    if (!eat('0'))
      while (at_ < s_.size() && s_[at_] >= '0' && s_[at_] <= '9') ++at_;
    bool integral = true;
    if (eat('.')) {
      integral = false;
      if (at_ >= s_.size() || s_[at_] < '0' || s_[at_] > '9') fail("a digit must follow the decimal point");
      while (at_ < s_.size() && s_[at_] >= '0' && s_[at_] <= '9') ++at_;
    }
    if (at_ < s_.size() && (s_[at_] == 'e' || s_[at_] == 'E')) {
      integral = false;
      ++at_;
      if (!eat('+')) eat('-');
      if (at_ >= s_.size() || s_[at_] < '0' || s_[at_] > '9') fail("a digit must follow the exponent");
      while (at_ < s_.size() && s_[at_] >= '0' && s_[at_] <= '9') ++at_;
    }
    const std::string text(s_.substr(begin, at_ - begin));
    // from_chars, not strtod: strtod reads the decimal point of the program's locale, and under a
    // decimal comma read 12.5e9 as 12 (found by review).
    double d = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), d);
    // Out of range: too large, or so small that it reads as zero though a digit is not zero.
    if (ec != std::errc{} || end != text.data() + text.size() || !std::isfinite(d) ||
        (d == 0 && text.find_first_of("123456789") < text.find_first_of("eE"))) {
      at_ = begin;
      fail("number " + text + " is out of range");
    }
    std::int64_t i = 0;
    if (integral) {
      // Exact: digits accumulated with an overflow check (a number beyond 64 bits is a real).
      const bool negative = text[0] == '-';
      std::uint64_t magnitude = 0;
      const std::uint64_t limit = negative ? std::uint64_t{1} << 63 : (std::uint64_t{1} << 63) - 1;
      for (std::size_t k = negative ? 1 : 0; k < text.size() && integral; ++k) {
        const auto digit = static_cast<std::uint64_t>(text[k] - '0');
        if (magnitude > (limit - digit) / 10) integral = false;
        else magnitude = magnitude * 10 + digit;
      }
      if (integral)
        i = negative ? (magnitude == std::uint64_t{1} << 63 ? std::numeric_limits<std::int64_t>::min()
                                                           : -static_cast<std::int64_t>(magnitude))
                     : static_cast<std::int64_t>(magnitude);
    } else if (d == std::floor(d) && std::abs(d) < 9.0e15) {
      integral = true;  // 2e3 or 4.0 is the integer it denotes
      i = static_cast<std::int64_t>(d);
    }
    return value::make_number(d, integral, i);
  }

 private:
  std::string_view s_;
  std::size_t at_ = 0;
};
}  // namespace detail

/// Parses a whole JSON document; throws `meshcast::error` with the line and column of a fault.
inline value parse(std::string_view text) { return detail::parser(text).document(); }

}  // namespace meshcast::json

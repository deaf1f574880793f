// The one exception type meshcast throws for bad run-time input.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace meshcast {

/// Thrown when a run-time input (a spec string, a mesh size, a device list...) is invalid.
/// The message names the offending input so that a command-line user can fix it.
class error : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// Thrown when a wait on other devices passes its deadline. `missing` lists the devices (ranks)
/// that did not answer, when the operation can tell (a barrier can; a reduction cannot).
class timeout_error : public error {
 public:
  timeout_error(const std::string& what, std::vector<int> missing) : error(what), missing_(std::move(missing)) {}
  const std::vector<int>& missing() const noexcept { return missing_; }

 private:
  std::vector<int> missing_;
};

/// Thrown when a time limit runs out before any answer exists (automatic sharding's cost tables
/// and solvers; building an instance given a deadline).
class time_limit_reached : public error {
 public:
  using error::error;
};

namespace detail {
/// The UTF-8 sequence at the start of `text`: `length` 1-4 where it is whole and well formed (no
/// overlong form, no surrogate, nothing past U+10FFFF), else 0 with `bad_at` the offset of the
/// byte that breaks it (0: the lead byte; text's size where the text ends inside it).
struct utf8_scan {
  std::size_t length = 0;
  std::size_t bad_at = 0;
};

constexpr utf8_scan scan_utf8(std::string_view text) noexcept {
  if (text.empty()) return {};
  const auto b0 = static_cast<unsigned char>(text[0]);
  if (b0 < 0x80) return {1, 0};
  const std::size_t n = b0 >= 0xc2 && b0 <= 0xdf ? 2 : b0 >= 0xe0 && b0 <= 0xef ? 3 : b0 >= 0xf0 && b0 <= 0xf4 ? 4 : 0;
  for (std::size_t k = 1; k < n; ++k) {
    if (k >= text.size()) return {0, k};
    // The second byte's range is narrower after E0 (overlong), ED (surrogates), F0 (overlong), F4.
    const auto b = static_cast<unsigned char>(text[k]);
    const unsigned char lo = k > 1 ? 0x80 : b0 == 0xe0 ? 0xa0 : b0 == 0xf0 ? 0x90 : 0x80;
    const unsigned char hi = k > 1 ? 0xbf : b0 == 0xed ? 0x9f : b0 == 0xf4 ? 0x8f : 0xbf;
    if (b < lo || b > hi) return {0, k};
  }
  return {n, 0};
}

/// The length of the well-formed UTF-8 sequence at the start of `text`, or 0 where there is none.
constexpr std::size_t utf8_sequence(std::string_view text) noexcept { return scan_utf8(text).length; }

/// Whether the byte `c` is a C0 control or DEL.
constexpr bool ascii_control(unsigned char c) noexcept { return c < 0x20 || c == 0x7f; }

/// Whether the bytes at `i` are a C1 control, U+0080-U+009F: C2 80..C2 9F in UTF-8.
constexpr bool c1_control_at(std::string_view text, std::size_t i) noexcept {
  return i + 1 < text.size() && static_cast<unsigned char>(text[i]) == 0xc2 && static_cast<unsigned char>(text[i + 1]) < 0xa0;
}

/// User text as it may appear in a message: control characters (C0, DEL and C1, which a terminal
/// may take as escape sequences: U+009B is CSI) and bytes that are not well-formed UTF-8 escaped
/// byte by byte (\xNN), so that a message never carries raw control bytes from bad input. The
/// text is cut, marked "...", before the first sequence that starts at byte `max_chars` or later
/// (a sequence is never split, so up to 3 bytes more may show).
inline std::string printable(std::string_view text, std::size_t max_chars = 60) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  auto escape = [&](unsigned char c) {
    out += "\\x";
    out += hex[c >> 4];
    out += hex[c & 0xF];
  };
  for (std::size_t i = 0; i < text.size();) {
    if (i >= max_chars) return out + "...";
    const std::size_t n = utf8_sequence(text.substr(i));
    const auto c = static_cast<unsigned char>(text[i]);
    const bool control = n == 1 ? ascii_control(c) : n == 2 && c1_control_at(text, i);
    if (n == 0) {
      escape(c);  // a byte of no well-formed sequence
      ++i;
    } else if (control) {
      for (std::size_t k = 0; k < n; ++k) escape(static_cast<unsigned char>(text[i + k]));
      i += n;
    } else {
      out.append(text.substr(i, n));
      i += n;
    }
  }
  return out;
}
}  // namespace detail

}  // namespace meshcast

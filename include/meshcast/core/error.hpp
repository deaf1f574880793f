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
/// User text as it may appear in a message: control characters escaped (\xNN), at most
/// `max_chars` characters, so that a message never carries raw bytes from bad input.
inline std::string printable(std::string_view text, std::size_t max_chars = 60) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (i == max_chars) return out + "...";
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7f) {
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 0xF];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}
}  // namespace detail

}  // namespace meshcast

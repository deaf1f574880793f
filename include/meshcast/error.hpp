// The one exception type meshcast throws for bad run-time input.
#pragma once

#include <stdexcept>
#include <string>

namespace meshcast {

/// Thrown when a run-time input (a spec string, a mesh size, a device list...) is invalid.
/// The message names the offending input so that a command-line user can fix it.
class error : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

namespace detail {
// Kept out of line of the callers' hot paths; `[[noreturn]]` lets constexpr callers use it in
// a branch that is never taken during constant evaluation.
[[noreturn]] inline void fail(const std::string& message) { throw error(message); }
}  // namespace detail

}  // namespace meshcast

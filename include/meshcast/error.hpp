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

}  // namespace meshcast

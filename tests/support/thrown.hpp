// The message of the meshcast::error that `f()` throws, or "" when it throws none: tests compare
// error messages without a try block each. "" and not a placeholder text, so that no `find` can
// match when nothing was thrown.
#pragma once

#include <string>

#include <meshcast/meshcast.hpp>  // meshcast::error (single_include/ has no core/error.hpp)

namespace meshcast::testing {

inline std::string thrown(auto&& f) {
  try {
    f();
  } catch (const error& e) {
    return e.what();
  }
  return "";
}

}  // namespace meshcast::testing

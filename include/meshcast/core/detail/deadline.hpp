// A point in time after which a search stops. Built from a checked number of seconds, so that
// no conversion of a huge or non-finite limit can overflow the clock.
#pragma once

#include <chrono>
#include <cmath>
#include <string>
#include <string_view>

#include "../error.hpp"
#include "../time_limit.hpp"
#include "number_text.hpp"

namespace meshcast {

namespace detail {

/// Throws naming `what` unless `seconds` is a finite number in [0, max_time_limit_s]. A view, so
/// that a check that passes allocates nothing: a wait on a CUDA stream checks its timeout at every
/// sign of progress, and a name past 15 characters made a string each time.
inline double checked_seconds(double seconds, std::string_view what) {
  if (!(seconds >= 0 && seconds <= max_time_limit_s))
    throw error(std::string(what) + " (" + number(seconds) + " s) must be a number in [0, 1e6] seconds");
  return seconds;
}

class deadline {
 public:
  using clock = std::chrono::steady_clock;
  /// `seconds` from now; checked as by `checked_seconds`.
  explicit deadline(double seconds, const char* what = "a time limit")
      : at_(clock::now() + std::chrono::duration_cast<clock::duration>(
                               std::chrono::duration<double>(checked_seconds(seconds, what)))) {}
  bool expired() const noexcept { return clock::now() >= at_; }
  /// Seconds left (0 once expired).
  double remaining_s() const noexcept {
    const double s = std::chrono::duration<double>(at_ - clock::now()).count();
    return s > 0 ? s : 0;
  }
  clock::time_point at() const noexcept { return at_; }

 private:
  clock::time_point at_;
};

}  // namespace detail
}  // namespace meshcast

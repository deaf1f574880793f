// Checked integer arithmetic: every size that is multiplied, added or converted goes through
// these, so a value that does not fit is a `meshcast::error` naming it, never a wrapped number.
#pragma once

#include <concepts>
#include <limits>
#include <string>
#include <string_view>
#include <utility>

#include "../config.hpp"
#include "../error.hpp"

namespace meshcast::detail {

[[noreturn]] inline void overflow(std::string_view what) {
  throw error(std::string(what) + " does not fit in 64 bits");
}

/// a * b for non-negative a and b; throws naming `what` on overflow.
constexpr index_t checked_mul(index_t a, index_t b, std::string_view what) {
  index_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) overflow(what);
  return r;
}

/// a + b; throws naming `what` on overflow.
constexpr index_t checked_add(index_t a, index_t b, std::string_view what) {
  index_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) overflow(what);
  return r;
}

/// `v` converted to `To` when it fits, else an error naming `what` and the value.
template <std::integral To, std::integral From>
constexpr To checked_cast(From v, std::string_view what) {
  if (!std::in_range<To>(v))
    throw error(std::string(what) + " (" + std::to_string(v) + ") is out of range [" +
                std::to_string(std::numeric_limits<To>::min()) + ", " + std::to_string(std::numeric_limits<To>::max()) + "]");
  return static_cast<To>(v);
}

}  // namespace meshcast::detail

// Checked integer arithmetic: every size that is multiplied, added or converted goes through
// these, so a value that does not fit is a `meshcast::error` naming it, never a wrapped number.
#pragma once

#include <cmath>
#include <concepts>
#include <cstddef>
#include <limits>
#include <string>
#include <string_view>
#include <utility>

#include "../config.hpp"
#include "../error.hpp"
#include "number_text.hpp"

namespace meshcast::detail {

[[noreturn]] inline void overflow(std::string_view what) {
  throw error(std::string(what) + " does not fit in 64 bits");
}

/// Whether a * b fits in T, and then `out` = a * b: the one overflow test of a product, for
/// callers whose error names more than one value (a shape, a tile, a mesh).
template <std::integral T>
constexpr bool product_fits(T a, T b, T& out) noexcept {
  return !__builtin_mul_overflow(a, b, &out);
}

/// Whether a + b fits in T, and then `out` = a + b (the sum's counterpart of product_fits).
template <std::integral T>
constexpr bool sum_fits(T a, T b, T& out) noexcept {
  return !__builtin_add_overflow(a, b, &out);
}

/// Whether a - b fits in T, and then `out` = a - b.
template <std::integral T>
constexpr bool difference_fits(T a, T b, T& out) noexcept {
  return !__builtin_sub_overflow(a, b, &out);
}

/// a * b for non-negative a and b; throws naming `what` on overflow.
constexpr index_t checked_mul(index_t a, index_t b, std::string_view what) {
  index_t r = 0;
  if (!product_fits(a, b, r)) overflow(what);
  return r;
}

/// a + b; throws naming `what` on overflow.
constexpr index_t checked_add(index_t a, index_t b, std::string_view what) {
  index_t r = 0;
  if (!sum_fits(a, b, r)) overflow(what);
  return r;
}

/// Whether non-negative sizes a and b together stay within `limit` and count in index_t: a
/// bundle or bucket grows only while its byte count still fits (two 2^62-byte tensors under a
/// 2^63 limit once summed to -2^63 bytes and a makespan of 0 s).
constexpr bool sum_within(index_t a, index_t b, std::size_t limit) noexcept {
  index_t r = 0;
  return sum_fits(a, b, r) && static_cast<std::size_t>(r) <= limit;
}

/// `v` converted to `To` when it fits, else an error naming `what` and the value.
template <std::integral To, std::integral From>
constexpr To checked_cast(From v, std::string_view what) {
  if (!std::in_range<To>(v))
    throw error(std::string(what) + " (" + std::to_string(v) + ") is out of range [" +
                std::to_string(std::numeric_limits<To>::min()) + ", " + std::to_string(std::numeric_limits<To>::max()) + "]");
  return static_cast<To>(v);
}

/// a * b for sizes that must be non-negative (element counts, bytes): throws naming `what` and
/// both operands when one is negative or the product does not fit in index_t.
inline index_t checked_size_mul(index_t a, index_t b, const std::string& what) {
  index_t r = 0;
  if (a < 0 || b < 0 || !product_fits(a, b, r))
    throw error(what + ": size " + std::to_string(a) + " x " + std::to_string(b) + " overflows 64-bit integers");
  return r;
}
/// a + b for sizes that must be non-negative; throws naming `what` and both operands otherwise.
inline index_t checked_size_add(index_t a, index_t b, const std::string& what) {
  index_t r = 0;
  if (a < 0 || b < 0 || !sum_fits(a, b, r))
    throw error(what + ": size " + std::to_string(a) + " + " + std::to_string(b) + " overflows 64-bit integers");
  return r;
}
/// A real that must be finite and at least `lo` (strictly above it when `strict`).
inline double checked_real(double v, double lo, bool strict, const std::string& what) {
  if (!std::isfinite(v) || v < lo || (strict && v == lo))
    throw error(what + " must be a finite number " + (strict ? "above " : "of at least ") + number(lo) + ", got " +
                number(v));
  return v;
}

}  // namespace meshcast::detail

// Checked arithmetic for the sizes the automatic-sharding code computes: element counts, bytes.
// An overflow is bad input (a tensor too large to describe), so it throws `meshcast::error`
// naming what was being computed.
#pragma once

#include <cmath>
#include <limits>
#include <string>

#include "../core/config.hpp"
#include "../core/error.hpp"

namespace meshcast::autoshard {

/// a * b for non-negative sizes; throws `error` naming `what` when it does not fit in index_t.
inline index_t checked_mul(index_t a, index_t b, const std::string& what) {
  index_t r = 0;
  if (a < 0 || b < 0 || __builtin_mul_overflow(a, b, &r))
    throw error(what + ": size " + std::to_string(a) + " x " + std::to_string(b) + " overflows 64-bit integers");
  return r;
}

/// a + b for non-negative sizes; throws `error` naming `what` on overflow.
inline index_t checked_add(index_t a, index_t b, const std::string& what) {
  index_t r = 0;
  if (a < 0 || b < 0 || __builtin_add_overflow(a, b, &r))
    throw error(what + ": size " + std::to_string(a) + " + " + std::to_string(b) + " overflows 64-bit integers");
  return r;
}

/// A real that must be finite and at least `lo` (strictly above it when `strict`).
inline double checked_real(double v, double lo, bool strict, const std::string& what) {
  if (!std::isfinite(v) || v < lo || (strict && v == lo))
    throw error(what + " must be a finite number " + (strict ? "above " : "of at least ") + std::to_string(lo) +
                ", got " + std::to_string(v));
  return v;
}

}  // namespace meshcast::autoshard

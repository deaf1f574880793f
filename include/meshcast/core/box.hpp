// Boxes of half-open index ranges: tiles, regions and slices of a tensor.
#pragma once

#include <array>
#include <string>

#include "config.hpp"

namespace meshcast {

/// Half-open range [lo, hi) of indices along one tensor dim.
struct range {
  index_t lo = 0;
  index_t hi = 0;
  constexpr index_t size() const noexcept { return hi > lo ? hi - lo : 0; }
  constexpr bool empty() const noexcept { return hi <= lo; }
  friend constexpr bool operator==(const range&, const range&) = default;
};

constexpr range intersect(const range& a, const range& b) noexcept {
  return {a.lo > b.lo ? a.lo : b.lo, a.hi < b.hi ? a.hi : b.hi};
}

/// A product of ranges, one per tensor dim.
struct box {
  int rank = 0;
  std::array<range, max_rank> dims{};

  constexpr const range& operator[](int d) const noexcept { return dims[d]; }
  constexpr range& operator[](int d) noexcept { return dims[d]; }
  constexpr index_t volume() const noexcept {
    index_t v = 1;
    for (int d = 0; d < rank; ++d) v *= dims[d].size();
    return v;
  }
  constexpr bool empty() const noexcept {
    for (int d = 0; d < rank; ++d)
      if (dims[d].empty()) return true;
    return false;
  }
  constexpr bool contains(const box& inner) const noexcept {
    if (inner.empty()) return true;
    for (int d = 0; d < rank; ++d)
      if (inner.dims[d].lo < dims[d].lo || inner.dims[d].hi > dims[d].hi) return false;
    return true;
  }
  /// "[0,512)x[0,128)" for messages and summaries.
  std::string to_string() const {
    std::string s;
    for (int d = 0; d < rank; ++d) {
      if (d) s += 'x';
      s += '[' + std::to_string(dims[d].lo) + ',' + std::to_string(dims[d].hi) + ')';
    }
    return s;
  }
  friend constexpr bool operator==(const box& a, const box& b) noexcept {
    if (a.rank != b.rank) return false;
    for (int d = 0; d < a.rank; ++d)
      if (!(a.dims[d] == b.dims[d])) return false;
    return true;
  }
};

constexpr box intersect(const box& a, const box& b) noexcept {
  box r;
  r.rank = a.rank;
  for (int d = 0; d < a.rank; ++d) r.dims[d] = intersect(a.dims[d], b.dims[d]);
  return r;
}

}  // namespace meshcast

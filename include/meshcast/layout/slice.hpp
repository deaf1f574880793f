// Cutting a region into slices along one dim, for replica splitting and local all-gathers.
#pragma once

#include <vector>

#include "../core/box.hpp"
#include "chunk.hpp"

namespace meshcast {

/// The dim to cut a region along: the outermost dim with at least `pieces` indices (so slices
/// stay as contiguous as possible in row-major order), else the dim with the most indices.
constexpr int slice_dim(const box& region, index_t pieces) noexcept {
  int best = 0;
  for (int d = 0; d < region.rank; ++d) {
    if (region[d].size() >= pieces) return d;
    if (region[d].size() > region[best].size()) best = d;
  }
  return best;
}

/// Cuts `region` into at most `pieces` non-empty slabs along dim `d`, by the chunk rule.
inline std::vector<box> slice_along(const box& region, int d, index_t pieces) {
  if (pieces <= 1 || region.empty()) return {region};
  const index_t extent = region[d].size();
  const index_t n = pieces < extent ? pieces : extent;
  std::vector<box> slices;
  for (index_t j = 0; j < n; ++j) {
    range r = chunk_range(extent, n, j);
    if (r.empty()) continue;
    box b = region;
    b[d] = {region[d].lo + r.lo, region[d].lo + r.hi};
    slices.push_back(b);
  }
  return slices;
}

/// Cuts `region` into at most `pieces` non-empty slices along `slice_dim`, by the chunk rule.
inline std::vector<box> slice_region(const box& region, index_t pieces) {
  return slice_along(region, slice_dim(region, pieces), pieces);
}

/// Cuts `region` along `slice_dim(region, 2)` into consecutive slices whose sizes along that dim
/// are `counts` (which must add up to the region's extent there); zero counts give no slice.
inline std::vector<box> slice_by_counts(const box& region, int d, const std::vector<index_t>& counts) {
  std::vector<box> slices;
  index_t lo = region[d].lo;
  for (index_t c : counts) {
    box b = region;
    b[d] = {lo, lo + c};
    lo += c;
    slices.push_back(b);
  }
  return slices;
}

}  // namespace meshcast

// The chunk rule: how a dim of length n is cut among k devices.
#pragma once

#include "box.hpp"
#include "config.hpp"

namespace meshcast {

/// Chunk size q = ceil(n / k) (k >= 1). Same rule as torch.chunk and DTensor.
constexpr index_t chunk_size(index_t n, index_t k) noexcept { return (n + k - 1) / k; }

/// Chunk j of a dim of length n split k ways: [j*q, min((j+1)*q, n)), clipped to n, so the last
/// chunks may be short or empty.
constexpr range chunk_range(index_t n, index_t k, index_t j) noexcept {
  index_t q = chunk_size(n, k);
  index_t lo = j * q < n ? j * q : n;
  index_t hi = (j + 1) * q < n ? (j + 1) * q : n;
  return {lo, hi};
}

/// Index of the chunk that holds element i (for 0 <= i < n).
constexpr index_t chunk_of(index_t n, index_t k, index_t i) noexcept { return i / chunk_size(n, k); }

}  // namespace meshcast

// The chunk rule: how a dim of length n is cut among k devices.
#pragma once

#include "../core/box.hpp"
#include "../core/config.hpp"

namespace meshcast {

/// Chunk size q = ceil(n / k) (k >= 1, n >= 0). Same rule as torch.chunk and DTensor.
/// Written without n + k - 1, which would overflow for n near the index limit.
constexpr index_t chunk_size(index_t n, index_t k) noexcept {
  if (k < 1) return n;  // layouts never split a dim 0 ways; stay defined all the same
  return n / k + (n % k != 0 ? 1 : 0);
}

/// Chunk j of a dim of length n split k ways (0 <= j < k): [j*q, min((j+1)*q, n)), clipped to n,
/// so the last chunks may be short or empty. j*q is only formed where it cannot pass n.
constexpr range chunk_range(index_t n, index_t k, index_t j) noexcept {
  const index_t q = chunk_size(n, k);
  if (q == 0) return {0, 0};
  const index_t full = n / q;  // chunks that start at or before n
  const index_t lo = j <= full ? j * q : n;
  const index_t hi = j + 1 <= full ? (j + 1) * q : n;
  return {lo < n ? lo : n, hi};
}

/// Index of the chunk that holds element i (for 0 <= i < n).
constexpr index_t chunk_of(index_t n, index_t k, index_t i) noexcept { return i / chunk_size(n, k); }

}  // namespace meshcast

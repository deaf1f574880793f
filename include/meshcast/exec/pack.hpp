// Packing a region of a dense row-major tile into a contiguous message, and unpacking it.
// Whole contiguous runs are copied at once: the innermost dims the region spans fully are merged
// with the first one it does not.
#pragma once

#include <cstddef>
#include <cstring>
#include <span>

#include "../box.hpp"
#include "../error.hpp"

namespace meshcast {

namespace detail {
// Calls f(tile_offset_bytes, run_bytes) for every contiguous run of `region` inside `tile`, in
// row-major order (so the k-th run lands at k * run_bytes in the packed message).
template <class F>
void for_each_run(const box& tile, const box& region, std::size_t element_bytes, F&& f) {
  const int rank = tile.rank;
  if (region.empty()) return;
  std::size_t run = element_bytes;
  int d = rank - 1;
  // Merge inner dims the region covers entirely.
  while (d > 0 && region[d].lo == tile[d].lo && region[d].hi == tile[d].hi) run *= static_cast<std::size_t>(tile[d].size()), --d;
  run *= static_cast<std::size_t>(region[d].size());
  // Byte strides of the tile.
  std::size_t stride[max_rank];
  std::size_t s = element_bytes;
  for (int k = rank - 1; k >= 0; --k) stride[k] = s, s *= static_cast<std::size_t>(tile[k].size());
  index_t idx[max_rank];
  for (int k = 0; k < d; ++k) idx[k] = region[k].lo;
  while (true) {
    std::size_t offset = static_cast<std::size_t>(region[d].lo - tile[d].lo) * stride[d];
    for (int k = 0; k < d; ++k) offset += static_cast<std::size_t>(idx[k] - tile[k].lo) * stride[k];
    f(offset, run);
    int k = d - 1;
    while (k >= 0 && ++idx[k] == region[k].hi) idx[k] = region[k].lo, --k;
    if (k < 0) return;
  }
}
}  // namespace detail

/// Bytes of `tile` (dense row-major, `element_bytes` per element) a buffer must have.
constexpr std::size_t tile_bytes(const box& tile, std::size_t element_bytes) noexcept {
  return static_cast<std::size_t>(tile.volume()) * element_bytes;
}

/// Copies `region` of the tile held in `from` into the contiguous `to`.
inline void pack(const box& tile, std::span<const std::byte> from, const box& region, std::size_t element_bytes,
                 std::span<std::byte> to) {
  if (from.size() < tile_bytes(tile, element_bytes) || to.size() < tile_bytes(region, element_bytes))
    throw error("pack: buffer smaller than its tile or region " + region.to_string());
  std::size_t at = 0;
  detail::for_each_run(tile, region, element_bytes, [&](std::size_t offset, std::size_t run) {
    std::memcpy(to.data() + at, from.data() + offset, run);
    at += run;
  });
}

/// Copies the contiguous `from` into `region` of the tile held in `to`.
inline void unpack(std::span<const std::byte> from, const box& tile, std::span<std::byte> to, const box& region,
                   std::size_t element_bytes) {
  if (to.size() < tile_bytes(tile, element_bytes) || from.size() < tile_bytes(region, element_bytes))
    throw error("unpack: buffer smaller than its tile or region " + region.to_string());
  std::size_t at = 0;
  detail::for_each_run(tile, region, element_bytes, [&](std::size_t offset, std::size_t run) {
    std::memcpy(to.data() + offset, from.data() + at, run);
    at += run;
  });
}

/// Copies `region` from one tile's buffer straight into another's (a local copy), row by row:
/// a row of the region (its last dim) is contiguous in both tiles.
inline void copy_region(const box& from_tile, std::span<const std::byte> from, const box& to_tile,
                        std::span<std::byte> to, const box& region, std::size_t element_bytes) {
  if (region.empty()) return;
  if (from.size() < tile_bytes(from_tile, element_bytes) || to.size() < tile_bytes(to_tile, element_bytes))
    throw error("copy_region: buffer smaller than its tile");
  const std::size_t row = static_cast<std::size_t>(region[region.rank - 1].size()) * element_bytes;
  index_t idx[max_rank];
  for (int k = 0; k < region.rank; ++k) idx[k] = region[k].lo;
  auto offset_in = [&](const box& tile) {
    std::size_t off = 0, stride = element_bytes;
    for (int k = tile.rank - 1; k >= 0; --k) {
      off += static_cast<std::size_t>(idx[k] - tile[k].lo) * stride;
      stride *= static_cast<std::size_t>(tile[k].size());
    }
    return off;
  };
  while (true) {
    std::memcpy(to.data() + offset_in(to_tile), from.data() + offset_in(from_tile), row);
    int k = region.rank - 2;
    while (k >= 0 && ++idx[k] == region[k].hi) idx[k] = region[k].lo, --k;
    if (k < 0) return;
  }
}

}  // namespace meshcast

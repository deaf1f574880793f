// Packing a region of a dense row-major tile into a contiguous message, unpacking it, and copying
// a region from one tile to another: written once, over a memory policy (memory.hpp), for every
// backend. Whole contiguous runs are copied at once (the innermost dims the region spans fully are
// merged with the first one it does not), and runs that repeat at a fixed stride go as one 2-D
// copy (one cudaMemcpy2DAsync on a GPU).
#pragma once

#include <cstddef>
#include <span>
#include <string>

#include "../core/box.hpp"
#include "../core/box_runs.hpp"
#include "../core/detail/checked.hpp"
#include "../core/error.hpp"
#include "memory.hpp"
#include "memory/host.hpp"

namespace meshcast {

namespace detail {

// Calls f(tile_offset_bytes, run_bytes) for every contiguous run of `region` inside `tile`, in
// row-major order (so the k-th run lands at k * run_bytes in the packed message).
template <class F>
void for_each_run(const box& tile, const box& region, std::size_t element_bytes, F&& f) {
  if (region.empty()) return;
  const run_layout l = layout_of_runs(tile, region, element_bytes);
  index_t idx[max_rank];
  for (int k = 0; k < l.d; ++k) idx[k] = region[k].lo;
  while (true) {
    std::size_t offset = static_cast<std::size_t>(region[l.d].lo - tile[l.d].lo) * l.stride[l.d];
    for (int k = 0; k < l.d; ++k) offset += static_cast<std::size_t>(idx[k] - tile[k].lo) * l.stride[k];
    f(offset, l.run);
    int k = l.d - 1;
    while (k >= 0 && ++idx[k] == region[k].hi) idx[k] = region[k].lo, --k;
    if (k < 0) return;
  }
}

// The same runs grouped into 2-D blocks: f(tile_offset, width, height, pitch) where a block is
// `height` runs of `width` bytes, `pitch` bytes apart in the tile, consecutive in the message.
template <class F>
void for_each_block(const box& tile, const box& region, std::size_t element_bytes, F&& f) {
  if (region.empty()) return;
  const run_layout l = layout_of_runs(tile, region, element_bytes);
  if (l.d == 0) {
    f(static_cast<std::size_t>(region[0].lo - tile[0].lo) * l.stride[0], l.run, std::size_t{1}, l.run);
    return;
  }
  const int rows = l.d - 1;  // the dim the block's rows step along
  const auto height = static_cast<std::size_t>(region[rows].size());
  index_t idx[max_rank];
  for (int k = 0; k < rows; ++k) idx[k] = region[k].lo;
  while (true) {
    std::size_t offset = static_cast<std::size_t>(region[l.d].lo - tile[l.d].lo) * l.stride[l.d] +
                         static_cast<std::size_t>(region[rows].lo - tile[rows].lo) * l.stride[rows];
    for (int k = 0; k < rows; ++k) offset += static_cast<std::size_t>(idx[k] - tile[k].lo) * l.stride[k];
    f(offset, l.run, height, l.stride[rows]);
    int k = rows - 1;
    while (k >= 0 && ++idx[k] == region[k].hi) idx[k] = region[k].lo, --k;
    if (k < 0) return;
  }
}
}  // namespace detail

/// Bytes of `tile` (dense row-major, `element_bytes` per element) a buffer must have. Unchecked:
/// for tiles of a validated tensor; boxes from elsewhere go through detail::checked_tile_bytes.
constexpr std::size_t tile_bytes(const box& tile, std::size_t element_bytes) noexcept {
  return static_cast<std::size_t>(tile.volume()) * element_bytes;
}

namespace detail {
/// tile_bytes for a box a caller gave: throws naming `what` where a dim is negative or the
/// product does not fit (a 2^32 x 2^32 tile came to 0 bytes, and pack read past its buffer).
inline std::size_t checked_tile_bytes(const box& tile, std::size_t element_bytes, const char* what) {
  // A hand-made box's rank is checked before its dims are read (they hold max_rank); a tensor has
  // at least one dim, and the run layout reads the last.
  if (tile.rank < 1 || tile.rank > max_rank)
    throw error(std::string(what) + ": a tile or region of rank " + std::to_string(tile.rank) + "; ranks are 1.." +
                std::to_string(max_rank));
  std::size_t bytes = element_bytes;
  for (int d = 0; d < tile.rank; ++d)
    if (tile[d].size() == 0) return 0;  // empty, whatever the other dims (before they can overflow)
  for (int d = 0; d < tile.rank; ++d)
    if (tile[d].size() < 0 || !detail::product_fits(bytes, static_cast<std::size_t>(tile[d].size()), bytes))
      throw error(std::string(what) + ": the tile or region " + tile.to_string() + " of " + std::to_string(element_bytes) +
                  "-byte elements has no size that fits in memory");
  return bytes;
}
}  // namespace detail

/// Copies `region` of the tile held in `from` into the contiguous `to`.
template <memory_policy M>
void pack(M& memory, const box& tile, const std::byte* from, const box& region, std::size_t eb, std::byte* to) {
  std::size_t at = 0;
  detail::for_each_block(tile, region, eb, [&](std::size_t offset, std::size_t width, std::size_t height, std::size_t pitch) {
    memory.copy_2d(to + at, width, from + offset, pitch, width, height);
    at += width * height;
  });
}

/// Copies the contiguous `from` into `region` of the tile held in `to`.
template <memory_policy M>
void unpack(M& memory, const std::byte* from, const box& tile, std::byte* to, const box& region, std::size_t eb) {
  std::size_t at = 0;
  detail::for_each_block(tile, region, eb, [&](std::size_t offset, std::size_t width, std::size_t height, std::size_t pitch) {
    memory.copy_2d(to + offset, pitch, from + at, width, width, height);
    at += width * height;
  });
}

/// Copies `region` from one tile's buffer straight into another's (a local copy): rows of the
/// region (its last dim) are contiguous in both tiles; the rows along the dim before go as one
/// 2-D copy.
template <memory_policy M>
void copy_region(M& memory, const box& from_tile, const std::byte* from, const box& to_tile, std::byte* to,
                 const box& region, std::size_t eb) {
  if (region.empty()) return;
  const int rank = region.rank;
  std::size_t from_stride[max_rank], to_stride[max_rank];
  std::size_t a = eb, b = eb;
  for (int k = rank - 1; k >= 0; --k) {
    from_stride[k] = a, a *= static_cast<std::size_t>(from_tile[k].size());
    to_stride[k] = b, b *= static_cast<std::size_t>(to_tile[k].size());
  }
  const std::size_t width = static_cast<std::size_t>(region[rank - 1].size()) * eb;
  const int rows = rank - 2;  // -1 for a 1-d tensor: one row
  const std::size_t height = rows >= 0 ? static_cast<std::size_t>(region[rows].size()) : 1;
  index_t idx[max_rank];
  for (int k = 0; k < rank; ++k) idx[k] = region[k].lo;
  while (true) {
    std::size_t off_from = 0, off_to = 0;
    for (int k = 0; k < rank; ++k) {
      off_from += static_cast<std::size_t>(idx[k] - from_tile[k].lo) * from_stride[k];
      off_to += static_cast<std::size_t>(idx[k] - to_tile[k].lo) * to_stride[k];
    }
    memory.copy_2d(to + off_to, rows >= 0 ? to_stride[rows] : width, from + off_from, rows >= 0 ? from_stride[rows] : width,
                   width, height);
    int k = rows - 1;
    while (k >= 0 && ++idx[k] == region[k].hi) idx[k] = region[k].lo, --k;
    if (k < 0) return;
  }
}

/// Host forms with their sizes checked, for callers outside an executor.
inline void pack(const box& tile, std::span<const std::byte> from, const box& region, std::size_t element_bytes,
                 std::span<std::byte> to) {
  if (from.size() < detail::checked_tile_bytes(tile, element_bytes, "pack") ||
      to.size() < detail::checked_tile_bytes(region, element_bytes, "pack") || tile.rank != region.rank || !tile.contains(region))
    throw error("pack: buffer smaller than its tile or region " + region.to_string());
  host_memory m;
  pack(m, tile, from.data(), region, element_bytes, to.data());
}
inline void unpack(std::span<const std::byte> from, const box& tile, std::span<std::byte> to, const box& region,
                   std::size_t element_bytes) {
  if (to.size() < detail::checked_tile_bytes(tile, element_bytes, "unpack") ||
      from.size() < detail::checked_tile_bytes(region, element_bytes, "unpack") || tile.rank != region.rank ||
      !tile.contains(region))
    throw error("unpack: buffer smaller than its tile or region " + region.to_string());
  host_memory m;
  unpack(m, from.data(), tile, to.data(), region, element_bytes);
}
inline void copy_region(const box& from_tile, std::span<const std::byte> from, const box& to_tile, std::span<std::byte> to,
                        const box& region, std::size_t element_bytes) {
  if (region.rank < 1 || region.rank > max_rank)  // before its dims are read
    throw error("copy_region: a region of rank " + std::to_string(region.rank) + "; ranks are 1.." + std::to_string(max_rank));
  if (region.empty()) return;
  if (from.size() < detail::checked_tile_bytes(from_tile, element_bytes, "copy_region") ||
      to.size() < detail::checked_tile_bytes(to_tile, element_bytes, "copy_region") || from_tile.rank != region.rank ||
      to_tile.rank != region.rank || !from_tile.contains(region) || !to_tile.contains(region))
    throw error("copy_region: buffer smaller than its tile, or region outside it");
  host_memory m;
  copy_region(m, from_tile, from.data(), to_tile, to.data(), region, element_bytes);
}

}  // namespace meshcast

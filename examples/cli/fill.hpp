// The fixed fill of meshcast-reshard: every element holds its global row-major linear index,
// little-endian, in element_bytes bytes (an int32 or int64 wrapping modulo 2^(8 * element_bytes)).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include <meshcast/meshcast.hpp>

namespace meshcast::cli {

/// Calls f(byte_offset_in_tile, global_linear_index) for every element of `tile`.
template <class F>
void for_each_tile_element(const box& tile, const extents_value& shape, std::size_t eb, F&& f) {
  if (tile.empty()) return;
  index_t idx[max_rank];
  for (int d = 0; d < tile.rank; ++d) idx[d] = tile[d].lo;
  std::size_t offset = 0;
  while (true) {
    index_t linear = 0;
    for (int d = 0; d < tile.rank; ++d) linear = linear * shape[d] + idx[d];
    f(offset, static_cast<std::uint64_t>(linear));
    offset += eb;
    int d = tile.rank - 1;
    while (d >= 0 && ++idx[d] == tile[d].hi) idx[d] = tile[d].lo, --d;
    if (d < 0) return;
  }
}

inline void put_index(std::byte* at, std::uint64_t value, std::size_t eb) {
  for (std::size_t b = 0; b < eb; ++b) at[b] = static_cast<std::byte>(b < 8 ? (value >> (8 * b)) & 0xff : 0);
}

inline void fill(const box& tile, const extents_value& shape, std::size_t eb, std::span<std::byte> out) {
  for_each_tile_element(tile, shape, eb, [&](std::size_t off, std::uint64_t v) { put_index(out.data() + off, v, eb); });
}

/// Number of elements of `tile` in `in` that do not hold their index.
inline std::size_t count_wrong(const box& tile, const extents_value& shape, std::size_t eb, std::span<const std::byte> in) {
  std::size_t wrong = 0;
  std::byte expect[16];
  for_each_tile_element(tile, shape, eb, [&](std::size_t off, std::uint64_t v) {
    put_index(expect, v, eb < 16 ? eb : 16);
    for (std::size_t b = 0; b < eb; ++b)
      if (in[off + b] != (b < 16 ? expect[b] : std::byte{0})) {
        ++wrong;
        return;
      }
  });
  return wrong;
}

}  // namespace meshcast::cli

// A region of a dense row-major tile as contiguous runs of bytes: how pack.hpp copies it, and
// whether it is one run, which decides whether the executor sends a piece straight from (or
// receives it into) a shard, and so how many messages the model times (schedule/bundle_messages.hpp).
#pragma once

#include <cstddef>

#include "box.hpp"

namespace meshcast::detail {

// The region inside the tile as runs: the level `d` below which runs are whole, the run length
// in bytes, and the tile's byte strides.
struct run_layout {
  int d = 0;
  std::size_t run = 0;
  std::size_t stride[max_rank] = {};
};
inline run_layout layout_of_runs(const box& tile, const box& region, std::size_t element_bytes) {
  run_layout l;
  const int rank = tile.rank;
  l.run = element_bytes;
  int d = rank - 1;
  while (d > 0 && region[d].lo == tile[d].lo && region[d].hi == tile[d].hi) l.run *= static_cast<std::size_t>(tile[d].size()), --d;
  l.run *= static_cast<std::size_t>(region[d].size());
  l.d = d;
  std::size_t s = element_bytes;
  for (int k = rank - 1; k >= 0; --k) l.stride[k] = s, s *= static_cast<std::size_t>(tile[k].size());
  return l;
}

// Where `region` starts in the row-major `tile`, in bytes, when it is one contiguous run there
// (dims before its first partial one have extent 1): such a region is sent from, or received
// into, the shard itself, with no message buffer. `not_contiguous` when it is not.
inline constexpr std::size_t not_contiguous = static_cast<std::size_t>(-1);
inline std::size_t contiguous_offset(const box& tile, const box& region, std::size_t element_bytes) {
  if (region.empty() || !tile.contains(region)) return not_contiguous;
  const run_layout l = layout_of_runs(tile, region, element_bytes);
  for (int k = 0; k < l.d; ++k)
    if (region[k].size() != 1) return not_contiguous;
  std::size_t offset = static_cast<std::size_t>(region[l.d].lo - tile[l.d].lo) * l.stride[l.d];
  for (int k = 0; k < l.d; ++k) offset += static_cast<std::size_t>(region[k].lo - tile[k].lo) * l.stride[k];
  return offset;
}

}  // namespace meshcast::detail

// A 2-D tensor whose element (i, j) holds i * columns + j: a shard of it filled, and checked, so
// that the NCCL one-call tests see every element land where it belongs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <meshcast/meshcast.hpp>

namespace meshcast_test {

inline std::vector<std::int32_t> row_major_shard(const meshcast::box& tile, meshcast::index_t columns) {
  std::vector<std::int32_t> v;
  v.reserve(static_cast<std::size_t>(tile.volume()));
  for (meshcast::index_t i = tile[0].lo; i < tile[0].hi; ++i)
    for (meshcast::index_t j = tile[1].lo; j < tile[1].hi; ++j) v.push_back(static_cast<std::int32_t>(i * columns + j));
  return v;
}
inline bool holds_row_major(const meshcast::box& tile, meshcast::index_t columns, const std::vector<std::int32_t>& shard) {
  return shard == row_major_shard(tile, columns);
}

}  // namespace meshcast_test

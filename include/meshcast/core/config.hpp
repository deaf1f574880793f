// Basic types and limits shared by every meshcast header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>

namespace meshcast {

/// Signed index type for tensor coordinates, sizes and byte counts.
using index_t = std::int64_t;

/// Marks an extent that is only known at run time (the role `std::dynamic_extent` plays for mdspan).
inline constexpr index_t dyn = std::numeric_limits<index_t>::min();

/// Ranks are stored inline (no allocation), so a fixed ceiling keeps every value type constexpr-friendly.
inline constexpr int max_rank = 8;

/// Most devices a mesh may have, and the bound on every global device id (ids lie in
/// [0, max_devices)): per-device tables stay small and every id fits an `int` (an MPI rank).
inline constexpr index_t max_devices = index_t{1} << 20;

/// Largest element size in bytes.
inline constexpr index_t max_element_bytes = index_t{1} << 20;

/// Most NICs one host may have.
inline constexpr int max_nics_per_host = 64;

}  // namespace meshcast

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

}  // namespace meshcast

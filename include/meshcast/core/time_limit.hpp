// The longest time limit meshcast accepts, alone: options that only name it need nothing of the
// clock (detail/deadline.hpp turns limits into points in time).
#pragma once

namespace meshcast {

/// Longest time limit any solver or wait accepts, in seconds (about 11.6 days).
inline constexpr double max_time_limit_s = 1e6;

}  // namespace meshcast

// The checked arithmetic automatic sharding uses, under the names it has always used there: the
// functions themselves are core/detail/checked.hpp's (one implementation for the library).
#pragma once

#include "../core/detail/checked.hpp"

namespace meshcast::autoshard {

/// a * b for non-negative sizes; throws `error` naming `what` when it does not fit in index_t.
inline constexpr auto& checked_mul = meshcast::detail::checked_size_mul;
/// a + b for non-negative sizes; throws `error` naming `what` on overflow.
inline constexpr auto& checked_add = meshcast::detail::checked_size_add;
/// A real that must be finite and at least `lo` (strictly above it when `strict`).
using meshcast::detail::checked_real;

}  // namespace meshcast::autoshard

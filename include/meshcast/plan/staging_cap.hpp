// The default staging cap, apart from the code that keeps it (staging.hpp), so that the options
// of the one call can name it without pulling in the planner.
#pragma once

#include <cstddef>

namespace meshcast {

/// The cap the one call, the resharders and the command-line tools use unless told otherwise.
inline constexpr std::size_t default_max_staging_bytes = std::size_t{256} << 20;

}  // namespace meshcast

// Forwarding header: this header moved to <meshcast/core/detail/checked.hpp> (the layered tree,
// docs/layering.md). It stays for one release; include the new path.
#pragma once

#include "../core/detail/checked.hpp"

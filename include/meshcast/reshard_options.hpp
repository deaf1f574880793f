// Forwarding header: this header moved to <meshcast/api/reshard_options.hpp> (the layered tree,
// docs/layering.md). It stays for one release; include the new path.
#pragma once

#include "api/reshard_options.hpp"

// Forwarding header: this header moved to <meshcast/api/manifest.hpp> (the layered tree,
// docs/layering.md). It stays for one release; include the new path.
#pragma once

#include "api/manifest.hpp"

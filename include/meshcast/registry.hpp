// Forwarding header: this header moved to <meshcast/core/registry.hpp> (the layered tree,
// docs/layering.md). It stays for one release; include the new path.
#pragma once

#include "core/registry.hpp"

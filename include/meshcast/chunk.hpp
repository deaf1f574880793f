// Forwarding header: this header moved to <meshcast/layout/chunk.hpp> (the layered tree,
// docs/layering.md). It stays for one release; include the new path.
#pragma once

#include "layout/chunk.hpp"

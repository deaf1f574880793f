// Forwarding header: this header moved to <meshcast/exec/memory/cuda.hpp> (the layered tree,
// docs/layering.md). It stays for one release; include the new path.
#pragma once

#include "../exec/memory/cuda.hpp"

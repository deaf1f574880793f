// Forwarding header: this header moved to <meshcast/exec/backend.hpp> (the layered tree,
// docs/layering.md). It stays for one release; include the new path.
#pragma once

#include "exec/backend.hpp"

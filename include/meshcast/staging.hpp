// Forwarding header: this header moved to <meshcast/plan/staging.hpp> (the layered tree,
// docs/layering.md). It stays for one release; include the new path.
#pragma once

#include "plan/staging.hpp"

// Forwarding header: this header moved to <meshcast/plan/plan.hpp> (the layered tree,
// docs/layering.md). It stays for one release; include the new path.
#pragma once

#include "plan/plan.hpp"

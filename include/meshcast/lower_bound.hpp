// Forwarding header: this header moved to <meshcast/schedule/lower_bound.hpp> (the layered tree,
// docs/layering.md). It stays for one release; include the new path.
#pragma once

#include "schedule/lower_bound.hpp"

// Forwarding header: this header moved to <meshcast/schedule/solver/dispatch.hpp> (the layered tree,
// docs/layering.md). It stays for one release; include the new path.
#pragma once

#include "../schedule/solver/dispatch.hpp"

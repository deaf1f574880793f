// Forwarding header: this header moved to <meshcast/model/ordered_engine.hpp> (the layered tree,
// docs/layering.md). It stays for one release; include the new path.
#pragma once

#include "model/ordered_engine.hpp"

// Forwarding header: this header moved to <meshcast/model/op.hpp> (the layered tree,
// docs/layering.md). It stays for one release; include the new path.
#pragma once

#include "model/op.hpp"

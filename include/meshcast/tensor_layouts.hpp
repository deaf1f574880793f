// Forwarding header: this header moved to <meshcast/plan/tensor_layouts.hpp> (the layered tree,
// docs/layering.md). It stays for one release; include the new path.
#pragma once

#include "plan/tensor_layouts.hpp"

// Forwarding header: this header moved to <meshcast/api/batch_checks.hpp> (the layered tree,
// docs/layering.md). It stays for one release; include the new path.
#pragma once

#include "api/batch_checks.hpp"

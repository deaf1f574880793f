// Forwarding header: this header moved to <meshcast/schedule/solver/open_shop.hpp> (the layered tree,
// docs/layering.md). It stays for one release; include the new path.
#pragma once

#include "../schedule/solver/open_shop.hpp"

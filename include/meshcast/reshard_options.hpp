// Forwarding header: this header moved to <meshcast/api/reshard_options.hpp> (the layered tree,
// docs/layering.md); network_from, which it held too, is in <meshcast/api/network_from.hpp>,
// which includes it. It stays for one release; include the new paths.
#pragma once

#include "api/network_from.hpp"

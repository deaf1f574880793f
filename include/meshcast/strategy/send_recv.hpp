// Forwarding header: this header moved to <meshcast/schedule/strategy/send_recv.hpp> (the layered tree,
// docs/layering.md). It stays for one release; include the new path.
#pragma once

#include "../schedule/strategy/send_recv.hpp"

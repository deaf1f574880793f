// Forwarding header: this header moved to <meshcast/api/benchmark_nccl.hpp> (the layered tree,
// docs/layering.md). It stays for one release; include the new path.
#pragma once

#include "api/benchmark_nccl.hpp"

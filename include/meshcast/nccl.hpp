// <meshcast/nccl.hpp>: a public entry point. It gives the front end of <meshcast/api/nccl.hpp>,
// where the code lives (layered tree: docs/layering.md), and, header-only, the umbrella header
// too. In compiled mode (MESHCAST_COMPILED_NCCL) it brings only the front end's declarations, as
// <meshcast/mpi.hpp> does: programs that plan, solve or name other policies include
// <meshcast/meshcast.hpp> too.
#pragma once

#if !defined(MESHCAST_COMPILED_NCCL)
#include "meshcast.hpp"
#endif
#include "api/nccl.hpp"

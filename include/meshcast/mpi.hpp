// <meshcast/mpi.hpp>: a public entry point. It gives the umbrella header and the front end of
// <meshcast/api/mpi.hpp>, where the code lives (layered tree: docs/layering.md).
#pragma once

#include "meshcast.hpp"
#include "api/mpi.hpp"

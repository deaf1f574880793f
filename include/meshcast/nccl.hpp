// <meshcast/nccl.hpp>: a public entry point. It gives the umbrella header and the front end of
// <meshcast/api/nccl.hpp>, where the code lives (layered tree: docs/layering.md).
#pragma once

#include "meshcast.hpp"
#include "api/nccl.hpp"

// Forwarding header: edge_colouring now lives in <meshcast/core/detail/edge_colour.hpp>, beside
// edge_colour, which it uses (the layered tree, docs/layering.md). It stays for one release.
#pragma once

#include "../core/detail/edge_colour.hpp"

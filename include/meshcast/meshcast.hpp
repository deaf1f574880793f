// meshcast: plans and runs cross-mesh tensor resharding. The umbrella header.
#pragma once

#include "config.hpp"
#include "error.hpp"
#include "extents.hpp"
#include "mesh.hpp"
#include "shape.hpp"
#include "spec.hpp"
#include "box.hpp"
#include "chunk.hpp"
#include "layout.hpp"
#include "placement.hpp"
#include "plan.hpp"
#include "version.hpp"

// meshcast pipelines: ordering the transfers between the meshes of pipeline stages so that
// pipelines do not serialize. The umbrella header of the pipeline part (not included by
// meshcast.hpp): descriptions (C++ and JSON), instruction lists, the simulator of their pinned
// semantics, the ordering policies and the choice of one by name.
#pragma once

#include "pipeline/description.hpp"
#include "pipeline/instructions.hpp"
#include "pipeline/graph.hpp"
#include "pipeline/simulate.hpp"
#include "pipeline/lower_bound.hpp"
#include "pipeline/policy.hpp"
#include "pipeline/prior_first.hpp"
#include "pipeline/later_first.hpp"
#include "pipeline/rounds.hpp"
#include "pipeline/list_scheduling.hpp"
#include "pipeline/optimal.hpp"
#include "pipeline/policies.hpp"
#include "pipeline/order.hpp"
#include "pipeline/edge_time.hpp"
#include "pipeline/from_json.hpp"

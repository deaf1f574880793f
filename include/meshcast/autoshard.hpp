// meshcast automatic sharding: chooses an R / S spec for every tensor of a model graph on a
// logical device mesh by minimising compute plus communication (collectives with pinned
// alpha-beta costs, other reshards costed by meshcast's own planner and model). Not included by
// meshcast.hpp. The ilp solver needs COIN-OR CBC: define MESHCAST_HAS_CBC=1 and link CBC to get it.
#pragma once

#include "autoshard/checked.hpp"
#include "autoshard/graph.hpp"
#include "autoshard/graph_json.hpp"
#include "autoshard/mesh_model.hpp"
#include "autoshard/collectives.hpp"
#include "autoshard/sharding.hpp"
#include "autoshard/reshard_cost.hpp"
#include "autoshard/reshard.hpp"
#include "autoshard/strategies.hpp"
#include "autoshard/problem.hpp"
#include "autoshard/cost_model.hpp"
#include "autoshard/evaluate.hpp"
#include "autoshard/solver.hpp"
#include "autoshard/solvers.hpp"
#include "autoshard/plan.hpp"

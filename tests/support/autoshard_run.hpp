// auto_shard with solver S and a 60 s limit: the autoshard tests' one way to solve a graph, so
// that every test file gives the solvers the same room.
#pragma once

#include <meshcast/autoshard.hpp>

namespace meshcast::testing {

template <class S>
autoshard::sharding_plan run(const autoshard::graph& g, const autoshard::mesh_model& m, S s = {}) {
  return autoshard::auto_shard(g, m, s, {.time_limit_s = 60});
}

}  // namespace meshcast::testing

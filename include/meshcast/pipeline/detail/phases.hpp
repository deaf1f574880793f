// Lists built phase by phase, the structure of the fixed-rule policies.
//
// Every compute gets a step: 0 if nothing comes before it, else one more than the step of the
// compute before it on its stage and of every compute whose data it receives (the clock of a
// synchronous pipeline, where all stages compute at once and then communicate). The transfers
// of phase p are those whose data a compute of step p produced. All operations are put in one
// order: by step or phase, the computes of step p before the transfers of phase p before the
// computes of step p + 1, transfers within a phase by a policy's key. Every stage's list is
// that order restricted to the stage, so the lists cannot deadlock (`graph::project`).
#pragma once

#include <algorithm>
#include <array>
#include <utility>
#include <vector>

#include "../graph.hpp"

namespace meshcast::pipeline::detail {

/// The step of every compute (indexed by compute id).
inline std::vector<index_t> compute_steps(const graph& g) {
  std::vector<index_t> step(static_cast<std::size_t>(g.compute_count()), 0);
  for (graph::id o : g.topological_order()) {
    if (!g.is_compute(o)) continue;
    index_t s = 0;
    g.for_each_predecessor(o, [&](graph::id p) {
      const graph::id c = g.is_compute(p) ? p : g.producer(p);
      s = std::max(s, step[c] + 1);
    });
    step[o] = s;
  }
  return step;
}

using phase_key = std::array<index_t, 4>;

/// The lists of the phase order; `key(t)` orders the transfers of one phase (smaller first).
template <class Key>
lists phase_lists(const graph& g, const std::vector<index_t>& step, Key&& key) {
  struct item {
    index_t level;
    int type;  // 0 compute, 1 transfer
    phase_key k;
    graph::id o;
  };
  std::vector<item> items;
  items.reserve(static_cast<std::size_t>(g.size()));
  for (graph::id c = 0; c < g.compute_count(); ++c) items.push_back({step[c], 0, {g.stage_of(c), 0, 0, 0}, c});
  for (graph::id t = g.compute_count(); t < g.size(); ++t) items.push_back({step[g.producer(t)], 1, key(t), t});
  std::sort(items.begin(), items.end(), [](const item& a, const item& b) {
    if (a.level != b.level) return a.level < b.level;
    if (a.type != b.type) return a.type < b.type;
    if (a.k != b.k) return a.k < b.k;
    return a.o < b.o;
  });
  std::vector<graph::id> order;
  order.reserve(items.size());
  for (const item& x : items) order.push_back(x.o);
  return g.project(order);
}

}  // namespace meshcast::pipeline::detail

// Pipelines for the tests: chains, the seed's U-Nets and random DAGs.
#pragma once

#include <random>
#include <vector>

#include <meshcast/pipeline.hpp>

namespace meshcast::testing {

namespace pl = meshcast::pipeline;

inline pl::description chain_pipeline(index_t n, index_t m, double forward = 2, double transfer = 1,
                                      pl::schedule_kind k = pl::schedule_kind::forward_only,
                                      pl::stream_mode s = pl::stream_mode::shared) {
  pl::description d;
  d.microbatches = m;
  d.schedule = k;
  d.streams = s;
  for (index_t i = 0; i < n; ++i) d.stages.push_back({forward, 2 * forward});
  for (index_t i = 0; i + 1 < n; ++i) d.edges.push_back({i, i + 1, transfer});
  return d;
}

/// A chain with extra skip transfers (U-Net), e.g. {{0, 3}} or {{0, 5}, {1, 4}}.
inline pl::description unet_pipeline(index_t n, index_t m, const std::vector<std::pair<index_t, index_t>>& skips,
                                     double forward = 2, double transfer = 1,
                                     pl::schedule_kind k = pl::schedule_kind::forward_only,
                                     pl::stream_mode s = pl::stream_mode::shared) {
  pl::description d = chain_pipeline(n, m, forward, transfer, k, s);
  for (auto [a, b] : skips) d.edges.push_back({a, b, transfer});
  return d;
}

struct random_pipeline_source {
  std::mt19937_64 rng;
  explicit random_pipeline_source(std::uint64_t seed) : rng(seed) {}
  int uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }
  double time(int lo, int hi) { return uniform(lo, hi); }  // integral times: exact sums

  /// A random DAG pipeline: every (a, b), a < b, is an edge with probability `density`; chain
  /// edges more likely; integral times, some zero.
  pl::description dag(index_t n, index_t m, pl::schedule_kind k, pl::stream_mode s, double density = 0.3) {
    pl::description d;
    d.microbatches = m;
    d.schedule = k;
    d.streams = s;
    for (index_t i = 0; i < n; ++i) d.stages.push_back({time(0, 4), time(0, 6)});
    std::uniform_real_distribution<double> u(0, 1);
    for (index_t a = 0; a < n; ++a)
      for (index_t b = a + 1; b < n; ++b)
        if (u(rng) < (b == a + 1 ? 0.8 : density)) {
          pl::edge e{a, b, time(0, 3)};
          if (uniform(0, 2) == 0) e.backward_time = time(0, 3);
          d.edges.push_back(e);
        }
    return d;
  }
};

}  // namespace meshcast::testing

// The pinned cost of a collective over mesh axes (issue 11):
//
//   over one axis of n devices moving B bytes (the full buffer: what each device holds before an
//   all-reduce, reduce-scatter or all-to-all, and after an all-gather; nccl-tests' convention)
//     all-reduce      2(n-1)/n * B/bw + 2(n-1) * lat
//     all-gather      (n-1)/n * B/bw + (n-1) * lat
//     reduce-scatter  (n-1)/n * B/bw + (n-1) * lat
//     all-to-all      (n-1)/n * B/bw + (n-1) * lat
//   over several axes: the sum of the per-axis steps, each with the same B.
#pragma once

#include <string>
#include <vector>

#include "mesh_model.hpp"

namespace meshcast::autoshard {

enum class collective { all_reduce, all_gather, reduce_scatter, all_to_all };

inline const char* collective_name(collective c) noexcept {
  switch (c) {
    case collective::all_reduce: return "all_reduce";
    case collective::all_gather: return "all_gather";
    case collective::reduce_scatter: return "reduce_scatter";
    case collective::all_to_all: return "all_to_all";
  }
  return "?";
}

/// Seconds of collective `c` over `axes` moving `bytes` (the full buffer) on mesh `m`.
inline double collective_seconds(const mesh_model& m, collective c, const std::vector<int>& axes, index_t bytes) {
  double t = 0;
  const double b = static_cast<double>(bytes);
  for (int a : axes) {
    const double n = static_cast<double>(m.sizes[a]);
    const double f = c == collective::all_reduce ? 2 : 1;
    t += f * (n - 1) / n * b / m.bandwidth[a] + f * (n - 1) * m.latency[a];
  }
  return t;
}

/// One collective an op or a reshard performs.
struct collective_step {
  collective kind = collective::all_reduce;
  std::vector<int> axes;
  index_t bytes = 0;
  double seconds = 0;
};

inline collective_step make_step(const mesh_model& m, collective c, std::vector<int> axes, index_t bytes) {
  collective_step s{c, std::move(axes), bytes, 0};
  s.seconds = collective_seconds(m, c, s.axes, bytes);
  return s;
}

}  // namespace meshcast::autoshard

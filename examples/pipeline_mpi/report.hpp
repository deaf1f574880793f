// What rank 0 makes of the gathered times, per policy: the measured durations, the lists
// re-simulated with them, the stages' measured entries, and the rankings' text.
#pragma once

#include <algorithm>
#include <cstdio>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include <meshcast/pipeline.hpp>

#include "run_lists.hpp"

namespace pipeline_mpi {
using namespace meshcast;
namespace pl = meshcast::pipeline;

struct policy_report {
  std::string name;
  pl::timeline simulated;                 // the stated times
  std::vector<double> runs;               // measured makespans
  std::size_t best = 0;
  std::vector<rank_times> best_times;     // per rank, the best run
  double resimulated = 0;                 // seconds
  double compute_ratio = 0, transfer_ratio = 0;  // measured / stated durations, summed; NaN where nothing was stated
  pl::lists measured_stages;              // per stage: start = first rank's start, end = last rank's end
};

/// measured / stated, or NaN (JSON null, "-" in text) where nothing was stated: a ratio over 0
/// is no figure, and 0 would read as "ran in no time".
inline double ratio_or_nan(double measured, double stated) {
  return stated > 0 ? measured / stated : std::numeric_limits<double>::quiet_NaN();
}

/// Per-operation durations measured in one run (seconds): a compute, its stage's slowest rank; a
/// transfer, from the last participant's start (when both stages had reached it) to the last end.
inline std::vector<double> measured_durations(const pl::graph& g, const std::vector<std::vector<pl::graph::id>>& ids,
                                       const std::vector<rank_times>& times, index_t k) {
  std::vector<double> dur(static_cast<std::size_t>(g.size()), 0), last_start(static_cast<std::size_t>(g.size()), -1), last_end(static_cast<std::size_t>(g.size()), -1);
  for (std::size_t r = 0; r < times.size(); ++r) {
    const index_t s = static_cast<index_t>(r) / k;
    for (std::size_t i = 0; i < ids[s].size(); ++i) {
      const auto o = static_cast<std::size_t>(ids[s][i]);
      const double a = times[r].start[i], b = times[r].end[i];
      if (g.is_compute(ids[s][i])) dur[o] = std::max(dur[o], b - a);
      last_start[o] = std::max(last_start[o], a);
      last_end[o] = std::max(last_end[o], b);
    }
  }
  for (pl::graph::id o = g.compute_count(); o < g.size(); ++o)
    dur[static_cast<std::size_t>(o)] = std::max(0.0, last_end[static_cast<std::size_t>(o)] - last_start[static_cast<std::size_t>(o)]);
  return dur;
}

inline std::string ranking_text(const std::vector<policy_report>& reports, const std::vector<double>& value, double tie) {
  std::vector<std::size_t> order(reports.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return value[a] < value[b]; });
  std::string out;
  for (std::size_t i = 0; i < order.size(); ++i) {
    if (i) out += value[order[i]] <= value[order[i - 1]] * (1 + tie) ? " = " : " < ";
    char buf[64];
    std::snprintf(buf, sizeof buf, " %.4g", value[order[i]]);
    out += reports[order[i]].name + buf;
  }
  return out;
}

/// Each policy's re-simulation with the durations of its best run, the measured over stated
/// ratios, and its stages' entries as measured (first rank's start, last rank's end).
inline void resimulate(std::vector<policy_report>& reports, const pl::description& d, const pl::graph& g,
                       const std::vector<pl::lists>& all_lists,
                       const std::vector<std::vector<std::vector<pl::graph::id>>>& all_ids, index_t k, double unit) {
  for (std::size_t i = 0; i < reports.size(); ++i) {
    policy_report& r = reports[i];
    pl::graph gm(d);
    const std::vector<double> dur = measured_durations(g, all_ids[i], r.best_times, k);
    double stated[2] = {0, 0}, measured[2] = {0, 0};
    for (pl::graph::id o = 0; o < g.size(); ++o) {
      gm.set_duration(o, dur[static_cast<std::size_t>(o)] / unit);
      stated[g.is_compute(o) ? 0 : 1] += g.duration(o) * unit;
      measured[g.is_compute(o) ? 0 : 1] += dur[static_cast<std::size_t>(o)];
    }
    r.compute_ratio = ratio_or_nan(measured[0], stated[0]);
    r.transfer_ratio = ratio_or_nan(measured[1], stated[1]);
    pl::lists l = all_lists[i];
    const pl::simulation sim = pl::simulate(gm, l);
    if (sim.deadlock) throw error("re-simulating " + r.name + "'s lists: " + sim.problem);
    r.resimulated = sim.makespan * unit;
    r.measured_stages = all_lists[i];
    for (index_t s = 0; s < d.stage_count(); ++s)
      for (std::size_t j = 0; j < r.measured_stages[static_cast<std::size_t>(s)].size(); ++j) {
        double a = 1e300, b = 0;
        for (index_t q = s * k; q < (s + 1) * k; ++q) {
          a = std::min(a, r.best_times[static_cast<std::size_t>(q)].start[j]);
          b = std::max(b, r.best_times[static_cast<std::size_t>(q)].end[j]);
        }
        r.measured_stages[static_cast<std::size_t>(s)][j].start = a;
        r.measured_stages[static_cast<std::size_t>(s)][j].end = b;
      }
  }
}

}  // namespace pipeline_mpi

// An independent checker of pipeline instruction lists. It reads only the description and the
// lists' public fields, derives the compute orders from the schedules' definitions on its own,
// and re-simulates the pinned semantics forward in time (at each moment, start everything that
// can start; then jump to the next end), unlike the library's simulator, which resolves
// dependencies without a clock.
#pragma once

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include <meshcast/pipeline.hpp>

namespace meshcast::testing {

namespace pl = meshcast::pipeline;

/// (kind 'F'/'B', microbatch) in the schedule's order on stage i of n.
inline std::vector<std::pair<char, index_t>> expected_computes(const pl::description& d, index_t i) {
  const index_t n = d.stage_count(), m = d.microbatches;
  std::vector<std::pair<char, index_t>> out;
  if (d.schedule == pl::schedule_kind::forward_only || d.schedule == pl::schedule_kind::gpipe) {
    for (index_t j = 0; j < m; ++j) out.push_back({'F', j});
    if (d.schedule == pl::schedule_kind::gpipe)
      for (index_t j = 0; j < m; ++j) out.push_back({'B', j});
    return out;
  }
  // PipeDream-Flush written as warm-up, steady 1F1B, cool-down: the eager variant differs only
  // in how many forwards the warm-up runs before the steady part (which starts with B).
  if (d.schedule == pl::schedule_kind::one_f_one_b) {
    const index_t warm = std::min(m, n - i - 1);
    index_t f = 0, b = 0;
    for (; f < warm; ++f) out.push_back({'F', f});
    while (f < m) {
      out.push_back({'F', f++});
      out.push_back({'B', b++});
    }
    while (b < m) out.push_back({'B', b++});
    return out;
  }
  const index_t warm = std::min(m, 2 * (n - i) - 1);
  index_t f = 0, b = 0;
  for (; f < warm; ++f) out.push_back({'F', f});
  while (b < m) {
    out.push_back({'B', b++});
    if (f < m) out.push_back({'F', f++});
  }
  return out;
}

/// "" when the lists are complete, respect the dependencies in list order, do not deadlock, and
/// carry the times (and `makespan`) an independent re-simulation gives; else the first problem.
inline std::string check_pipeline_lists(const pl::description& d, const pl::lists& l, double makespan,
                                        double tolerance = 1e-9) {
  using pl::op_kind;
  using pl::pass_kind;
  const index_t n = d.stage_count(), m = d.microbatches;
  const bool training = d.schedule != pl::schedule_kind::forward_only;
  const bool separate = d.streams == pl::stream_mode::separate;
  if (static_cast<index_t>(l.size()) != n) return "wrong number of stage lists";
  // transfer key: (edge, pass, mb)
  using tkey = std::tuple<index_t, int, index_t>;
  std::map<tkey, int> sends, recvs;
  for (index_t s = 0; s < n; ++s) {
    const auto want = expected_computes(d, s);
    std::size_t k = 0;
    std::map<std::pair<char, index_t>, std::size_t> compute_at;
    for (std::size_t i = 0; i < l[s].size(); ++i) {
      const pl::instruction& x = l[s][i];
      const std::string at = "stage " + std::to_string(s) + " entry " + std::to_string(i);
      if (x.op == op_kind::forward || x.op == op_kind::backward) {
        const char kind = x.op == op_kind::forward ? 'F' : 'B';
        if (k >= want.size() || want[k] != std::make_pair(kind, x.mb)) return at + ": compute out of the schedule's order";
        compute_at[{kind, x.mb}] = i;
        ++k;
      }
    }
    if (k != want.size()) return "stage " + std::to_string(s) + ": missing computes";
    for (std::size_t i = 0; i < l[s].size(); ++i) {
      const pl::instruction& x = l[s][i];
      if (x.op == op_kind::forward || x.op == op_kind::backward) continue;
      const std::string at = "stage " + std::to_string(s) + " entry " + std::to_string(i);
      if (x.edge < 0 || x.edge >= static_cast<index_t>(d.edges.size())) return at + ": bad edge";
      if (x.mb < 0 || x.mb >= m) return at + ": bad microbatch";
      if (x.pass == pass_kind::backward && !training) return at + ": backward transfer without training";
      const pl::edge& e = d.edges[x.edge];
      const bool fwd = x.pass == pass_kind::forward;
      const index_t from = fwd ? e.from : e.to, to = fwd ? e.to : e.from;
      const bool send = x.op == op_kind::send;
      if ((send ? from : to) != s) return at + ": transfer on the wrong stage";
      if (x.peer != (send ? to : from)) return at + ": wrong peer";
      (send ? sends : recvs)[{x.edge, fwd ? 0 : 1, x.mb}]++;
      // dependencies in list order
      const char kind = fwd ? 'F' : 'B';
      const std::size_t c = compute_at.at({kind, x.mb});
      if (send && !(c < i)) return at + ": send before the compute that produces its data";
      if (!send && !(i < c)) return at + ": recv after the compute that consumes it";
    }
  }
  const std::size_t transfers = d.edges.size() * static_cast<std::size_t>(m) * (training ? 2 : 1);
  if (sends.size() != transfers || recvs.size() != transfers) return "a transfer is missing";
  for (const auto& [key, count] : sends)
    if (count != 1 || recvs[key] != 1) return "a transfer appears more than once";

  // Re-simulation forward in time.
  const int streams = separate ? 2 : 1;
  std::vector<std::vector<std::vector<std::size_t>>> seq(n, std::vector<std::vector<std::size_t>>(streams));
  for (index_t s = 0; s < n; ++s)
    for (std::size_t i = 0; i < l[s].size(); ++i)
      seq[s][separate && l[s][i].is_transfer() ? 1 : 0].push_back(i);
  std::vector<std::vector<std::size_t>> ptr(n, std::vector<std::size_t>(streams, 0));
  std::vector<std::vector<double>> busy(n, std::vector<double>(streams, 0));
  std::map<std::pair<char, std::pair<index_t, index_t>>, double> compute_end;  // (kind, (stage, mb))
  std::map<tkey, double> transfer_end;
  std::vector<std::vector<std::pair<double, double>>> times(n);
  for (index_t s = 0; s < n; ++s) times[s].assign(l[s].size(), {-1, -1});
  auto done_by = [](const auto& map, const auto& key, double t) {
    auto it = map.find(key);
    return it != map.end() && it->second <= t;
  };
  double t = 0;
  std::size_t remaining = 0;
  for (index_t s = 0; s < n; ++s) remaining += l[s].size();
  while (remaining > 0) {
    bool started = true;
    while (started) {
      started = false;
      for (index_t s = 0; s < n; ++s)
        for (int q = 0; q < streams; ++q) {
          if (ptr[s][q] >= seq[s][q].size() || busy[s][q] > t) continue;
          const std::size_t i = seq[s][q][ptr[s][q]];
          const pl::instruction& x = l[s][i];
          if (x.is_compute()) {
            const bool fwd = x.op == op_kind::forward;
            bool ready = true;
            for (std::size_t e = 0; e < d.edges.size(); ++e)
              if ((fwd && d.edges[e].to == s) || (!fwd && d.edges[e].from == s))
                ready = ready && done_by(transfer_end, tkey{static_cast<index_t>(e), fwd ? 0 : 1, x.mb}, t);
            if (!ready) continue;
            const double dur = fwd ? d.stages[s].forward : d.stages[s].backward;
            times[s][i] = {t, t + dur};
            busy[s][q] = t + dur;
            compute_end[{fwd ? 'F' : 'B', {s, x.mb}}] = t + dur;
            ++ptr[s][q];
            --remaining;
            started = true;
            continue;
          }
          const index_t p = x.peer;
          const int pq = separate ? 1 : 0;
          if (ptr[p][pq] >= seq[p][pq].size() || busy[p][pq] > t) continue;
          const std::size_t j = seq[p][pq][ptr[p][pq]];
          const pl::instruction& y = l[p][j];
          if (y.is_compute() || y.edge != x.edge || y.pass != x.pass || y.mb != x.mb) continue;
          const bool fwd = x.pass == pass_kind::forward;
          const index_t sender = x.op == op_kind::send ? s : p;
          if (!done_by(compute_end, std::make_pair(fwd ? 'F' : 'B', std::make_pair(sender, x.mb)), t)) continue;
          const pl::edge& e = d.edges[x.edge];
          const double dur = fwd ? e.time : (e.backward_time ? *e.backward_time : e.time);
          times[s][i] = times[p][j] = {t, t + dur};
          busy[s][q] = busy[p][pq] = t + dur;
          transfer_end[{x.edge, fwd ? 0 : 1, x.mb}] = t + dur;
          ++ptr[s][q];
          ++ptr[p][pq];
          remaining -= 2;
          started = true;
        }
    }
    if (remaining == 0) break;
    double next = INFINITY;
    for (index_t s = 0; s < n; ++s)
      for (int q = 0; q < streams; ++q)
        if (busy[s][q] > t) next = std::min(next, busy[s][q]);
    if (next == INFINITY) return "the lists deadlock (independent re-simulation) at time " + std::to_string(t);
    t = next;
  }
  double end = 0;
  auto close = [&](double a, double b) { return std::abs(a - b) <= tolerance * std::max(1.0, std::abs(b)); };
  for (index_t s = 0; s < n; ++s)
    for (std::size_t i = 0; i < l[s].size(); ++i) {
      end = std::max(end, times[s][i].second);
      if (!close(l[s][i].start, times[s][i].first) || !close(l[s][i].end, times[s][i].second))
        return "stage " + std::to_string(s) + " entry " + std::to_string(i) + ": times " + std::to_string(l[s][i].start) +
               ".." + std::to_string(l[s][i].end) + " but the re-simulation gives " + std::to_string(times[s][i].first) +
               ".." + std::to_string(times[s][i].second);
    }
  if (!close(makespan, end)) return "makespan " + std::to_string(makespan) + " but the re-simulation gives " + std::to_string(end);
  return "";
}

}  // namespace meshcast::testing

// The pinned semantics of instruction lists, simulated.
//
// shared streams: a stage does one instruction at a time, in list order. A compute starts when the
//   stage has reached it and is idle; a transfer starts when both its stages have reached it (each
//   at the head of its list and idle) and occupies both for its time.
// separate streams: each stage has a compute stream and a communication stream, each taking the
//   stage's instructions of its kind in list order; a transfer starts when both stages'
//   communication streams have reached it (and are idle), a send also waits for the compute that
//   produced its data, and a compute waits for the receives of its inputs.
// The same waits apply with shared streams (there they hold whenever the lists put each send after
// its compute and each receive before it). The makespan is when every stage has finished. Lists
// that reach a state where nothing can start deadlock: `simulate` reports it, never times.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "../error.hpp"
#include "graph.hpp"

namespace meshcast::pipeline {

/// Thrown by `simulate_or_throw` for lists that deadlock (a `meshcast::error`).
class deadlock_error : public error {
 public:
  using error::error;
};

struct simulation {
  bool deadlock = false;
  std::string problem;  ///< when deadlocked: which stages wait where, and for what
  double makespan = 0;
};

namespace detail {
inline std::string describe(const instruction& x, index_t stage) {
  std::string s = std::string(to_string(x.op)) + " of microbatch " + std::to_string(x.mb);
  if (x.is_transfer())
    s += " on edges[" + std::to_string(x.edge) + "] (" + std::string(to_string(x.pass)) + ", " +
         (x.op == op_kind::send ? "to" : "from") + " stage " + std::to_string(x.peer) + ")";
  return "stage " + std::to_string(stage) + " at " + s;
}
}  // namespace detail

/// Checks that the lists are lists of this pipeline: every compute and every transfer (its send
/// and its recv) exactly once, computes in the schedule's order, transfers on the right stages
/// with the right peers. Throws `meshcast::error` naming the first bad entry
/// ("stages[1][4]: ..."). Returns each entry's operation id, per stage.
inline std::vector<std::vector<graph::id>> identify(const graph& g, const lists& l) {
  const description& d = g.source();
  if (static_cast<index_t>(l.size()) != g.stages())
    throw error("the lists name " + std::to_string(l.size()) + " stages but the pipeline has " +
                std::to_string(g.stages()));
  std::vector<std::vector<graph::id>> ids(l.size());
  std::vector<unsigned char> seen_send(static_cast<std::size_t>(g.transfer_count()), 0),
      seen_recv(static_cast<std::size_t>(g.transfer_count()), 0);
  for (index_t s = 0; s < g.stages(); ++s) {
    index_t next_compute = 0;
    ids[s].reserve(l[s].size());
    for (std::size_t i = 0; i < l[s].size(); ++i) {
      const instruction& x = l[s][i];
      const std::string at = "stages[" + std::to_string(s) + "][" + std::to_string(i) + "]";
      if (x.mb < 0 || x.mb >= g.microbatches())
        throw error(at + ": microbatch " + std::to_string(x.mb) + " is outside [0, " +
                    std::to_string(g.microbatches() - 1) + "]");
      if (x.is_compute()) {
        if (x.op == op_kind::backward && !d.training())
          throw error(at + ": B in a forward_only pipeline");
        if (next_compute >= g.computes_per_stage()) throw error(at + ": one compute too many");
        const graph::id c = g.compute(s, next_compute);
        if (g.kind(c) != x.op || g.mb(c) != x.mb)
          throw error(at + ": " + std::string(to_string(x.op)) + " of microbatch " + std::to_string(x.mb) +
                      " where the schedule puts " + std::string(to_string(g.kind(c))) + " of microbatch " +
                      std::to_string(g.mb(c)));
        ++next_compute;
        ids[s].push_back(c);
        continue;
      }
      if (x.edge < 0 || x.edge >= static_cast<index_t>(d.edges.size()))
        throw error(at + ": edge " + std::to_string(x.edge) + " does not exist");
      if (x.pass == pass_kind::backward && !d.training())
        throw error(at + ": a backward transfer in a forward_only pipeline");
      const graph::id t = g.transfer(x.edge, x.pass, x.mb);
      const bool sends = x.op == op_kind::send;
      const index_t self = sends ? g.sender(t) : g.receiver(t), other = sends ? g.receiver(t) : g.sender(t);
      if (self != s)
        throw error(at + ": this " + std::string(to_string(x.op)) + " belongs to stage " + std::to_string(self));
      if (x.peer != other)
        throw error(at + ": peer is " + std::to_string(x.peer) + " but the transfer's other stage is " +
                    std::to_string(other));
      unsigned char& seen = sends ? seen_send[t - g.compute_count()] : seen_recv[t - g.compute_count()];
      if (seen) throw error(at + ": this transfer appears twice");
      seen = 1;
      ids[s].push_back(t);
    }
    if (next_compute != g.computes_per_stage())
      throw error("stages[" + std::to_string(s) + "] has " + std::to_string(next_compute) + " computes, the schedule " +
                  std::to_string(g.computes_per_stage()));
  }
  for (graph::id t = g.compute_count(); t < g.size(); ++t) {
    const std::size_t k = static_cast<std::size_t>(t - g.compute_count());
    if (!seen_send[k] || !seen_recv[k])
      throw error("the " + std::string(seen_send[k] ? "recv" : "send") + " of microbatch " + std::to_string(g.mb(t)) +
                  " on edges[" + std::to_string(g.edge_of(t)) + "] (" + std::string(to_string(g.pass_of(t))) +
                  ") is missing from stage " + std::to_string(seen_send[k] ? g.receiver(t) : g.sender(t)));
  }
  return ids;
}

/// Runs the lists under the pinned semantics: sets every entry's start and end and returns the
/// makespan, or reports a deadlock (then the times are meaningless). Throws `meshcast::error` if
/// the lists are not lists of this pipeline (see `identify`).
inline simulation simulate(const graph& g, lists& l) {
  const std::vector<std::vector<graph::id>> ids = identify(g, l);
  const bool separate = g.source().streams == stream_mode::separate;
  const index_t n = g.stages();
  // Streams: shared: stream s is stage s; separate: 2s computes, 2s+1 communicates.
  const index_t stream_count = separate ? 2 * n : n;
  std::vector<std::vector<std::size_t>> seq(static_cast<std::size_t>(stream_count));  // positions in l[s]
  for (index_t s = 0; s < n; ++s)
    for (std::size_t i = 0; i < ids[s].size(); ++i)
      seq[separate ? 2 * s + (g.is_compute(ids[s][i]) ? 0 : 1) : s].push_back(i);
  auto stage_of_stream = [&](index_t q) { return separate ? q / 2 : q; };
  auto comm_stream = [&](index_t s) { return separate ? 2 * s + 1 : s; };
  auto compute_stream = [&](index_t s) { return separate ? 2 * s : s; };

  const std::size_t N = static_cast<std::size_t>(g.size());
  std::vector<double> start(N, 0), end(N, 0);
  std::vector<unsigned char> resolved(N, 0), arrived(N, 0);  // arrived: bit 1 sender, bit 2 receiver
  std::vector<std::size_t> ptr(static_cast<std::size_t>(stream_count), 0);
  std::vector<double> free_at(static_cast<std::size_t>(stream_count), 0);
  std::vector<index_t> work;
  std::vector<unsigned char> queued(static_cast<std::size_t>(stream_count), 1);
  for (index_t q = stream_count; q-- > 0;) work.push_back(q);
  auto wake = [&](index_t q) {
    if (!queued[q]) queued[q] = 1, work.push_back(q);
  };
  auto head = [&](index_t q) { return ids[stage_of_stream(q)][seq[q][ptr[q]]]; };

  while (!work.empty()) {
    const index_t q = work.back();
    work.pop_back();
    queued[q] = 0;
    const index_t s = stage_of_stream(q);
    while (ptr[q] < seq[q].size()) {
      const graph::id o = head(q);
      if (g.is_compute(o)) {
        double t = free_at[q];
        bool ready = true;
        g.for_each_input(o, [&](graph::id x) {
          if (!resolved[x]) ready = false;
          else t = std::max(t, end[x]);
        });
        if (!ready) break;
        start[o] = t;
        end[o] = t + g.duration(o);
        resolved[o] = 1;
        free_at[q] = end[o];
        ++ptr[q];
        if (separate) wake(comm_stream(s));  // a send may wait for this compute
        continue;
      }
      const index_t from = g.sender(o), to = g.receiver(o);
      arrived[o] |= s == from ? 1 : 2;
      const graph::id p = g.producer(o);
      if (arrived[o] != 3 || !resolved[p]) break;
      const index_t qa = comm_stream(from), qb = comm_stream(to);
      const double t = std::max({free_at[qa], free_at[qb], end[p]});
      start[o] = t;
      end[o] = t + g.duration(o);
      resolved[o] = 1;
      free_at[qa] = free_at[qb] = end[o];
      ++ptr[qa];
      ++ptr[qb];
      wake(q == qa ? qb : qa);
      if (separate) wake(compute_stream(to));  // its consumer may wait for it
    }
  }

  simulation out;
  std::string blocked;
  int shown = 0;
  for (index_t q = 0; q < stream_count; ++q) {
    if (ptr[q] >= seq[q].size()) continue;
    out.deadlock = true;
    if (shown++ < 6) {
      const index_t s = stage_of_stream(q);
      const instruction& x = l[s][seq[q][ptr[q]]];
      blocked += (blocked.empty() ? "" : "; ") + detail::describe(x, s) +
                 (separate ? (q % 2 ? " (communication stream)" : " (compute stream)") : "");
    }
  }
  if (out.deadlock) {
    out.problem = "the lists deadlock: nothing can start while " + blocked + (shown > 6 ? "; ..." : "");
    return out;
  }
  for (index_t s = 0; s < n; ++s)
    for (std::size_t i = 0; i < ids[s].size(); ++i) {
      l[s][i].start = start[ids[s][i]];
      l[s][i].end = end[ids[s][i]];
      out.makespan = std::max(out.makespan, end[ids[s][i]]);
    }
  return out;
}

inline simulation simulate(const description& d, lists& l) { return simulate(graph(d), l); }

/// As `simulate`, but a deadlock throws `deadlock_error`; returns the makespan.
inline double simulate_or_throw(const graph& g, lists& l) {
  simulation r = simulate(g, l);
  if (r.deadlock) throw deadlock_error(r.problem);
  return r.makespan;
}

}  // namespace meshcast::pipeline

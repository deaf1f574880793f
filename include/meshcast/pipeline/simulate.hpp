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
#include <array>
#include <string>
#include <vector>

#include "../core/error.hpp"
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

/// The simulator's engine, on lists of operation ids (as `identify` returns them); keeps its
/// buffers between runs (the policies' local search runs it many times).
class list_simulator {
 public:
  explicit list_simulator(const graph& g)
      : g_(&g), separate_(g.source().streams == stream_mode::separate), streams_(separate_ ? 2 * g.stages() : g.stages()) {
    const std::size_t N = static_cast<std::size_t>(g.size());
    start_.assign(N, 0);
    end_.assign(N, 0);
    resolved_.assign(N, 0);
    arrived_.assign(N, 0);
    seq_.resize(static_cast<std::size_t>(streams_));
    ptr_.assign(static_cast<std::size_t>(streams_), 0);
    free_.assign(static_cast<std::size_t>(streams_), 0);
    queued_.assign(static_cast<std::size_t>(streams_), 0);
  }

  /// Runs the lists; false on a deadlock (then `stuck()` names the blocked streams).
  bool run(const std::vector<std::vector<graph::id>>& ids) {
    const graph& g = *g_;
    std::fill(resolved_.begin(), resolved_.end(), 0);
    std::fill(arrived_.begin(), arrived_.end(), 0);
    std::fill(ptr_.begin(), ptr_.end(), 0);
    std::fill(free_.begin(), free_.end(), 0);
    for (auto& q : seq_) q.clear();
    for (index_t s = 0; s < g.stages(); ++s)
      for (std::size_t i = 0; i < ids[s].size(); ++i)
        seq_[separate_ ? 2 * s + (g.is_compute(ids[s][i]) ? 0 : 1) : s].push_back(ids[s][i]);
    work_.clear();
    for (index_t q = streams_; q-- > 0;) work_.push_back(q), queued_[q] = 1;
    auto wake = [&](index_t q) {
      if (!queued_[q]) queued_[q] = 1, work_.push_back(q);
    };
    auto comm_stream = [&](index_t s) { return separate_ ? 2 * s + 1 : s; };
    makespan_ = 0;
    while (!work_.empty()) {
      const index_t q = work_.back();
      work_.pop_back();
      queued_[q] = 0;
      const index_t s = separate_ ? q / 2 : q;
      while (ptr_[q] < seq_[q].size()) {
        const graph::id o = seq_[q][ptr_[q]];
        if (g.is_compute(o)) {
          double t = free_[q];
          bool ready = true;
          g.for_each_input(o, [&](graph::id x) {
            if (!resolved_[x]) ready = false;
            else t = std::max(t, end_[x]);
          });
          if (!ready) break;
          start_[o] = t;
          end_[o] = t + g.duration(o);
          makespan_ = std::max(makespan_, end_[o]);
          resolved_[o] = 1;
          free_[q] = end_[o];
          ++ptr_[q];
          if (separate_) wake(comm_stream(s));  // a send may wait for this compute
          continue;
        }
        const index_t from = g.sender(o), to = g.receiver(o);
        arrived_[o] |= s == from ? 1 : 2;
        const graph::id p = g.producer(o);
        if (arrived_[o] != 3 || !resolved_[p]) break;
        const index_t qa = comm_stream(from), qb = comm_stream(to);
        const double t = std::max({free_[qa], free_[qb], end_[p]});
        start_[o] = t;
        end_[o] = t + g.duration(o);
        makespan_ = std::max(makespan_, end_[o]);
        resolved_[o] = 1;
        free_[qa] = free_[qb] = end_[o];
        ++ptr_[qa];
        ++ptr_[qb];
        wake(q == qa ? qb : qa);
        if (separate_) wake(2 * to);  // its consumer may wait for it
      }
    }
    for (index_t q = 0; q < streams_; ++q)
      if (ptr_[q] < seq_[q].size()) return false;
    return true;
  }

  double start(graph::id o) const noexcept { return start_[o]; }
  double end(graph::id o) const noexcept { return end_[o]; }
  double makespan() const noexcept { return makespan_; }
  /// After a deadlock: (stage, stream (0 compute or shared, 1 communication), waiting operation)
  /// of every blocked stream.
  std::vector<std::array<index_t, 3>> stuck() const {
    std::vector<std::array<index_t, 3>> out;
    for (index_t q = 0; q < streams_; ++q)
      if (ptr_[q] < seq_[q].size())
        out.push_back({separate_ ? q / 2 : q, separate_ ? q % 2 : 0, seq_[q][ptr_[q]]});
    return out;
  }

 private:
  const graph* g_;
  bool separate_;
  index_t streams_;
  std::vector<double> start_, end_;
  std::vector<unsigned char> resolved_, arrived_;  // arrived: bit 1 sender, bit 2 receiver
  std::vector<std::vector<graph::id>> seq_;
  std::vector<std::size_t> ptr_;
  std::vector<double> free_;
  std::vector<index_t> work_;
  std::vector<unsigned char> queued_;
  double makespan_ = 0;
};

/// Runs the lists under the pinned semantics: sets every entry's start and end and returns the
/// makespan, or reports a deadlock (then the times are meaningless). Throws `meshcast::error` if
/// the lists are not lists of this pipeline (see `identify`).
inline simulation simulate(const graph& g, lists& l) {
  const std::vector<std::vector<graph::id>> ids = identify(g, l);
  list_simulator sim(g);
  simulation out;
  if (!sim.run(ids)) {
    out.deadlock = true;
    std::string blocked;
    const auto stuck = sim.stuck();
    for (std::size_t k = 0; k < stuck.size() && k < 6; ++k) {
      const auto [s, stream, o] = stuck[k];
      blocked += (k ? "; " : "") + detail::describe(g.entry(o, s), s) +
                 (g.source().streams == stream_mode::separate ? (stream ? " (communication stream)" : " (compute stream)") : "");
    }
    out.problem = "the lists deadlock: nothing can start while " + blocked + (stuck.size() > 6 ? "; ..." : "");
    return out;
  }
  for (index_t s = 0; s < g.stages(); ++s)
    for (std::size_t i = 0; i < ids[s].size(); ++i) {
      l[s][i].start = sim.start(ids[s][i]);
      l[s][i].end = sim.end(ids[s][i]);
    }
  out.makespan = sim.makespan();
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

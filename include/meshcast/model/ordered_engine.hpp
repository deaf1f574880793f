// The ordered model's clock, the one engine every solver and the simulator place ops with:
// every resource (NIC direction, device lane) is free from some time on, and an op placed next
// starts when all its resources are free, and occupies them for its duration (some of them
// for less, and from later than its start: transfer_model::held_from, held_until).
//
// A transfer that names a connection slot also keeps the connection rule (connections.hpp): in
// opposite directions between two devices, transfers start together (both by rendezvous) or one
// after the other.
//
// resource_clock places ops for good (list schedules, the simulator), or with an undo log (the
// searches, which take placements back); trial_clock asks what a sequence of ops appended to a
// clock would finish at, without changing the clock (greedy's choice of a sender). Both take
// any op that reads like a transfer_model (resources, held_from/held_until, duration,
// connection, eager): greedy's packed op_timing (schedule/op_timing.hpp) as well as ops.
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "op.hpp"

namespace meshcast {

/// The last transfer placed on one direction of a connection (connections.hpp).
struct connection_use {
  double start = 0, end = 0;
  bool eager = false, used = false;
  friend bool operator==(const connection_use&, const connection_use&) = default;
};

/// When a transfer whose resources are free from `t` may start, given the last transfer the
/// other way on its connection: at `t` if that one has ended; with it, if both go by
/// rendezvous and it starts no earlier than `t`; else once it has ended. `Op` is a
/// transfer_model, or anything that reads like one (schedule/op_timing.hpp).
template <class Op>
double connection_start(const Op& o, double t, const connection_use& other) noexcept {
  if (!other.used || t >= other.end) return t;
  if (!o.eager && !other.eager && t <= other.start) return other.start;
  return other.end;
}

class resource_clock {
 public:
  /// What placements overwrote since `mark`, so that `undo` can take them back.
  struct undo_log {
    std::vector<std::pair<int, double>> saved;  ///< (resource, free time before), in order
    std::vector<std::pair<int, connection_use>> connections;  ///< (slot, its use before), in order
    double makespan = 0;
  };

  explicit resource_clock(int resources) : free_(static_cast<std::size_t>(resources), 0.0) {}
  void reset() {
    std::fill(free_.begin(), free_.end(), 0.0);
    connections_.clear();
    makespan_ = 0;
  }
  /// When `o` can start if placed next (not before `not_before`).
  template <class Op>
  double earliest_start(const Op& o, double not_before = 0) const noexcept {
    double t = not_before;
    for (std::size_t k = 0; k < o.resources.size(); ++k) t = std::max(t, free_[o.resources[k]] - o.held_from(k));
    return o.connection >= 0 ? connection_start(o, t, use(o.connection ^ 1)) : t;
  }
  /// Occupies `o`'s resources from `start`, each for as long as `o` holds it; returns the end.
  template <class Op>
  double occupy(const Op& o, double start) {
    return occupy_as(o, start, [](double length) { return length; });
  }
  /// Occupies `o`'s resources from `start`, each until `length(when it stops holding it)` (ilp's
  /// whole slots); returns the end, `start + length(duration)`.
  template <class Op, class Length>
  double occupy_as(const Op& o, double start, Length&& length) {
    for (std::size_t k = 0; k < o.resources.size(); ++k) free_[o.resources[k]] = start + length(o.held_until(k));
    const double end = start + length(o.duration);
    if (o.connection >= 0) slot(o.connection) = {start, end, o.eager, true};
    makespan_ = std::max(makespan_, end);
    return end;
  }
  /// Places `o` as the next op (not before `not_before`): sets its start and end, returns its end.
  double place(transfer_model& o, double not_before = 0) {
    o.start = earliest_start(o, not_before);
    o.end = occupy(o, o.start);
    return o.end;
  }
  /// Places an op (not before `not_before`) without recording its times; returns its end.
  double place(const transfer_model& o) { return occupy(o, earliest_start(o)); }
  template <class Op>
  double place_from(const Op& o, double not_before) { return occupy(o, earliest_start(o, not_before)); }

  /// Places the ops of one option in order, each not before the op it waits for (op::after) has
  /// ended, as the schedule runs them (a forward after the receive it passes on); with `log`,
  /// noting what it overwrites. Returns when the last of them ends.
  template <class Ops>
  double place_option(const Ops& ops, undo_log* log = nullptr) {
    ends_.clear();
    double last = 0;
    for (const auto& x : ops) {
      const double ready = x.after >= 0 && static_cast<std::size_t>(x.after) < ends_.size() ? ends_[static_cast<std::size_t>(x.after)] : 0.0;
      ends_.push_back(log ? place(x, *log, ready) : place_from(x, ready));
      last = std::max(last, ends_.back());
    }
    return last;
  }

  /// Starts `log` afresh: the placements made with it from now on can be taken back.
  void mark(undo_log& log) const {
    log.saved.clear();
    log.connections.clear();
    log.makespan = makespan_;
  }
  /// Places an op (not before `not_before`), noting in `log` what it overwrites; returns its end.
  template <class Op>
  double place(const Op& o, undo_log& log, double not_before = 0) {
    const double start = earliest_start(o, not_before);
    for (int r : o.resources) log.saved.push_back({r, free_[r]});
    if (o.connection >= 0) log.connections.push_back({o.connection, use(o.connection)});
    return occupy(o, start);
  }
  /// Takes back every placement noted in `log` since its `mark`.
  void undo(const undo_log& log) noexcept {
    for (auto it = log.saved.rbegin(); it != log.saved.rend(); ++it) free_[it->first] = it->second;
    for (auto it = log.connections.rbegin(); it != log.connections.rend(); ++it)
      connections_[static_cast<std::size_t>(it->first)] = it->second;
    makespan_ = log.makespan;
  }

  double free_at(int resource) const noexcept { return free_[resource]; }
  double makespan() const noexcept { return makespan_; }
  const std::vector<double>& free_times() const noexcept { return free_; }
  /// The last transfer placed on connection slot `k` (unused if none).
  connection_use use(int k) const noexcept {
    return static_cast<std::size_t>(k) < connections_.size() ? connections_[static_cast<std::size_t>(k)] : connection_use{};
  }

 private:
  connection_use& slot(int k) {
    if (static_cast<std::size_t>(k) >= connections_.size()) connections_.resize(static_cast<std::size_t>(k) + 1);
    return connections_[static_cast<std::size_t>(k)];
  }
  std::vector<double> free_;
  std::vector<connection_use> connections_;  // grows with the slots its ops name
  double makespan_ = 0;
  std::vector<double> ends_;  // place_option: when each op of the option ends
};

/// Finish time of a sequence of ops appended to a clock, without changing it. Stamps the
/// resources the sequence touches, so a trial costs O(its resources), whatever the clock's size.
class trial_clock {
 public:
  explicit trial_clock(int resources)
      : stamp_(static_cast<std::size_t>(resources), 0), time_(static_cast<std::size_t>(resources), 0.0) {}
  template <class Ops>
  double finish(const Ops& ops, const resource_clock& base) {
    ++epoch_;
    touched_.clear();
    ends_.clear();
    double finish = 0;
    for (const auto& x : ops) {
      double start = 0;
      if constexpr (requires { x.after; })  // not before the op of the sequence it waits for
        if (x.after >= 0 && static_cast<std::size_t>(x.after) < ends_.size()) start = ends_[static_cast<std::size_t>(x.after)];
      for (std::size_t k = 0; k < x.resources.size(); ++k) {
        const int r = x.resources[k];
        start = std::max(start, (stamp_[r] == epoch_ ? time_[r] : base.free_at(r)) - x.held_from(k));
      }
      if (x.connection >= 0) start = connection_start(x, start, use(x.connection ^ 1, base));
      for (std::size_t k = 0; k < x.resources.size(); ++k)
        stamp_[x.resources[k]] = epoch_, time_[x.resources[k]] = start + x.held_until(k);
      if (x.connection >= 0) touched_.push_back({x.connection, {start, start + x.duration, x.eager, true}});
      finish = std::max(finish, start + x.duration);
      ends_.push_back(start + x.duration);
    }
    return finish;
  }

 private:
  // The trial's own use of a slot if it made one (the latest), else the clock's.
  connection_use use(int k, const resource_clock& base) const {
    for (auto it = touched_.rbegin(); it != touched_.rend(); ++it)
      if (it->first == k) return it->second;
    return base.use(k);
  }
  std::vector<std::uint64_t> stamp_;
  std::vector<double> time_;
  std::vector<std::pair<int, connection_use>> touched_;  // a trial's few ops
  std::vector<double> ends_;                              // when each op of the trial ends
  std::uint64_t epoch_ = 0;
};

}  // namespace meshcast

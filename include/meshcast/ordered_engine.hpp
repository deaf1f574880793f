// The ordered model's clock, the one engine every solver and the simulator place ops with:
// every resource (NIC direction, device lane) is free from some time on, and an op placed next
// starts when all its resources are free, and occupies them for its duration (some of them
// for less: transfer_model::held_for).
//
// resource_clock places ops for good (list schedules, the simulator), or with an undo log (the
// searches, which take placements back); trial_clock asks what a sequence of ops appended to a
// clock would finish at, without changing the clock (greedy's choice of a sender).
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "op.hpp"

namespace meshcast {

class resource_clock {
 public:
  /// What placements overwrote since `mark`, so that `undo` can take them back.
  struct undo_log {
    std::vector<std::pair<int, double>> saved;  ///< (resource, free time before), in order
    double makespan = 0;
  };

  explicit resource_clock(int resources) : free_(static_cast<std::size_t>(resources), 0.0) {}
  void reset() {
    std::fill(free_.begin(), free_.end(), 0.0);
    makespan_ = 0;
  }
  /// When `o` can start if placed next (not before `not_before`).
  double earliest_start(const transfer_model& o, double not_before = 0) const noexcept {
    double t = not_before;
    for (int r : o.resources) t = std::max(t, free_[r]);
    return t;
  }
  /// Occupies `o`'s resources from `start`, each for as long as `o` holds it; returns the end.
  double occupy(const transfer_model& o, double start) noexcept {
    for (std::size_t k = 0; k < o.resources.size(); ++k) free_[o.resources[k]] = start + o.held_for(k);
    const double end = start + o.duration;
    makespan_ = std::max(makespan_, end);
    return end;
  }
  /// Occupies `o`'s resources from `start`, each for `length(time it holds it)` (ilp's whole
  /// slots); returns the end, `start + length(duration)`.
  template <class Length>
  double occupy_as(const transfer_model& o, double start, Length&& length) {
    for (std::size_t k = 0; k < o.resources.size(); ++k) free_[o.resources[k]] = start + length(o.held_for(k));
    const double end = start + length(o.duration);
    makespan_ = std::max(makespan_, end);
    return end;
  }
  /// Places `o` as the next op (not before `not_before`): sets its start and end, returns its end.
  double place(transfer_model& o, double not_before = 0) noexcept {
    o.start = earliest_start(o, not_before);
    o.end = occupy(o, o.start);
    return o.end;
  }
  /// Places an op without recording its times; returns its end.
  double place(const transfer_model& o) noexcept { return occupy(o, earliest_start(o)); }

  /// Starts `log` afresh: the placements made with it from now on can be taken back.
  void mark(undo_log& log) const {
    log.saved.clear();
    log.makespan = makespan_;
  }
  /// Places an op, noting in `log` what it overwrites; returns its end.
  double place(const transfer_model& o, undo_log& log) {
    const double start = earliest_start(o);
    for (int r : o.resources) log.saved.push_back({r, free_[r]});
    return occupy(o, start);
  }
  /// Takes back every placement noted in `log` since its `mark`.
  void undo(const undo_log& log) noexcept {
    for (auto it = log.saved.rbegin(); it != log.saved.rend(); ++it) free_[it->first] = it->second;
    makespan_ = log.makespan;
  }

  double free_at(int resource) const noexcept { return free_[resource]; }
  double makespan() const noexcept { return makespan_; }
  const std::vector<double>& free_times() const noexcept { return free_; }

 private:
  std::vector<double> free_;
  double makespan_ = 0;
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
    double finish = 0;
    for (const auto& x : ops) {
      double start = 0;
      for (int r : x.resources) start = std::max(start, stamp_[r] == epoch_ ? time_[r] : base.free_at(r));
      for (std::size_t k = 0; k < x.resources.size(); ++k)
        stamp_[x.resources[k]] = epoch_, time_[x.resources[k]] = start + x.held_for(k);
      finish = std::max(finish, start + x.duration);
    }
    return finish;
  }

 private:
  std::vector<std::uint64_t> stamp_;
  std::vector<double> time_;
  std::uint64_t epoch_ = 0;
};

}  // namespace meshcast

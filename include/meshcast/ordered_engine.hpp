// The ordered model's clock, the one engine every solver and the simulator place ops with:
// every resource (NIC direction, device stream) is free from some time on, and an op placed next
// starts when all its resources are free, and occupies them for its duration.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "op.hpp"

namespace meshcast {

class resource_clock {
 public:
  explicit resource_clock(int resources) : free_(static_cast<std::size_t>(resources), 0.0) {}
  void reset() {
    std::fill(free_.begin(), free_.end(), 0.0);
    makespan_ = 0;
  }
  double earliest_start(const transfer_model& o, double not_before = 0) const noexcept {
    double t = not_before;
    for (int r : o.resources) t = std::max(t, free_[r]);
    return t;
  }
  /// Places `o` as the next op (not before `not_before`): sets its start and end, returns its end.
  double place(transfer_model& o, double not_before = 0) noexcept {
    o.start = earliest_start(o, not_before);
    o.end = o.start + o.duration;
    for (int r : o.resources) free_[r] = o.end;
    makespan_ = std::max(makespan_, o.end);
    return o.end;
  }
  /// Places an op without recording its times; returns its end.
  double place(const transfer_model& o) noexcept {
    const double end = earliest_start(o) + o.duration;
    for (int r : o.resources) free_[r] = end;
    makespan_ = std::max(makespan_, end);
    return end;
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
      const double end = start + x.duration;
      for (int r : x.resources) stamp_[r] = epoch_, time_[r] = end;
      finish = std::max(finish, end);
    }
    return finish;
  }

 private:
  std::vector<std::uint64_t> stamp_;
  std::vector<double> time_;
  std::uint64_t epoch_ = 0;
};

}  // namespace meshcast

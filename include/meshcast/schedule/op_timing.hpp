// The ordered model's view of an instance, packed: of each op only what placing it reads (its
// resources, when it holds each, its duration, the op it waits for, its connection slot), in
// flat arrays. An op also carries its region, receivers, hosts and bundle parts, each in a heap
// block of its own; a list schedule over 4096 units walks every option of every unit, and over
// the ops themselves it spent its time fetching memory. The clocks of model/ordered_engine.hpp
// take an op_timing as they take an op, with the same arithmetic, so a schedule placed either
// way has the same times to the bit.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "instance.hpp"

namespace meshcast {

/// What the ordered model reads of one op (it reads like a transfer_model to the clocks).
struct op_timing {
  std::span<const int> resources;
  /// When it starts holding each resource, then when it stops (2 x resources.size() values), or
  /// null: it holds every one for the whole op (most ops; their times are not stored).
  const double* hold = nullptr;
  double duration = 0;
  int after = -1;  ///< the op of its option it waits for, or -1
  int connection = -1;
  bool eager = false;
  double held_from(std::size_t k) const noexcept { return hold ? hold[k] : 0.0; }
  double held_until(std::size_t k) const noexcept { return hold ? hold[resources.size() + k] : duration; }
  double held_for(std::size_t k) const noexcept { return held_until(k) - held_from(k); }
};

/// Every option of every unit of an instance as op_timings. It points into its own arrays, so it
/// moves but does not copy; it reads the instance once, at construction.
class instance_timing {
 public:
  explicit instance_timing(const instance& in) {
    // One pass over the ops (reading an op is a cache miss or two; counting its resources first
    // would be as many again): the spans are set once every array has its final address.
    std::size_t options = 0, ops = 0;
    for (const unit& u : in.units)
      for (const option& o : u.options) ++options, ops += o.ops.size();
    resources_.reserve(4 * ops);  // a NIC transfer holds four: two NIC directions, two lanes
    ops_.reserve(ops);
    std::vector<std::size_t> at, held;  // beside ops_: where its resources start, and its hold times
    at.reserve(ops + 1);
    held.reserve(ops);
    option_begin_.reserve(options + 1);
    first_option_.reserve(in.units.size() + 1);
    tie_port_.reserve(options);
    for (const unit& u : in.units) {
      first_option_.push_back(option_begin_.size());
      for (const option& o : u.options) {
        option_begin_.push_back(ops_.size());
        tie_port_.push_back(o.sender >= 0 ? in.resources.egress(in.net->port_of(o.sender)) : -1);
        for (const op& x : o.ops) {
          at.push_back(resources_.size());
          resources_.insert(resources_.end(), x.resources.begin(), x.resources.end());
          const bool brief = !x.hold_from.empty() || !x.hold_until.empty();
          held.push_back(brief ? hold_.size() : no_hold);
          if (brief) {
            for (std::size_t k = 0; k < x.resources.size(); ++k) hold_.push_back(x.held_from(k));
            for (std::size_t k = 0; k < x.resources.size(); ++k) hold_.push_back(x.held_until(k));
          }
          ops_.push_back({{}, nullptr, x.duration, x.after, x.connection, x.eager});
        }
      }
    }
    first_option_.push_back(option_begin_.size());
    option_begin_.push_back(ops_.size());
    at.push_back(resources_.size());
    for (std::size_t i = 0; i < ops_.size(); ++i) {
      ops_[i].resources = std::span<const int>(resources_.data() + at[i], at[i + 1] - at[i]);
      if (held[i] != no_hold) ops_[i].hold = hold_.data() + held[i];
    }
  }
  instance_timing(const instance_timing&) = delete;
  instance_timing& operator=(const instance_timing&) = delete;
  instance_timing(instance_timing&&) noexcept = default;
  instance_timing& operator=(instance_timing&&) noexcept = default;

  /// The ops of option `k` of unit `u`, in the option's order.
  std::span<const op_timing> ops(std::size_t u, std::size_t k) const noexcept {
    const std::size_t o = first_option_[u] + k;
    return {ops_.data() + option_begin_[o], option_begin_[o + 1] - option_begin_[o]};
  }
  /// The egress direction of the port of option `k`'s sender (-1: the option names no sender).
  int sender_egress(std::size_t u, std::size_t k) const noexcept { return tie_port_[first_option_[u] + k]; }

 private:
  static constexpr std::size_t no_hold = static_cast<std::size_t>(-1);
  std::vector<int> resources_;
  std::vector<double> hold_;
  std::vector<op_timing> ops_;
  std::vector<std::size_t> option_begin_;  // per option (units' options one after another), then the end
  std::vector<std::size_t> first_option_;  // per unit: its first option's index, then the count
  std::vector<int> tie_port_;              // per option
};

}  // namespace meshcast

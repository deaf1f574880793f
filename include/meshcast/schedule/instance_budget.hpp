// How much memory a scheduling instance may take. A strategy's ops can grow faster than the plan:
// send_recv_allgather's forwards on a host of n receivers list n devices each, n^2 in all (1,024
// receivers on one host took 3 GB for one tensor), and nothing refused a larger n. Instances are
// counted as they are built, and a strategy whose ops grow faster than its receivers counts them
// before it builds them.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "../core/error.hpp"
#include "../model/op.hpp"

namespace meshcast {

/// Most 8-byte words one scheduling instance holds (2 GiB): every option and op at its own size
/// and every entry of an op's lists (receivers, resources, holders, hosts, hold times, waits) at
/// one word each; the part lists of bundles, shared by their ops, are not counted. The largest
/// whole-model batch of the benchmarks (9,827 tensors on 256 devices, `auto`) takes 14.9M words,
/// a replicated 32x32 -> 32x32 reshard cut into slices under send_recv (docs/autoshard.md) 136M.
inline constexpr std::size_t max_instance_words = std::size_t{1} << 28;

/// Thrown when an instance would pass max_instance_words; under `auto`, solve_batch leaves out
/// the instances that do (the combined one and the strategy's own) and solves the others.
class instance_too_large : public error {
 public:
  using error::error;
};

namespace detail {
/// An op's share of an instance, in words.
inline std::size_t op_words(const op& o) noexcept {
  return (sizeof(op) + 7) / 8 + o.receivers.size() + o.waits_for.size() + o.resources.size() + o.holders.size() +
         o.egress_hosts.size() + o.ingress_hosts.size() + o.hold_from.size() + o.hold_until.size();
}

/// Whether `words` more words, `used` already taken, stay within the limit (never wraps).
constexpr bool within_instance_words(std::size_t used, std::size_t words) noexcept {
  return words <= max_instance_words && used <= max_instance_words - words;
}

/// The words an instance takes as it is built, checked at every option it keeps.
class instance_words {
 public:
  explicit instance_words(std::string_view strategy) : strategy_(strategy) {}
  /// Counts an option of unit (tensor, task) with these ops; refuses it past the limit.
  void add(const std::vector<op>& ops, index_t tensor, index_t task) {
    std::size_t words = (sizeof(std::vector<op>) + 7) / 8 + 1;  // the option itself
    for (const op& o : ops) words += op_words(o);  // an op lists at most a few times max_devices: no overflow
    if (!within_instance_words(used_, words)) refuse(tensor, task);
    used_ += words;
  }
  /// The error for unit (tensor, task): its options would pass the limit.
  [[noreturn]] void refuse(index_t tensor, index_t task) const {
    throw instance_too_large("the scheduling instance of strategy '" + std::string(strategy_) + "' would hold more than " +
                             std::to_string(max_instance_words) + " words (2 GiB, meshcast::max_instance_words) at tensor " +
                             std::to_string(tensor) + "'s task " + std::to_string(task) +
                             " (send_recv_allgather's ops grow with the square of a host's receivers, send_recv's and "
                             "broadcast's with the receivers)");
  }
  std::size_t used() const noexcept { return used_; }

 private:
  std::string_view strategy_;
  std::size_t used_ = 0;
};
}  // namespace detail

}  // namespace meshcast

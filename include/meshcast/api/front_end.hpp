// The front end of a batch reshard, written once over any transport's collective_channel
// (channel.hpp): built collectively, it plans the batch, checks that every rank was given the
// same arguments, finds the hosts, has rank 0 solve (through erased_policies), shares the
// schedule and builds the executor; each run checks this rank's shards and moves them. Every
// misuse is a meshcast::error on every rank: a rank that fails says so to all before any
// collective they would otherwise wait in.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "../core/detail/deadline.hpp"
#include "../core/detail/failure_of.hpp"
#include "../core/error.hpp"
#include "../exec/executor.hpp"
#include "../model/network.hpp"
#include "../model/schedule.hpp"
#include "../plan/plan.hpp"
#include "../plan/tensor_layouts.hpp"
#include "batch_checks.hpp"
#include "channel.hpp"
#include "network_from.hpp"
#include "policies.hpp"
#include "reshard_options.hpp"

namespace meshcast::detail {

template <class Channel>
class front_end {
  static_assert(checked_channel<Channel>::value);

 public:
  front_end(Channel channel, std::vector<tensor_layouts> tensors, reshard_options options, const erased_policies& policies)
      : channel_(std::move(channel)), options_(std::move(options)), tensors_(std::move(tensors)) {
    std::uint64_t key = 0;
    std::string problem = failure_of([&] {
      if (checked_seconds(options_.timeout_s, "reshard_options::timeout_s") == 0)
        throw error("reshard_options::timeout_s is 0 s: every wait on the other ranks would expire at once; give a "
                    "positive deadline (default 60 s)");
      if (options_.devices_per_host < 0)
        throw error("reshard_options::devices_per_host is " + std::to_string(options_.devices_per_host) +
                    ": give 0 (ranks with one host name share a host) or a positive count");
      plans_ = batch_plans(tensors_, options_, channel_.size());
      key = batch_key(tensors_, options_, policies.name(false), policies.name(true));  // before the comparison: it allocates
    }, "planning the batch");
    channel_.agree_or_throw(problem);
    if (!channel_.all_equal(key))
      throw error("the ranks of the communicator were given different layouts, element sizes or options for one "
                  "reshard; every rank must pass the same ones");
    problem = failure_of([&] {
      const reshard_options& o = options_;
      const std::vector<index_t> hosts =
          !o.host_of.empty()       ? o.host_of
          : o.devices_per_host > 0 ? default_hosts(plans_[0].device_count, static_cast<index_t>(plans_[0].src_devices.size()),
                                                   o.devices_per_host)
                                   : channel_.hosts();
      net_ = channel_.fitted(network_from(o, hosts));
      if (channel_.rank() == 0) policies.solve(policies, plans_, net_, o, schedule_);
    }, "finding the hosts and solving the schedule");
    channel_.agree_or_throw(problem);
    channel_.share(plans_, schedule_);
    // What the executor sets up on its own is agreed on before it makes its groups (a collective
    // over their members): one rank out of memory there stops every rank at once, instead of
    // leaving the others to wait out the timeout in a group's setup.
    problem = failure_of([&] { run_.emplace(channel_.make_backend(), std::span<const plan>(plans_), schedule_,
                                            options_.max_staging_bytes, connect_later); },
                         "setting up the executor");
    channel_.agree_or_throw(problem);
    problem = failure_of([&] { run_->connect(); }, "making the executor's groups");
    channel_.agree_or_throw(problem);
  }

  std::size_t size() const noexcept { return tensors_.size(); }
  std::size_t source_elements(std::size_t k) const noexcept { return run_->source_bytes(k) / tensors_[k].element_bytes; }
  std::size_t destination_elements(std::size_t k) const noexcept {
    return run_->destination_bytes(k) / tensors_[k].element_bytes;
  }
  const std::vector<plan>& plans() const noexcept { return plans_; }
  const meshcast::schedule& schedule() const noexcept { return schedule_; }
  const meshcast::network& network() const noexcept { return net_; }
  std::size_t staging_bytes() const noexcept { return run_->staging_bytes(); }
  /// Frees this rank's message buffers until the next run (executor::release_staging).
  void release_staging() noexcept { run_->release_staging(); }
  /// Whether a run failed (or timed out agreeing): late messages may still arrive on the
  /// channel's communicator, and no further run may start on it.
  bool failed() const noexcept { return broken_ || (run_ && run_->failed()); }

  /// Reshards once; `problem` is one this rank found on its own (every rank then fails with it).
  void run(std::span<const std::span<const std::byte>> in, std::span<const std::span<std::byte>> out, std::string problem) {
    problem = shard_problem(static_cast<index_t>(channel_.rank()), std::move(problem), in, out, tensors_,
                            [&](std::size_t k) { return run_->source_bytes(k); },
                            [&](std::size_t k) { return run_->destination_bytes(k); }, shard_ranges_);
    // Said before the agreement, so that every rank fails alike instead of the others waiting out
    // their timeout for this one.
    if (problem.empty() && failed())
      problem = "device " + std::to_string(channel_.rank()) +
                ": an earlier run failed here, and what it left pending could match this run's messages; make a new resharder";
    // Buffers freed by release_staging are made again here, before the agreement, for the same
    // reason as at construction: one rank out of memory stops every rank at once.
    if (problem.empty()) {  // before anything is made on this thread's device (NCCL)
      const std::string here = channel_.problem_here();
      if (!here.empty()) problem = "device " + std::to_string(channel_.rank()) + ": " + here;
    }
    if (problem.empty()) {
      const std::string no_room = failure_of([&] { run_->acquire_staging(); }, "making the message buffers again after release_staging");
      if (!no_room.empty()) problem = "device " + std::to_string(channel_.rank()) + ": " + no_room;
    }
    try {
      channel_.agree_or_throw(problem);
    } catch (const timeout_error&) {
      broken_ = true;  // its collective is left pending
      throw;
    }
    try {
      run_->run(in, out);
    } catch (...) {
      broken_ = true;
      throw;
    }
  }

 private:
  Channel channel_;
  reshard_options options_;
  std::vector<tensor_layouts> tensors_;
  std::vector<plan> plans_;
  meshcast::network net_;
  meshcast::schedule schedule_;
  std::optional<executor<typename Channel::backend_type>> run_;
  bool broken_ = false;
  std::vector<shard_range> shard_ranges_;  // the shared-memory check's, kept between runs
};

}  // namespace meshcast::detail

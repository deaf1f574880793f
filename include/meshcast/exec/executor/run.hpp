// The executor (../executor.hpp), part: one run of a batch, handed to the mode's driver.
#pragma once

#include "../../core/detail/shared_memory.hpp"
#include "../executor.hpp"

namespace meshcast {

template <class Backend>
void executor<Backend>::run(std::span<const std::span<const std::byte>> sources,
                          std::span<const std::span<std::byte>> destinations) {
  if (!connected_)
    throw error("device " + std::to_string(me_) + ": the executor was made with connect_later and run before connect()");
  if (failed_)
    throw error("device " + std::to_string(me_) +
                ": an earlier run of this executor failed, and what it left pending could match this run's messages; "
                "make a new executor, on a fresh communicator (bounded_dup): this one may still hold its late messages");
  if (sources.size() != tensors_.size() || destinations.size() != tensors_.size())
    throw error("device " + std::to_string(me_) + ": " + std::to_string(sources.size()) + " source and " +
                std::to_string(destinations.size()) + " destination shards for a batch of " +
                std::to_string(tensors_.size()) + " tensors");
  for (std::size_t k = 0; k < tensors_.size(); ++k) {
    tensor_state& t = tensors_[k];
    if (sources[k].size() < t.source_bytes || destinations[k].size() < t.destination_bytes)
      throw error("device " + std::to_string(me_) + ": shard buffers of " + std::to_string(sources[k].size()) + " and " +
                  std::to_string(destinations[k].size()) + " bytes are smaller than its tiles (" +
                  std::to_string(t.source_bytes) + " and " + std::to_string(t.destination_bytes) + " bytes)" +
                  (tensors_.size() > 1 ? " of tensor " + std::to_string(k) : std::string()));
  }
  const std::string shared = detail::shared_memory_problem(sources, destinations, [&](std::size_t k) { return tensors_[k].source_bytes; },
                                                           [&](std::size_t k) { return tensors_[k].destination_bytes; },
                                                           shard_ranges_);
  if (!shared.empty()) throw error("device " + std::to_string(me_) + ": " + shared);
  for (std::size_t k = 0; k < tensors_.size(); ++k) {
    tensors_[k].src = sources[k].data();
    tensors_[k].dst = destinations[k].data();
  }
  acquire_staging();  // after release_staging; before any message, as at construction
  began_ = std::chrono::steady_clock::now();
  times_.clear();
  if (record_) times_.resize(steps_.size());
  tokens_sent_.clear();
  reset_steps();
  try {
    if (mode_ == execution::ordered) {
      if constexpr (backend_traits<Backend>::port_tokens) run_ordered();
      else run_ordered_in_rounds();
    }
    else run_concurrent();
    for (auto& r : tokens_sent_) b_.wait(r);
    b_.flush();
  } catch (...) {
    abandon_run();
    throw;
  }
  if (record_)  // sends end here at the latest
    for (std::size_t k = 0; k < steps_.size(); ++k)
      if (times_[k].end == 0) times_[k].end = clock();
}

// A run that failed (a peer gone or late, a transport error) leaves operations pending that a late
// peer can still complete. Receives not yet matched are withdrawn; what cannot be withdrawn
// (sends, broadcasts, chains' pieces in flight) may still read or write the message buffers,
// which are kept until the process ends instead of freed with the executor. The executor runs no
// more: a stale receive would match the next run's messages.
template <class Backend>
void executor<Backend>::abandon_run() noexcept {
  failed_ = true;
  for (step& x : steps_) {
    b_.cancel(x.req);
    for (request& r : x.reqs) b_.cancel(r);
    for (request& r : x.clear_reqs) b_.cancel(r);
    for (request& r : x.token_reqs) b_.cancel(r);
  }
  for (request& r : tokens_sent_) b_.cancel(r);
  try {
    struct kept_buffers {
      decltype(block_) block;
      decltype(scratch_) scratch;
      decltype(acks_) acks;
      decltype(clears_) clears;
    };
    detail::keep_until_exit(std::make_shared<kept_buffers>(
        kept_buffers{std::move(block_), std::move(scratch_), std::move(acks_), std::move(clears_)}));
    block_.reset();  // moved out: staging_bytes() says this rank holds none
  } catch (...) {  // out of memory: nothing better than letting them go
  }
}

}  // namespace meshcast

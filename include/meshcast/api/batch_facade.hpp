// The public face that MPI's batch_resharder and NCCL's nccl_batch_resharder share: what a built
// batch reports and the call that reshards it, forwarded to the transport's core (MPI's
// batch_core, NCCL's front_end<nccl_channel>). Written once so the two cannot drift.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <utility>

namespace meshcast::detail {

template <class Core>
class batch_facade {
 public:
  std::size_t size() const noexcept { return core_.size(); }
  /// Elements this rank's source and destination shards of tensor `k` hold (0 where it has none).
  std::size_t source_elements(std::size_t k = 0) const noexcept { return core_.source_elements(k); }
  std::size_t destination_elements(std::size_t k = 0) const noexcept { return core_.destination_elements(k); }
  /// One plan per tensor, the schedule solved for all of them, and the network it was solved on.
  decltype(auto) plans() const noexcept { return core_.plans(); }
  decltype(auto) schedule() const noexcept { return core_.schedule(); }
  decltype(auto) network() const noexcept { return core_.network(); }
  /// Bytes of message buffers this rank holds beyond its shards (never above the staging cap).
  std::size_t staging_bytes() const noexcept { return core_.staging_bytes(); }

  /// Reshards once: `in[k]` and `out[k]` are this rank's shards of tensor k, as bytes (device
  /// memory over NCCL). Collective.
  void operator()(std::span<const std::span<const std::byte>> in, std::span<const std::span<std::byte>> out) {
    core_.run(in, out, {});
  }
  /// The same, with a problem this rank found on its own (every rank then fails with it).
  void run(std::span<const std::span<const std::byte>> in, std::span<const std::span<std::byte>> out, std::string problem) {
    core_.run(in, out, std::move(problem));
  }

 protected:
  template <class... Args>
  explicit batch_facade(std::in_place_t, Args&&... args) : core_(std::forward<Args>(args)...) {}

 private:
  Core core_;
};

}  // namespace meshcast::detail

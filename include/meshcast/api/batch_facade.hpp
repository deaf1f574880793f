// The public face that MPI's batch_resharder and NCCL's nccl_batch_resharder share: what a built
// batch reports and the call that reshards it, forwarded to the transport's core (MPI's
// batch_core, NCCL's nccl_batch_core). Written once so the two cannot drift.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <type_traits>
#include <utility>

#include "../core/error.hpp"

namespace meshcast::detail {

template <class Core>
class batch_facade {
 public:
  std::size_t size() const { return live().size(); }
  /// Elements this rank's source and destination shards of tensor `k` hold (0 where it has none).
  std::size_t source_elements(std::size_t k = 0) const { return live(k).source_elements(k); }
  std::size_t destination_elements(std::size_t k = 0) const { return live(k).destination_elements(k); }
  /// One plan per tensor, the schedule solved for all of them, and the network it was solved on.
  decltype(auto) plans() const { return live().plans(); }
  decltype(auto) schedule() const { return live().schedule(); }
  decltype(auto) network() const { return live().network(); }
  /// Bytes of message buffers this rank holds beyond its shards (never above the staging cap; 0
  /// after release_staging until the next run).
  std::size_t staging_bytes() const { return live().staging_bytes(); }
  /// Frees this rank's message buffers until the next run, which makes them again (every rank
  /// failing alike if one has no room): between uses the resharder holds its plans, schedule,
  /// groups and a few token bytes. Local: ranks may release at different times. A failed run has
  /// already set its buffers aside for late peers (docs/limits.md): nothing more is freed. Over
  /// NCCL the buffers are cudaFree'd, which waits for the work queued on the device.
  void release_staging() { live().release_staging(); }

  /// Reshards once: `in[k]` and `out[k]` are this rank's shards of tensor k, as bytes (device
  /// memory over NCCL). Collective.
  void operator()(std::span<const std::span<const std::byte>> in, std::span<const std::span<std::byte>> out) {
    live().run(in, out, {});
  }
  /// The same, with a problem this rank found on its own (every rank then fails with it).
  void run(std::span<const std::span<const std::byte>> in, std::span<const std::span<std::byte>> out, std::string problem) {
    live().run(in, out, std::move(problem));
  }

  // A moved-from resharder holds no state: every use of it is an error, not a null dereference.
  batch_facade(batch_facade&& other) noexcept(std::is_nothrow_move_constructible_v<Core>)
      : core_(std::move(other.core_)), moved_(std::exchange(other.moved_, true)) {}
  batch_facade& operator=(batch_facade&& other) noexcept(std::is_nothrow_move_assignable_v<Core>) {
    if (this != &other) {
      core_ = std::move(other.core_);
      moved_ = std::exchange(other.moved_, true);
    }
    return *this;
  }
  batch_facade(const batch_facade&) = delete;
  batch_facade& operator=(const batch_facade&) = delete;
  ~batch_facade() = default;

 protected:
  template <class... Args>
  explicit batch_facade(std::in_place_t, Args&&... args) : core_(std::forward<Args>(args)...) {}

 private:
  const Core& live() const {
    if (moved_) throw error("this resharder was moved from and holds nothing; use the one it was moved to");
    return core_;
  }
  Core& live() { return const_cast<Core&>(std::as_const(*this).live()); }
  const Core& live(std::size_t k) const {
    const Core& c = live();
    if (k >= c.size())
      throw error("tensor " + std::to_string(k) + " asked of a resharder of " + std::to_string(c.size()) + " tensors");
    return c;
  }

  Core core_;
  bool moved_ = false;
};

}  // namespace meshcast::detail

// The backend concept: transport only. A backend plays one device (its rank), moves bytes point
// to point, by a broadcast in a group or along a pipelined chain, and names its memory policy;
// packing and local copies are the executor's business (exec/pack.hpp), done through that policy.
// Rounds bracket operations that may run together (ncclGroupStart/End); a backend without such a
// notion makes them no-ops.
#pragma once

#include <concepts>
#include <cstddef>
#include <span>

#include "../core/config.hpp"
#include "memory.hpp"

namespace meshcast {

template <class B>
concept backend = requires(B& b, const B& cb, std::byte* out, const std::byte* in, std::size_t n, index_t peer, int tag,
                           std::span<const index_t> members, typename B::request& req, typename B::group& g) {
  typename B::request;
  typename B::group;
  requires memory_policy<typename B::memory_type>;
  { b.memory() } -> std::same_as<typename B::memory_type&>;
  { cb.device() } -> std::convertible_to<index_t>;
  { cb.size() } -> std::convertible_to<index_t>;  ///< devices reachable: ranks 0..size-1
  { b.send(in, n, peer, tag) } -> std::same_as<typename B::request>;
  { b.recv(out, n, peer, tag) } -> std::same_as<typename B::request>;
  /// Called, in the same order, by every member of `members` (and only by them).
  { b.make_group(members, tag) } -> std::same_as<typename B::group>;
  /// `out` holds the message at the root and receives it elsewhere.
  { b.broadcast(out, n, peer, g) } -> std::same_as<typename B::request>;
  /// A pipelined chain along the group's members in order (the first holds the message), cut into
  /// pieces of `piece` bytes (0: the backend's own rule, chain_piece_bytes).
  { b.chain(out, n, g, tag, n) } -> std::same_as<typename B::request>;
  b.wait(req);
  /// Whether `req` is complete, without blocking (a chain member passes on what has arrived).
  { b.test(req) } -> std::convertible_to<bool>;
  /// A failed run's unfinished request: withdrawn where the transport can, so that it no longer
  /// writes into its buffer (a pending MPI receive is cancelled; NCCL cannot withdraw its work).
  { b.cancel(req) } noexcept;  ///< on any request it made, finished or not, even twice
  /// Seconds a wait may last without progress before it fails (0: no bound).
  { cb.timeout_s() } -> std::convertible_to<double>;
  b.begin_round();
  b.end_round();
  b.flush();  ///< everything issued so far is complete when it returns
};

// Besides these members, a backend declares its protocol (`static constexpr backend_protocol
// protocol`, exec/backend_traits.hpp): whether ordered mode passes NIC tokens, and whether a
// completed send may not have reached its receiver yet.

}  // namespace meshcast

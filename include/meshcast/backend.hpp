// The communication-backend concept: what an executor needs from MPI, NCCL or anything else.
//
// A backend plays one device (its rank), moves bytes point to point or by broadcast inside a
// group, and owns the memory space the shards live in (host for MPI, GPU for NCCL), so packing
// and local copies are its business too. Rounds bracket operations that may run together
// (ncclGroupStart/End); a backend without such a notion makes them no-ops.
#pragma once

#include <concepts>
#include <cstddef>
#include <span>

#include "box.hpp"

namespace meshcast {

template <class B>
concept backend = requires(B& b, const B& cb, std::byte* out, const std::byte* in, std::size_t n, index_t peer,
                           int tag, std::span<const index_t> members, typename B::request& req,
                           typename B::group& g, const box& tile, const box& region) {
  typename B::request;
  typename B::group;
  typename B::buffer;
  { cb.device() } -> std::convertible_to<index_t>;
  { cb.size() } -> std::convertible_to<index_t>;  ///< devices reachable: ranks 0..size-1
  { b.send(in, n, peer, tag) } -> std::same_as<typename B::request>;
  { b.recv(out, n, peer, tag) } -> std::same_as<typename B::request>;
  /// Called, in the same order, by every member of `members` (and only by them).
  { b.make_group(members, tag) } -> std::same_as<typename B::group>;
  /// `out` holds the message at the root and receives it elsewhere.
  { b.broadcast(out, n, peer, g) } -> std::same_as<typename B::request>;
  b.wait(req);
  b.begin_round();
  b.end_round();
  b.flush();  ///< everything issued so far is complete when it returns
  { b.allocate(n) } -> std::same_as<typename B::buffer>;
  b.pack(tile, in, region, n, out);
  b.unpack(in, tile, out, region, n);
  b.copy_region(tile, in, tile, out, region, n);
};

}  // namespace meshcast

// What the front end (front_end.hpp: plan, agree, solve on rank 0, share, run) needs of a
// transport beyond the executor's backend: the few collectives every rank runs together. MPI's
// channel (mpi/channel.hpp) uses MPI's collectives with deadlines; NCCL's (nccl/channel.hpp)
// builds them from ncclSend/ncclRecv/ncclBroadcast, so that it needs no other runtime. Each
// names the executor backend it runs on, so the executor stays a template over the transport:
// no virtual call anywhere.
#pragma once

#include <concepts>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "../core/config.hpp"
#include "../exec/backend.hpp"
#include "../exec/backend_traits.hpp"  // what a channel's backend declares: its protocol
#include "../model/network.hpp"
#include "../model/schedule.hpp"
#include "../plan/plan.hpp"

namespace meshcast {

/// A transport's collectives for the front end. Every member is collective (all ranks call it
/// together) but `rank`, `size`, `problem_here`, `fitted` and `make_backend`.
/// - `agree_or_throw(problem)`: throws the first failing rank's message on every rank when any
///   rank has a non-empty problem.
/// - `all_equal(key)`: whether every rank passed the same key (the same answer on every rank).
/// - `hosts()`: each rank's host, numbered from 0 in order of the hosts' lowest ranks.
/// - `share(plans, s)`: rank 0's schedule to every rank, then checks that all hold the same plans
///   and schedule; a failure is a meshcast::error on every rank.
/// - `problem_here()`: why the calling thread cannot use the transport now, "" when it can (NCCL: a
///   thread on another CUDA device than the communicator's); a run agrees on it before it
///   allocates anything.
/// - `fitted(net)`: the network as this transport runs it (MPI: its eager limit).
/// - `make_backend()`: the executor's backend over the same ranks.
template <class C>
concept collective_channel =
    requires(C& c, const C& cc, const std::string& problem, std::uint64_t key, std::span<const plan> plans, schedule& s,
             network net) {
      typename C::backend_type;
      { cc.rank() } -> std::convertible_to<int>;
      { cc.size() } -> std::convertible_to<int>;
      c.agree_or_throw(problem);
      { c.all_equal(key) } -> std::same_as<bool>;
      { c.hosts() } -> std::same_as<std::vector<index_t>>;
      c.share(plans, s);
      { cc.problem_here() } -> std::same_as<std::string>;
      { cc.fitted(net) } -> std::same_as<network>;
      { cc.make_backend() } -> std::same_as<typename C::backend_type>;
    } && backend<typename C::backend_type>;

namespace detail {
/// `checked_channel<C>::value` is true, or compilation stops with a sentence naming the concept.
template <class C>
struct checked_channel {
  static_assert(collective_channel<C>,
                "A front end's transport must model meshcast::collective_channel (api/channel.hpp): rank, size, "
                "agree_or_throw, all_equal, hosts, share, problem_here, fitted, make_backend and a backend_type the executor "
                "runs on.");
  static constexpr bool value = true;
};
}  // namespace detail

}  // namespace meshcast

// What the executor must know of a transport's protocol, said once by each backend in one
// declared value instead of detected from optional members (where a misspelt member silently
// changed the protocol):
//
//   static constexpr meshcast::backend_protocol protocol{.port_tokens = true,
//                                                        .sends = meshcast::send_completion::early_by_size};
//
// A misspelt field is a compile error (designated initializers), and a backend that says nothing
// is a compile error with a sentence (backend_traits below).
#pragma once

#include <concepts>
#include <cstddef>
#include <span>
#include <vector>

#include "../core/config.hpp"

namespace meshcast {

/// When a backend's completed send has reached its receiver.
enum class send_completion {
  on_delivery,    ///< always (a send completes only once matched: NCCL, MPI_Ssend)
  early_by_size,  ///< maybe not, for the sizes `bool send_completes_early(std::size_t) const` says (MPI's eager protocol)
  early_always,   ///< maybe not, whatever the size (an unknown tag-matched transport)
};

struct backend_protocol {
  /// Whether ordered mode passes tokens between the devices that share a NIC (tag-matched
  /// transports). A transport whose sends block its stream until matched (NCCL) says false: a
  /// token would hold back the sender's next transfer, so each device keeps its transfers in
  /// order instead.
  bool port_tokens = true;
  /// Where sends may complete early, the ordered executor waits for the receiver's acknowledgement.
  send_completion sends = send_completion::early_always;
  /// The most bytes one message may carry (MPI: its int count). The executor refuses a schedule
  /// with a larger message when it is built, on every rank alike, instead of failing mid-run on
  /// the two ranks of that message.
  std::size_t max_message_bytes = static_cast<std::size_t>(-1);
  /// Whether the backend makes ahead what its groups need: the executor then calls
  /// `prepare_groups(std::span<const std::vector<index_t>> members)` in its setup (which the front
  /// ends agree on), with each group's members in the order `make_group` will be asked for them
  /// (empty: a group this rank is not in), so that connecting allocates nothing while other
  /// members may be waiting for this rank.
  bool prepares_groups = false;
};

/// The protocol of backend `B`, checked: what the executor reads, never `B`'s members directly.
template <class B>
struct backend_traits {
  static_assert(requires { { B::protocol } -> std::convertible_to<backend_protocol>; },
                "A backend must say how its messages behave: give it `static constexpr meshcast::backend_protocol "
                "protocol{...}` (exec/backend_traits.hpp).");
  static constexpr backend_protocol protocol = B::protocol;
  static_assert(protocol.sends != send_completion::early_by_size ||
                    requires(const B& b) { { b.send_completes_early(std::size_t{}) } -> std::convertible_to<bool>; },
                "A backend whose protocol says sends complete early by size must have `bool "
                "send_completes_early(std::size_t bytes) const`.");
  static_assert(!protocol.prepares_groups ||
                    requires(B& b, std::span<const std::vector<index_t>> members) { b.prepare_groups(members); },
                "A backend whose protocol says it prepares its groups must have `void prepare_groups(std::span<const "
                "std::vector<index_t>> members)`.");
  static constexpr bool port_tokens = protocol.port_tokens;
  static constexpr bool prepares_groups = protocol.prepares_groups;
  static constexpr send_completion sends = protocol.sends;
  static constexpr std::size_t max_message_bytes = protocol.max_message_bytes;
};

}  // namespace meshcast

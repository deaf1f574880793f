// The tags of the executor's messages. Each kind of message has its own band of tags, so that
// messages of different kinds never match each other; within a band, transfer i's messages use
// `i % transfer_tags` (messages of one tag between one pair match in posting order, so tags may
// repeat beyond `transfer_tags` transfers: the executor posts them in the same order at both ends).
#pragma once

#include <cstddef>

namespace meshcast {

/// Tags per kind of message (MPI guarantees tags up to 32767; four bands stay below 2^17).
inline constexpr int transfer_tags = 32768;

enum class message_kind : int {
  data = 0,             ///< a transfer's bytes (and its group's tag)
  token = 1,            ///< ordered mode: a NIC direction passed on to its next holder
  acknowledgement = 2,  ///< ordered mode: a receiver confirms an eager message arrived
  clearance = 3,        ///< ordered mode: a receiver is ready for a long acknowledged message
};

/// The tag of the `kind` message of transfer `transfer`.
constexpr int message_tag(message_kind kind, std::size_t transfer) noexcept {
  return static_cast<int>(kind) * transfer_tags + static_cast<int>(transfer % transfer_tags);
}

}  // namespace meshcast

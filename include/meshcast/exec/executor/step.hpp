// One step of a rank's part of the schedule (../executor.hpp), in three parts that change at
// different times: what the schedule fixes (set up once by the constructor), how ordered mode
// links it to other steps (set up once, read by the ordered driver), and what one run does with
// it (reset at the start of every run). Keeping them apart makes plain which fields a run may
// write: only `step_state`'s.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "../../core/box.hpp"
#include "../../core/config.hpp"
#include "../../model/op.hpp"

namespace meshcast::detail {

inline constexpr std::size_t no_step = static_cast<std::size_t>(-1);

/// What the schedule fixes for one of this rank's steps.
struct step_fixed {
  enum kind_t { copy, send, receive, collective } how = copy;
  std::size_t transfer = 0;
  std::size_t tensor = 0;
  transfer_kind what = transfer_kind::point_to_point;
  box region;
  std::size_t bytes = 0;
  bool from_source = true;               // send / collective root: the region is in my source tile
  std::size_t from_buffer = no_step;     // send: pass on the buffer of this receive step as it is
  std::vector<std::size_t> needs;        // send: my receive steps that must be complete first
  std::vector<index_t> peers;            // send: receivers; receive: the sender
  bool root = false;                     // collective: I hold the data
  int tag = 0;
  std::size_t group = no_step;
  std::size_t staged = 0;                // bytes of message buffer it needs (0: none)
  std::size_t slot = no_step;            // its buffer's offset in the staging block, where the block is not shared
  std::vector<transfer_part> parts;      // a bundle: every piece, the first included, in message order
  std::size_t piece = 0;                 // a chain: the size of its pieces (0: the backend's rule)
  std::vector<std::size_t> part_at;      // a bundle sent or received in place: each piece's offset in its shard
  std::size_t direct = no_step;          // byte offset of a contiguous region in the shard it is sent from or received into
  double model_start = 0;                // when the model starts it (its index where the schedule has no model)
};

/// Ordered mode: the steps it follows and the messages that order it.
struct step_links {
  std::vector<std::pair<index_t, int>> tokens_in, tokens_out;  // NIC tokens: (device, tag)
  bool send_lane = false, receive_lane = false;                // the lanes it holds
  std::size_t prev_send = no_step, prev_receive = no_step;     // the steps before it on those lanes
  std::size_t next_send = no_step, next_receive = no_step;     // the steps after it on those lanes
  std::size_t partner = no_step;       // the other direction of an exchange, posted with it
  std::size_t after_other = no_step;   // the step the other way on its connection it follows
  double latest_dependency = -1;       // the latest model start of what it waits on (-1: none)
  std::size_t token_slot = 0;          // its first token byte
  std::size_t ack_slot = 0;            // send: its first acknowledgement byte
};

/// What one run does with a step. `reset` keeps the vectors' room, so a repeated run allocates
/// nothing.
template <class Request>
struct step_state {
  std::size_t buffer = no_step;        // offset of its buffer in the staging block, once it has one
  std::vector<Request> clear_reqs;     // acknowledged send: its receivers' clearances (data waits for them)
  std::vector<Request> token_reqs;     // ordered mode: the NIC tokens it waits for
  std::vector<Request> reqs;           // send: its messages (and, ordered, their acknowledgements)
  Request req{};                       // receive or collective: its one operation
  bool data_sent = false, posted = false, done = false;

  void reset(std::size_t buffer_at) {
    buffer = buffer_at;
    clear_reqs.clear();
    token_reqs.clear();
    reqs.clear();
    req = Request{};
    data_sent = posted = done = false;
  }
};

template <class Request>
struct step : step_fixed, step_links, step_state<Request> {};

}  // namespace meshcast::detail

// The executor (../executor.hpp), part: Posting, completing and finishing one step; waiting while others progress.
#pragma once

#include "../executor.hpp"

namespace meshcast {

template <class Backend>
bool executor<Backend>::completed(step& x) {
  switch (x.how) {
    case step::copy: return true;
    case step::receive:
      if (!x.part_at.empty()) {
        for (request& r : x.reqs)
          if (!b_.test(r)) return false;
        return true;
      }
      return b_.test(x.req);
    case step::send:
      if (!x.data_sent) {
        for (request& r : x.clear_reqs)
          if (!b_.test(r)) return false;
        b_.begin_round();
        send_data(x);
        b_.end_round();
        return false;
      }
      for (request& r : x.reqs)
        if (!b_.test(r)) return false;
      return true;
    case step::collective: return b_.test(x.req);
  }
  return true;
}

template <class Backend>
void executor<Backend>::finish(step& x) {
  x.done = true;
  ++finished_;
  mark(x, &step_time::end);
  const tensor_state& t = tensors_[x.tensor];
  if (!x.parts.empty() && x.part_at.empty() && (x.how == step::receive || (x.how == step::collective && !x.root))) {
    const std::byte* in = buffer(x.buffer);
    for (const transfer_part& q : x.parts) {
      const tensor_state& tq = tensors_[static_cast<std::size_t>(q.tensor)];
      unpack(b_.memory(), in, tq.dst_tile, tq.dst, q.region, tq.eb);
      in += q.bytes;
    }
  } else if (x.parts.empty() && (x.how == step::receive || (x.how == step::collective && !x.root)) && t.destination_bytes > 0 &&
             x.direct == none)
    unpack(b_.memory(), buffer(x.buffer), t.dst_tile, t.dst, x.region, t.eb);
  release(x);
  const bool ack = x.how == step::receive && acknowledged(x);
  if (x.tokens_out.empty() && !ack) return;
  b_.begin_round();
  if (ack) tokens_sent_.push_back(b_.send(acks_->data(), 1, x.peers[0], ack_tag(x)));
  for (const auto& [to, tag] : x.tokens_out) tokens_sent_.push_back(b_.send(token(), 1, to, tag));
  b_.end_round();
}

template <class Backend>
void executor<Backend>::progress() {
  for (std::size_t k : in_flight_) {
    step& x = steps_[k];
    if (!x.done && completed(x)) finish(x);
  }
  std::erase_if(in_flight_, [&](std::size_t k) { return steps_[k].done; });
}

template <class Backend>
template <class Ready>
void executor<Backend>::await(Ready&& ready) {
  const double limit = b_.timeout_s();
  auto last_progress = std::chrono::steady_clock::now();
  // Progress is a step finished or posted. Not the in-flight count alone: a rank on one lane
  // finishes a step and posts the next in one poll, the count stays 1, and a healthy run longer
  // than the timeout was cut as stalled.
  std::size_t last_count = in_flight_.size(), last_finished = finished_;
  for (detail::backoff pause;; pause()) {
    progress();
    if (ready()) return;
    if (in_flight_.size() != last_count || finished_ != last_finished) {
      last_count = in_flight_.size();
      last_finished = finished_;
      last_progress = std::chrono::steady_clock::now();
    }
    if (limit > 0 && std::chrono::duration<double>(std::chrono::steady_clock::now() - last_progress).count() > limit)
      stalled(limit);
  }
}

template <class Backend>
bool executor<Backend>::may_start(step& x) {
  if (x.prev_send != none && !steps_[x.prev_send].done) return false;
  if (x.prev_receive != none && !steps_[x.prev_receive].done) return false;
  for (std::size_t n : x.needs)
    if (!steps_[n].done) return false;
  if (x.after_other != none && !steps_[x.after_other].done) return false;
  for (request& r : x.token_reqs)
    if (!b_.test(r)) return false;
  return true;
}

template <class Backend>
void executor<Backend>::post_step(step& x) {
  auto& mem = b_.memory();
  const tensor_state& t = tensors_[x.tensor];
  switch (x.how) {
    case step::copy:
      if (x.parts.empty()) copy_region(mem, t.src_tile, t.src, t.dst_tile, t.dst, x.region, t.eb);
      for (const transfer_part& q : x.parts) {
        const tensor_state& tq = tensors_[static_cast<std::size_t>(q.tensor)];
        copy_region(mem, tq.src_tile, tq.src, tq.dst_tile, tq.dst, q.region, tq.eb);
      }
      break;
    case step::send: {
      if (x.from_buffer == none && !x.parts.empty() && x.part_at.empty()) pack_parts(x);
      else if (x.parts.empty() && x.from_buffer == none && x.direct == none) {
        if (x.from_source) pack(mem, t.src_tile, t.src, x.region, t.eb, buffer(x.buffer));
        else pack(mem, t.dst_tile, t.dst, x.region, t.eb, buffer(x.buffer));
      }
      x.data_sent = false;
      if (!cleared(x)) send_data(x);  // else once every receiver has cleared it (completed)
      break;
    }
    case step::receive:
      for (std::size_t k = 0; k < x.part_at.size(); ++k) {  // a bundle received in place, piece by piece
        const transfer_part& q = x.parts[k];
        x.reqs.push_back(b_.recv(tensors_[static_cast<std::size_t>(q.tensor)].dst + x.part_at[k], static_cast<std::size_t>(q.bytes),
                                 x.peers[0], x.tag));
      }
      if (x.part_at.empty()) x.req = b_.recv(x.direct != none ? t.dst + x.direct : buffer(x.buffer), x.bytes, x.peers[0], x.tag);
      if (cleared(x)) tokens_sent_.push_back(b_.send(clears_->data(), 1, x.peers[0], clear_tag(x)));
      break;
    case step::collective: {
      if (x.root && !x.parts.empty()) pack_parts(x);
      else if (x.root && x.direct == none) pack(mem, t.src_tile, t.src, x.region, t.eb, buffer(x.buffer));
      auto& g = *groups_[x.group];
      // The root's shard is only read by the broadcast (the transport's API takes one pointer).
      std::byte* data = x.direct == none ? buffer(x.buffer)
                        : x.root         ? const_cast<std::byte*>(t.src) + x.direct
                                         : t.dst + x.direct;
      x.req = x.what == transfer_kind::chain ? b_.chain(data, x.bytes, g, x.tag, x.piece)
                                             : b_.broadcast(data, x.bytes, g.members.front(), g);
      break;
    }
  }
}

template <class Backend>
void executor<Backend>::pack_parts(step& x) {
  std::byte* out = buffer(x.buffer);
  for (const transfer_part& q : x.parts) {
    const tensor_state& tq = tensors_[static_cast<std::size_t>(q.tensor)];
    if (x.from_source) pack(b_.memory(), tq.src_tile, tq.src, q.region, tq.eb, out);
    else pack(b_.memory(), tq.dst_tile, tq.dst, q.region, tq.eb, out);
    out += q.bytes;
  }
}

template <class Backend>
void executor<Backend>::send_data(step& x) {
  if (x.data_sent) return;
  x.data_sent = true;
  const tensor_state& t = tensors_[x.tensor];
  const std::byte* message = !x.part_at.empty()       ? nullptr  // piece by piece, below
                             : x.from_buffer != none ? buffer(steps_[x.from_buffer].buffer)
                             : x.direct != none      ? (x.from_source ? t.src : t.dst) + x.direct
                                                     : buffer(x.buffer);
  if (cleared(x)) mark(x, &step_time::start);  // the data starts now
  for (std::size_t j = 0; j < x.peers.size(); ++j) {
    for (std::size_t k = 0; k < x.part_at.size(); ++k) {  // a bundle sent in place, piece by piece
      const transfer_part& q = x.parts[k];
      const tensor_state& tq = tensors_[static_cast<std::size_t>(q.tensor)];
      x.reqs.push_back(b_.send((x.from_source ? tq.src : tq.dst) + x.part_at[k], static_cast<std::size_t>(q.bytes), x.peers[j], x.tag));
    }
    if (x.part_at.empty()) x.reqs.push_back(b_.send(message, x.bytes, x.peers[j], x.tag));
    if (acknowledged(x)) x.reqs.push_back(b_.recv(acks_->data() + 1 + x.ack_slot + j, 1, x.peers[j], ack_tag(x)));
  }
}

}  // namespace meshcast

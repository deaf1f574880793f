// The executor (../executor.hpp), part: Message buffers under the staging cap.
#pragma once

#include "../executor.hpp"

namespace meshcast {

template <class Backend>
void executor<Backend>::plan_staging(std::size_t cap) {
  std::size_t total = 0;
  for (const step& x : steps_)
    if (!detail::sum_fits(total, x.staged, total)) throw error("the message buffers of one rank overflow 64 bits");
  if (cap == 0 || total <= cap) {
    std::size_t at = 0;
    for (step& x : steps_)
      if (x.staged) x.slot = at, at += x.staged;
    arena_ = detail::staging_arena(total);
  } else {
    const std::string who = "device " + std::to_string(me_);
    for (step& x : steps_) {
      if (x.from_buffer == none) continue;
      const tensor_state& t = tensors_[x.tensor];
      if (t.destination_bytes == 0 || !t.dst_tile.contains(x.region))
        throw error(who + " forwards a region it does not keep, which a staging cap cannot bound");
      x.from_buffer = none;
      x.direct = x.parts.empty() ? detail::contiguous_offset(t.dst_tile, x.region, t.eb) : none;
      if (x.direct == none) x.staged = x.bytes;
    }
    std::size_t largest[2] = {0, 0};  // ordered: the send lane's slot, the receive lane's
    for (const step& x : steps_) {
      std::size_t& slot = mode_ == execution::ordered && !x.send_lane ? largest[1] : largest[0];
      slot = std::max(slot, x.staged);
    }
    const std::size_t need = mode_ == execution::ordered ? largest[0] + largest[1] : largest[0];
    if (need > cap)
      throw error(who + " needs " + std::to_string(need) + " bytes of message buffers at once (" +
                  (mode_ == execution::ordered ? "a send of " + std::to_string(largest[0]) + " bytes while it receives " +
                                                     std::to_string(largest[1])
                                               : "its largest message") +
                  ") but the staging cap is " + std::to_string(cap) +
                  " bytes: cut the plans to the cap first (cut_for_staging)");
    if (mode_ == execution::ordered && backend_traits<Backend>::port_tokens) {
      for (step& x : steps_)
        if (x.staged) x.slot = x.send_lane ? 0 : largest[0];
      arena_ = detail::staging_arena(need);
    } else if (mode_ == execution::ordered) {  // in rounds: a round takes its buffers when it starts
      arena_ = detail::staging_arena(need);
      shared_staging_ = true;
    } else {
      arena_ = detail::staging_arena(cap);
      arena_.reserve(steps_.size());
      shared_staging_ = true;
    }
  }
  if (arena_.capacity() > 0) block_ = b_.memory().allocate(arena_.capacity());
}

template <class Backend>
void executor<Backend>::take_buffers() {
  for (; next_to_take_ < steps_.size(); ++next_to_take_) {
    step& x = steps_[next_to_take_];
    if (!x.staged) continue;
    const auto at = arena_.take(x.staged);
    if (!at) return;
    x.buffer = *at;
  }
}

template <class Backend>
void executor<Backend>::reset_steps() {
  for (step& x : steps_) x.reset(shared_staging_ ? none : x.slot);
  if (!shared_staging_) return;
  arena_.clear();
  next_to_take_ = 0;
}

}  // namespace meshcast

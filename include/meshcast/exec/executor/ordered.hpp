// The executor (../executor.hpp), part: The ordered-mode drivers: with NIC tokens, and in rounds (NCCL).
#pragma once

#include "../executor.hpp"
#include "../../core/detail/number_text.hpp"

namespace meshcast {

template <class Backend>
void executor<Backend>::plan_rounds() {
  round_order_.resize(steps_.size());
  for (std::size_t k = 0; k < round_order_.size(); ++k) round_order_[k] = k;
  std::stable_sort(round_order_.begin(), round_order_.end(),
                   [&](std::size_t a, std::size_t b) { return steps_[a].model_start < steps_[b].model_start; });
}

template <class Backend>
void executor<Backend>::run_ordered_in_rounds() {
  const std::vector<std::size_t>& order = round_order_;
  for (std::size_t i = 0; i < order.size();) {
    std::size_t j = i + 1;  // a round holds at least its first step, whatever its time compares to
    const double at = steps_[order[i]].model_start;
    while (j < order.size() && steps_[order[j]].model_start <= at + 1e-12 * (1 + at)) ++j;
    for (std::size_t k = i; k < j && shared_staging_; ++k) {  // every earlier round gave its buffers back
      step& x = steps_[order[k]];
      if (!x.staged) continue;
      const auto at = arena_.take(x.staged);
      if (!at)
        throw error("device " + std::to_string(me_) + ": the transfers the model starts together at " +
                    detail::number(x.model_start) + " s need more message buffers than the staging cap leaves");
      x.buffer = *at;
    }
    b_.begin_round();
    for (std::size_t k = i; k < j; ++k) {
      step& x = steps_[order[k]];
      if (k > i && group_of_transfer(x.transfer) != group_of_transfer(steps_[order[k - 1]].transfer))
        b_.end_round(), b_.begin_round();  // a bounded group (both ends of a transfer agree on it)
      mark(x, &step_time::wait);
      mark(x, &step_time::start);
      post_step(x);
      x.posted = true;
    }
    b_.end_round();
    for (std::size_t k = i; k < j; ++k) {
      step& x = steps_[order[k]];
      await([&] { return completed(x); });
      finish(x);
    }
    i = j;
  }
}

template <class Backend>
void executor<Backend>::run_ordered() {
  in_flight_.clear();
  b_.begin_round();
  for (step& x : steps_) {
    for (std::size_t t = 0; t < x.tokens_in.size(); ++t)
      x.token_reqs.push_back(b_.recv(token_in(x.token_slot + t), 1, x.tokens_in[t].first, x.tokens_in[t].second));
    if (x.how == step::send && cleared(x))
      for (std::size_t j = 0; j < x.peers.size(); ++j)
        x.clear_reqs.push_back(b_.recv(clears_->data() + 1 + x.ack_slot + j, 1, x.peers[j], clear_tag(x)));
  }
  b_.end_round();
  std::size_t next_send = first_send_, next_receive = first_receive_, started = 0;
  auto start = [&](std::size_t k) {
    step& x = steps_[k];
    mark(x, &step_time::wait);
    mark(x, &step_time::start);
    b_.begin_round();
    post_step(x);
    b_.end_round();
    x.posted = true;
    ++started;
    if (x.send_lane) next_send = x.next_send;
    if (x.receive_lane) next_receive = x.next_receive;
    if (x.how == step::copy) finish(x);
    else in_flight_.push_back(k);
  };
  auto ready = [&](std::size_t k) {
    const step& x = steps_[k];
    // A step on both lanes starts when it is next on both.
    if ((x.send_lane && next_send != k) || (x.receive_lane && next_receive != k)) return false;
    return may_start(steps_[k]);
  };
  auto advance = [&] {
    bool moved = true;
    while (moved) {
      moved = false;
      for (std::size_t k : {next_send, next_receive}) {
        if (k == none || steps_[k].posted || !ready(k)) continue;
        const std::size_t p = steps_[k].partner;
        if (p != none && !steps_[p].posted) {
          if (!ready(p)) continue;
          // An eager send needs no handshake: the receive's handshake goes first, then its data.
          const std::size_t send = steps_[k].how == step::send ? k : p, receive = send == k ? p : k;
          const bool eager = acknowledged(steps_[send]);
          start(eager ? receive : send);
          start(eager ? send : receive);
        } else {
          start(k);
        }
        moved = true;
      }
    }
  };
  await([&] {
    advance();
    return started == steps_.size() && in_flight_.empty();
  });
}

}  // namespace meshcast

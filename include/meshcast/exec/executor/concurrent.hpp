// The executor (../executor.hpp), part: The concurrent-mode drivers.
#pragma once

#include "../executor.hpp"

namespace meshcast {

template <class Backend>
void executor<Backend>::run_concurrent() {
  in_flight_.clear();
  if constexpr (backend_traits<Backend>::port_tokens) run_concurrent_eager();
  else run_concurrent_in_list_order();
}

template <class Backend>
void executor<Backend>::post_concurrent(step& x, std::size_t k) {
  mark(x, &step_time::wait);
  mark(x, &step_time::start);
  post_step(x);
  x.posted = true;
  if (x.how == step::copy) finish(x);
  else in_flight_.push_back(k);
}

template <class Backend>
bool executor<Backend>::inputs_arrived(const step& x) const {
  for (std::size_t n : x.needs)
    if (!steps_[n].done) return false;
  return true;
}

template <class Backend>
void executor<Backend>::run_concurrent_eager() {
  // Kept between runs, so that a repeated run allocates and clears nothing: `held_` is all zero
  // again after every pass (each pass clears the tags it set). Before the first pass, or after one
  // that threw (a transport error) and may have left tags set, the table is made anew.
  if (!held_clear_) held_.assign(static_cast<std::size_t>(transfer_tags), 0);
  held_clear_ = false;
  waiting_.clear();  // not yet posted, in list order
  for (std::size_t k = 0; k < steps_.size(); ++k) waiting_.push_back(k);
  auto post_ready = [&] {
    still_.clear();
    bool open = false;
    take_buffers();
    for (std::size_t k : waiting_) {
      step& x = steps_[k];
      const auto tag = static_cast<std::size_t>(x.tag) % held_.size();
      if (!held_[tag] && inputs_arrived(x) && has_buffer(x)) {
        if (!open) b_.begin_round(), open = true;
        post_concurrent(x, k);
      } else {
        still_.push_back(k);
        held_[tag] = 1;
      }
    }
    if (open) b_.end_round();
    for (std::size_t k : still_) held_[static_cast<std::size_t>(steps_[k].tag) % held_.size()] = 0;
    waiting_.swap(still_);
  };
  post_ready();
  await([&] {
    if (!waiting_.empty()) post_ready();
    return waiting_.empty() && in_flight_.empty();
  });
  held_clear_ = true;  // not reached when a pass throws
}

template <class Backend>
void executor<Backend>::run_concurrent_in_list_order() {
  b_.begin_round();
  for (std::size_t k = 0; k < steps_.size(); ++k) {
    step& x = steps_[k];
    if (k > 0 && group_of_transfer(x.transfer) != group_of_transfer(steps_[k - 1].transfer))
      b_.end_round(), b_.begin_round();  // a bounded group (both ends of a transfer agree on it)
    auto ready = [&] {
      take_buffers();
      return inputs_arrived(x) && has_buffer(x);
    };
    if (!ready()) {
      b_.end_round();
      await(ready);
      b_.begin_round();
    }
    post_concurrent(x, k);
  }
  b_.end_round();
  await([&] { return in_flight_.empty(); });
}

}  // namespace meshcast

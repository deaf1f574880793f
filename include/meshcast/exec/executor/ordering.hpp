// The executor (../executor.hpp), part: Ordered mode's links: lanes, exchanges posted together, NIC tokens and acknowledgements.
#pragma once

#include <set>
#include <tuple>

#include "../executor.hpp"

namespace meshcast {

template <class Backend>
void executor<Backend>::plan_lanes(const schedule& s) {
  std::size_t last_send = none, last_receive = none;
  for (std::size_t k = 0; k < steps_.size(); ++k) {
    step& x = steps_[k];
    const transfer& t = s.transfers[x.transfer];
    switch (x.how) {
      case step::copy: x.send_lane = x.receive_lane = true; break;
      case step::send: x.send_lane = true; break;
      case step::receive: x.receive_lane = true; break;
      case step::collective:
        x.send_lane = x.root || (t.kind == transfer_kind::chain && t.receivers.back() != me_);
        x.receive_lane = !x.root;
        break;
    }
    if (x.send_lane) {
      x.prev_send = last_send;
      (last_send == none ? first_send_ : steps_[last_send].next_send) = k;
      last_send = k;
    }
    if (x.receive_lane) {
      x.prev_receive = last_receive;
      (last_receive == none ? first_receive_ : steps_[last_receive].next_receive) = k;
      last_receive = k;
    }
  }
}

template <class Backend>
bool executor<Backend>::times_follow_order(const schedule& s) {
  std::map<int, double> free;  // resource -> end of its last transfer
  for (std::size_t i = 0; i < s.transfers.size(); ++i) {
    const transfer_model& m = s.model[i];
    if (!(m.end > m.start)) return false;
    for (std::int32_t w : s.transfers[i].waits_for)
      if (m.start < s.model[static_cast<std::size_t>(w)].end) return false;
    for (std::size_t k = 0; k < m.resources.size(); ++k) {
      const double until = m.start + m.held_until(k);
      auto [it, fresh] = free.try_emplace(m.resources[k], until);
      if (!fresh && m.start + m.held_from(k) < std::exchange(it->second, until)) return false;
    }
  }
  return true;
}

template <class Backend>
void executor<Backend>::plan_exchanges(const schedule& s) {
  // The connection rule (connections.hpp): a transfer that the model does not start with the
  // last one the other way between the same two devices starts once that one is complete
  // here (both ends keep this order; the receiver of an eager transfer then sends its
  // acknowledgement before its own data the other way).
  std::map<int, std::size_t> last_on;  // connection slot -> my last step on it
  for (std::size_t k = 0; k < steps_.size(); ++k) {
    step& x = steps_[k];
    const int slot = s.model[x.transfer].connection;
    if (slot < 0 || (x.how != step::send && x.how != step::receive)) continue;
    auto other = last_on.find(slot ^ 1);
    if (other != last_on.end() && steps_[other->second].model_start != x.model_start) x.after_other = other->second;
    last_on[slot] = k;
  }
  if (!times_follow_order(s)) return;
  // When each step takes its first lane or NIC direction in the model: a chain's member does
  // when the bytes reach it (transfer_model::held_from), after the chain's start. Every wait
  // points to a step that takes its resources earlier by this time.
  std::vector<double> takes(steps_.size());
  for (std::size_t k = 0; k < steps_.size(); ++k) {
    const transfer_model& m = s.model[steps_[k].transfer];
    double from = m.duration;
    for (std::size_t q = 0; q < m.resources.size(); ++q)
      if (m.holders[q] == me_) from = std::min(from, m.held_from(q));
    takes[k] = m.start + (from < m.duration ? from : 0.0);
  }
  for (step& x : steps_) {
    auto after = [&](std::size_t k) {
      if (k != none) x.latest_dependency = std::max(x.latest_dependency, takes[k]);
    };
    after(x.prev_send);
    after(x.prev_receive);
    after(x.after_other);
    for (std::size_t n : x.needs) after(n);
  }
  std::map<std::pair<index_t, double>, std::size_t> receive_at;  // (peer, model start) -> receive step
  for (std::size_t k = 0; k < steps_.size(); ++k)
    if (steps_[k].how == step::receive) receive_at.emplace(std::pair{steps_[k].peers[0], steps_[k].model_start}, k);
  for (std::size_t k = 0; k < steps_.size(); ++k) {
    step& x = steps_[k];
    if (x.how != step::send || x.peers.size() != 1) continue;
    auto it = receive_at.find({x.peers[0], x.model_start});
    if (it == receive_at.end()) continue;
    step& y = steps_[it->second];
    if (y.partner != none || !(x.latest_dependency < x.model_start) || !(y.latest_dependency < y.model_start)) continue;
    x.partner = it->second;
    y.partner = k;
  }
}

template <class Backend>
void executor<Backend>::plan_tokens(const schedule& s) {
  std::map<int, std::pair<std::size_t, index_t>> last;  // resource -> (transfer, holder)
  // A token is owed once per (earlier transfer, later transfer, later holder): the later holder
  // waits for it once per step of its own, so the earlier one sends it once per such step, even
  // when two steps of one device wait for the same transfer (its NIC's egress and ingress).
  std::set<std::tuple<std::size_t, std::size_t, index_t>> owed;
  auto mine = [&](std::size_t transfer) -> step& {  // the model says this rank holds a resource of it
    if (step_of_[transfer] == none)
      throw error("device " + std::to_string(me_) + ": the schedule's model has it hold a resource of transfer " +
                  std::to_string(transfer) + ", which it neither sends nor receives");
    return steps_[step_of_[transfer]];
  };
  for (std::size_t i = 0; i < s.transfers.size(); ++i) {
    const transfer_model& m = s.model[i];
    for (std::size_t k = 0; k < m.resources.size(); ++k) {
      const int r = m.resources[k];
      const index_t holder = m.holders[k];
      auto it = last.find(r);
      if (it != last.end() && it->second.second != holder) {
        const auto [before, from] = it->second;
        const int tag = message_tag(message_kind::token, before);
        if (holder == me_) {
          step& x = mine(i);
          add_token(x.tokens_in, from, tag);
          x.latest_dependency = std::max(x.latest_dependency, s.model[before].start);
        }
        if (from == me_ && owed.emplace(before, i, holder).second) mine(before).tokens_out.push_back({holder, tag});
      }
      last[r] = {i, holder};
    }
  }
  std::size_t slots = 0;
  for (step& x : steps_) x.token_slot = slots, slots += x.tokens_in.size();
  scratch_ = b_.memory().allocate(1 + slots);  // one byte to send from, one per token received
}

template <class Backend>
void executor<Backend>::plan_acknowledgements() {
  std::size_t slots = 0;
  for (step& x : steps_)
    if (x.how == step::send) x.ack_slot = slots, slots += x.peers.size();
  acks_ = b_.memory().allocate(1 + slots);    // one byte to send from, one per acknowledgement received
  clears_ = b_.memory().allocate(1 + slots);  // the same for clearances
}

}  // namespace meshcast

// The executor (../executor.hpp), part: Setting up: which steps this rank takes, their groups, and which bundles go in place.
#pragma once

#include "../executor.hpp"

namespace meshcast {

template <class Backend>
executor<Backend>::executor(Backend b, std::span<const plan> plans, const schedule& s, std::size_t max_staging_bytes,
                            connect_later_t)
    : b_(std::move(b)), mode_(checked_execution(s.mode, "the schedule's execution mode")) {
  me_ = b_.device();
  if (plans.empty()) throw error("an executor needs at least one plan");
  const index_t devices = device_count(plans);
  if (b_.size() < devices)
    throw error("the plan uses " + std::to_string(devices) + " devices but the communicator has " +
                std::to_string(b_.size()) + " ranks; run one rank per device");
  check_schedule_fits(plans, s);
  check_message_sizes(plans, s);
  for (const plan& p : plans) {
    tensor_state t;
    t.eb = static_cast<std::size_t>(p.element_bytes);
    t.src_tile = p.source_tile(me_);
    t.dst_tile = p.destination_tile(me_);
    const bool is_src = std::find(p.src_devices.begin(), p.src_devices.end(), me_) != p.src_devices.end();
    const bool is_dst = std::find(p.dst_devices.begin(), p.dst_devices.end(), me_) != p.dst_devices.end();
    t.source_bytes = is_src ? tile_bytes(t.src_tile, t.eb) : 0;
    t.destination_bytes = is_dst ? tile_bytes(t.dst_tile, t.eb) : 0;
    if (!is_src) t.src_tile = box{t.src_tile.rank, {}};  // holds nothing
    tensors_.push_back(t);
  }
  index_groups(s);
  // What connect() needs is made here, where the front ends agree on the setup: none of it can
  // fail on one rank alone once a group's members wait for each other.
  groups_.reserve(group_members_.size());
  if constexpr (backend_traits<Backend>::prepares_groups) b_.prepare_groups(group_members_);
  plan_steps(s, plans);
  if (mode_ == execution::ordered) plan_lanes(s);
  if (mode_ == execution::ordered && !backend_traits<Backend>::port_tokens) plan_rounds();
  plan_staging(max_staging_bytes);
  if (mode_ == execution::ordered && !s.model.empty() && backend_traits<Backend>::port_tokens) plan_tokens(s);
  if (mode_ == execution::ordered && !s.model.empty()) plan_exchanges(s);
  if (acknowledged()) plan_acknowledgements();
}

template <class Backend>
void executor<Backend>::check_message_sizes(std::span<const plan> plans, const schedule& s) {
  constexpr std::size_t most = backend_traits<Backend>::max_message_bytes;
  if constexpr (most != static_cast<std::size_t>(-1)) {
    for (std::size_t i = 0; i < s.transfers.size(); ++i) {
      const transfer& t = s.transfers[i];
      if (t.kind == transfer_kind::local_copy) continue;
      // A chain goes in pieces (the schedule's, else chain_piece_bytes, far below any limit).
      const std::size_t bytes =
          t.kind == transfer_kind::chain ? static_cast<std::size_t>(t.piece_bytes)
          : t.parts.empty() ? tile_bytes(t.region, static_cast<std::size_t>(plans[static_cast<std::size_t>(t.tensor)].element_bytes))
                            : static_cast<std::size_t>(t.bytes);
      if (bytes > most)
        throw error("transfer " + std::to_string(i) + " moves " + std::to_string(bytes) + " bytes in one message, more than the " +
                    std::to_string(most) + " this transport's messages carry: give a staging cap " +
                    "(reshard_options::max_staging_bytes, --max-staging-bytes), which cuts tasks to half of it");
    }
  }
}

template <class Backend>
void executor<Backend>::index_groups(const schedule& s) {
  std::map<std::vector<index_t>, std::size_t> index;
  group_of_.assign(s.transfers.size(), none);
  for (std::size_t i = 0; i < s.transfers.size(); ++i) {
    const transfer& t = s.transfers[i];
    if (t.kind != transfer_kind::group_broadcast && t.kind != transfer_kind::chain) continue;
    std::vector<index_t> members = t.receivers;
    if (t.kind == transfer_kind::group_broadcast) std::sort(members.begin(), members.end());
    members.insert(members.begin(), t.sender);
    auto [it, fresh] = index.try_emplace(members, group_members_.size());
    if (fresh) {
      const bool mine = std::find(members.begin(), members.end(), me_) != members.end();
      group_members_.push_back(mine ? std::move(members) : std::vector<index_t>{});
    }
    group_of_[i] = it->second;
  }
}

template <class Backend>
void executor<Backend>::connect() {
  if (connected_) throw error("device " + std::to_string(me_) + ": the executor is connected already: connect() once");
  groups_.clear();
  groups_.reserve(group_members_.size());
  for (std::size_t g = 0; g < group_members_.size(); ++g)
    groups_.push_back(group_members_[g].empty() ? std::nullopt
                                                : std::optional<typename Backend::group>(
                                                      b_.make_group(group_members_[g], message_tag(message_kind::data, g))));
  connected_ = true;
}

template <class Backend>
void executor<Backend>::plan_steps(const schedule& s, std::span<const plan> plans) {
  std::vector<std::size_t> my_receive(s.transfers.size(), none);  // transfer -> my receive step
  step_of_.assign(s.transfers.size(), none);
  for (std::size_t i = 0; i < s.transfers.size(); ++i) {
    const transfer& t = s.transfers[i];
    const bool sending = t.sender == me_;
    const bool receiving = std::find(t.receivers.begin(), t.receivers.end(), me_) != t.receivers.end();
    if (!sending && !receiving) continue;
    step x{};
    x.transfer = i;
    x.model_start = s.model.empty() ? static_cast<double>(i) : s.model[i].start;
    x.what = t.kind;
    x.region = t.region;
    x.tensor = static_cast<std::size_t>(t.tensor);
    const tensor_state& ts = tensors_[x.tensor];
    x.bytes = tile_bytes(t.region, ts.eb);
    x.tag = message_tag(message_kind::data, i);
    x.piece = static_cast<std::size_t>(t.piece_bytes);
    const std::string who = "device " + std::to_string(me_);
    if (!t.parts.empty()) {  // a bundle: packed and unpacked piece by piece, through a buffer
      x.parts.push_back({t.tensor, t.task, t.region, t.region.volume() * static_cast<index_t>(ts.eb)});
      x.parts.insert(x.parts.end(), t.parts.begin(), t.parts.end());
      x.bytes = static_cast<std::size_t>(t.bytes);
      x.from_source = t.kind != transfer_kind::forward;  // a forward passes on what it received
      for (const transfer_part& q : x.parts) {
        const tensor_state& tq = tensors_[static_cast<std::size_t>(q.tensor)];
        const bool in_dst = tq.destination_bytes > 0 && tq.dst_tile.contains(q.region);
        if (sending && x.from_source && !tq.src_tile.contains(q.region)) throw error(who + " sends a region it does not hold");
        if ((receiving || !x.from_source) && !in_dst) throw error(who + " receives a region outside its destination tile");
      }
      if (t.kind == transfer_kind::local_copy) {
        x.how = step::copy;
      } else if (t.kind == transfer_kind::chain || t.kind == transfer_kind::group_broadcast) {
        x.how = step::collective;
        x.group = group_of_[i];
        x.root = sending;
        x.staged = x.bytes;
      } else if (sending) {
        x.how = step::send;
        x.peers = t.receivers;
        x.staged = x.bytes;
        for (std::int32_t w : t.waits_for) {  // a forward: the receives it passes on
          const std::size_t r = static_cast<std::size_t>(w) < my_receive.size() ? my_receive[static_cast<std::size_t>(w)] : none;
          if (r == none) throw error(who + " forwards transfer " + std::to_string(w) + ", which it does not receive");
          x.needs.push_back(r);
        }
        if (in_place(plans, t)) x.part_at = offsets_in(x.parts, x.from_source), x.staged = 0;
        else if (x.needs.size() == 1 && steps_[x.needs[0]].parts == x.parts && steps_[x.needs[0]].staged)
          x.from_buffer = x.needs[0], x.staged = 0;
      } else {
        x.how = step::receive;
        x.peers = {t.sender};
        if (in_place(plans, t)) x.part_at = offsets_in(x.parts, false), x.staged = 0;
        else x.staged = x.bytes;
        my_receive[i] = steps_.size();
      }
      step_of_[i] = steps_.size();
      steps_.push_back(std::move(x));
      continue;
    }
    if (t.kind == transfer_kind::local_copy) {
      if (!ts.src_tile.contains(t.region)) throw error(who + " copies a region it does not hold");
      if (ts.destination_bytes == 0 || !ts.dst_tile.contains(t.region)) throw error(who + " copies a region outside its destination tile");
      x.how = step::copy;
    } else if (t.kind == transfer_kind::group_broadcast || t.kind == transfer_kind::chain) {
      x.how = step::collective;
      x.group = group_of_[i];
      x.root = sending;
      if (sending && !ts.src_tile.contains(t.region)) throw error(who + " broadcasts a region it does not hold");
      if (!sending && (ts.destination_bytes == 0 || !ts.dst_tile.contains(t.region)))
        throw error(who + " receives a region outside its destination tile");
      x.direct = sending ? detail::contiguous_offset(ts.src_tile, t.region, ts.eb)
                         : ts.destination_bytes > 0 ? detail::contiguous_offset(ts.dst_tile, t.region, ts.eb) : none;
      if (x.direct == none) x.staged = x.bytes;
    } else if (sending) {
      x.how = step::send;
      x.peers = t.receivers;
      if (t.kind == transfer_kind::point_to_point) {
        if (!ts.src_tile.contains(t.region)) throw error(who + " sends a region it does not hold");
      } else {  // forward: what arrived by the transfers it waits for
        x.from_source = false;
        for (std::int32_t w : t.waits_for) {
          const std::size_t r = static_cast<std::size_t>(w) < my_receive.size() ? my_receive[static_cast<std::size_t>(w)] : none;
          if (r == none) throw error(who + " forwards transfer " + std::to_string(w) + ", which it does not receive");
          x.needs.push_back(r);
        }
        if (x.needs.size() == 1 && steps_[x.needs[0]].region == t.region && steps_[x.needs[0]].parts.empty()) {
          if (steps_[x.needs[0]].staged) x.from_buffer = x.needs[0];
          else x.direct = steps_[x.needs[0]].direct;  // received into the shard: sent from there
        } else if (!ts.dst_tile.contains(t.region)) {
          throw error(who + " forwards a region outside its destination tile");
        }
      }
      if (x.from_buffer == none && x.direct == none)
        x.direct = detail::contiguous_offset(x.from_source ? ts.src_tile : ts.dst_tile, t.region, ts.eb);
      if (x.from_buffer == none && x.direct == none) x.staged = x.bytes;
    } else {
      x.how = step::receive;
      x.peers = {t.sender};
      if (ts.destination_bytes == 0 || !ts.dst_tile.contains(t.region)) throw error(who + " receives a region outside its destination tile");
      x.direct = detail::contiguous_offset(ts.dst_tile, t.region, ts.eb);
      if (x.direct == none) x.staged = x.bytes;
      my_receive[i] = steps_.size();
    }
    step_of_[i] = steps_.size();
    steps_.push_back(std::move(x));
  }
  tokens_sent_.reserve(steps_.size());
}

template <class Backend>
bool executor<Backend>::in_place(std::span<const plan> plans, const transfer& t) {
  return bundle_in_place([&](std::int32_t k) -> const plan& { return plans[static_cast<std::size_t>(k)]; }, t);
}

template <class Backend>
std::vector<std::size_t> executor<Backend>::offsets_in(const std::vector<transfer_part>& parts, bool source) const {
  std::vector<std::size_t> at;
  for (const transfer_part& q : parts) {
    const tensor_state& tq = tensors_[static_cast<std::size_t>(q.tensor)];
    at.push_back(detail::contiguous_offset(source ? tq.src_tile : tq.dst_tile, q.region, tq.eb));
  }
  return at;
}

}  // namespace meshcast

// What building an instance checks of every option a strategy makes, a user's included: a
// strategy's mistake is then an error naming the strategy, where it would otherwise be blamed on
// the solver ("unit 0 is missing") or, worse, run: a forward that waits for nothing sends its
// receive buffer before anything arrived in it, and the destination ends wrong with no error.
//
// An option's ops must (1) name devices of the plan and only the unit's remote receivers; (2)
// wait (`after`) only for an earlier op of the option; (3) send from the sender's source tile,
// or, for a forward, from what the op it waits for brought the sender; (4) give every remote
// receiver each piece of the unit exactly once. O(ops + receivers) per option, plus pairwise
// checks among the pieces one receiver gets of one unit piece (one piece, unless cut).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "../core/error.hpp"
#include "../model/op.hpp"
#include "../plan/plan.hpp"

namespace meshcast::detail {

/// What a unit moves and who may send and receive it: `pieces` (a task's slice, or a bundle's
/// pieces), `holders` (devices known to hold every piece: the unit's senders), `remote` (the
/// receivers the strategy serves). `ops_name_tensor`: the ops carry their tensors (bundles);
/// otherwise the strategy leaves them 0 and every op is of the unit's one tensor.
struct option_context {
  std::string_view strategy;
  std::span<const transfer_part> pieces;
  std::span<const index_t> holders;
  std::span<const index_t> remote;
  bool ops_name_tensor = false;
};

/// Throws a meshcast::error naming the strategy, the unit and the first problem of `ops`.
template <class PlanOf>
void check_option(const option_context& c, const PlanOf& plan_of, index_t sender, const std::vector<op>& ops) {
  const transfer_part& lead = c.pieces.front();
  auto fail = [&](std::size_t j, const std::string& why) {
    throw error("strategy '" + std::string(c.strategy) + "' made an invalid option for tensor " + std::to_string(lead.tensor) +
                "'s task " + std::to_string(lead.task) + " " + lead.region.to_string() + " from device " +
                std::to_string(sender) + ": op " + std::to_string(j) + " " + why);
  };
  if (ops.empty()) throw error("strategy '" + std::string(c.strategy) + "' made an option with no op for tensor " +
                               std::to_string(lead.tensor) + "'s task " + std::to_string(lead.task) + " from device " +
                               std::to_string(sender) + ", whose remote receivers need it");
  auto tensor_of = [&](const op& o) { return c.ops_name_tensor ? o.tensor : lead.tensor; };
  auto is_remote = [&](index_t d) { return std::find(c.remote.begin(), c.remote.end(), d) != c.remote.end(); };
  struct got {
    index_t receiver;
    std::size_t piece;
    box region;
    std::size_t op;
  };
  std::vector<got> delivered;
  auto piece_of = [&](std::size_t j, std::int32_t tensor, index_t task, const box& region) {
    if (task != (c.ops_name_tensor ? task : lead.task))
      fail(j, "names task " + std::to_string(task) + ", not the unit's " + std::to_string(lead.task));
    for (std::size_t k = 0; k < c.pieces.size(); ++k)
      if (c.pieces[k].tensor == tensor && c.pieces[k].task == task && c.pieces[k].region.contains(region) && !region.empty())
        return k;
    fail(j, "moves " + region.to_string() + ", which is no part of what the unit moves");
    return std::size_t{0};
  };
  std::vector<std::pair<std::size_t, box>> carried;  // an op's pieces: its region, then a bundle's parts
  for (std::size_t j = 0; j < ops.size(); ++j) {
    const op& o = ops[j];
    carried.assign({{piece_of(j, tensor_of(o), o.task, o.region), o.region}});
    for (const transfer_part& q : o.parts) carried.emplace_back(piece_of(j, q.tensor, q.task, q.region), q.region);
    const plan& p = plan_of(c.pieces[carried[0].first].tensor);  // a tensor of the unit: piece_of found it
    if (o.sender < 0 || o.sender >= p.device_count) fail(j, "names a sender that is no device of the plan");
    if (o.receivers.empty()) fail(j, "has no receiver");
    for (index_t r : o.receivers)
      if (!is_remote(r)) fail(j, "sends to device " + std::to_string(r) + ", which is no remote receiver of the unit");
    if (o.after < -1 || o.after >= static_cast<int>(j)) fail(j, "waits (after) for an op that does not come before it in the option");
    if (o.kind == transfer_kind::forward) {
      if (o.after < 0) fail(j, "is a forward that waits (after) for no op: it would send before its sender has received");
      const op& from = ops[static_cast<std::size_t>(o.after)];
      if (std::find(from.receivers.begin(), from.receivers.end(), o.sender) == from.receivers.end())
        fail(j, "forwards what op " + std::to_string(o.after) + " brings, but its sender is no receiver of that op");
      if (tensor_of(from) != tensor_of(o) || !from.region.contains(o.region) || from.parts != o.parts)
        fail(j, "forwards more than op " + std::to_string(o.after) + ", which it waits for, brings its sender");
    } else if (std::find(c.holders.begin(), c.holders.end(), o.sender) == c.holders.end()) {
      for (const auto& [k, region] : carried)
        if (!plan_of(c.pieces[k].tensor).source_tile(o.sender).contains(region))
          fail(j, "sends " + region.to_string() + " from device " + std::to_string(o.sender) + ", which does not hold it");
    }
    for (const auto& [k, region] : carried)
      for (index_t r : o.receivers) delivered.push_back({r, k, region, j});
  }
  // Every remote receiver gets every piece exactly once: disjoint regions inside it, summing to it.
  std::sort(delivered.begin(), delivered.end(),
            [](const got& a, const got& b) { return std::tie(a.receiver, a.piece, a.op) < std::tie(b.receiver, b.piece, b.op); });
  std::size_t at = 0;
  std::vector<index_t> receivers(c.remote.begin(), c.remote.end());
  std::sort(receivers.begin(), receivers.end());
  for (index_t r : receivers)
    for (std::size_t k = 0; k < c.pieces.size(); ++k) {
      const std::size_t from = at;
      index_t volume = 0;
      for (; at < delivered.size() && delivered[at].receiver == r && delivered[at].piece == k; ++at) {
        for (std::size_t e = from; e < at; ++e)
          if (!intersect(delivered[e].region, delivered[at].region).empty())
            fail(delivered[at].op, "gives device " + std::to_string(r) + " part of " + c.pieces[k].region.to_string() +
                                       " that op " + std::to_string(delivered[e].op) + " gives it too");
        volume += delivered[at].region.volume();
      }
      if (volume != c.pieces[k].region.volume())
        throw error("strategy '" + std::string(c.strategy) + "' made an invalid option for tensor " +
                    std::to_string(c.pieces[k].tensor) + "'s task " + std::to_string(c.pieces[k].task) + " from device " +
                    std::to_string(sender) + ": remote receiver " + std::to_string(r) + " gets " + std::to_string(volume) +
                    " of the " + std::to_string(c.pieces[k].region.volume()) + " elements of " + c.pieces[k].region.to_string());
    }
}

}  // namespace meshcast::detail

// What building an instance checks of every option a strategy makes, a user's included: a
// strategy's mistake is then an error naming the strategy, where it would otherwise be blamed on
// the solver ("unit 0 is missing") or, worse, run: a forward that waits for nothing sends its
// receive buffer before anything arrived in it, and the destination ends wrong with no error.
// The built-in strategies are trusted instead (options_trusted, strategy.hpp): the tests check
// their options here (unit.strategy_checks), and their instances build without the cost.
//
// An option's ops must (1) name devices of the plan and only the unit's remote receivers; (2)
// wait (`after`) only for an earlier op of the option; (3) send from the sender's source tile,
// or, for a forward, from what the op it waits for brought the sender; (4) give every remote
// receiver each piece of the unit exactly once. An op that carries the whole unit (the lead
// region and the bundle's own part list: most ops) costs O(receivers); one that carries pieces
// costs O(its pieces x receivers), plus pairwise checks among the pieces one receiver gets of one
// unit piece where it gets several.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
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
  /// A bundle's parts after its lead, the list its ops carry when they carry it whole.
  const part_list* rest = nullptr;
};

/// Throws a meshcast::error naming the strategy, the unit and the first problem of `ops`, the
/// option that `sender` sends (`plans`: the instance's, one per tensor). Not a template, and
/// compiled only where an untrusted strategy is used (instance.hpp takes its address there).
inline void check_option(const option_context& c, std::span<const std::shared_ptr<const plan>> plans, index_t sender,
                         const std::vector<op>& ops) {
  auto plan_of = [plans](std::int32_t k) -> const plan& { return *plans[static_cast<std::size_t>(k)]; };
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
  std::vector<index_t> receivers(c.remote.begin(), c.remote.end());
  std::sort(receivers.begin(), receivers.end());
  const std::size_t n_pieces = c.pieces.size();
  auto receiver_index = [&](std::size_t j, index_t d) {
    const auto at = std::lower_bound(receivers.begin(), receivers.end(), d);
    if (at == receivers.end() || *at != d)
      fail(j, "sends to device " + std::to_string(d) + ", which is no remote receiver of the unit");
    return static_cast<std::size_t>(at - receivers.begin());
  };
  // The unit's pieces by (tensor, task), for the ops that carry some of them.
  std::vector<std::tuple<std::int32_t, index_t, std::size_t>> index;
  auto piece_of = [&](std::size_t j, std::int32_t tensor, index_t task, const box& region) {
    if (task != (c.ops_name_tensor ? task : lead.task))
      fail(j, "names task " + std::to_string(task) + ", not the unit's " + std::to_string(lead.task));
    if (index.empty()) {
      for (std::size_t k = 0; k < n_pieces; ++k) index.emplace_back(c.pieces[k].tensor, c.pieces[k].task, k);
      std::sort(index.begin(), index.end());
    }
    auto at = std::lower_bound(index.begin(), index.end(), std::tuple(tensor, task, std::size_t{0}));
    for (; at != index.end() && std::get<0>(*at) == tensor && std::get<1>(*at) == task; ++at)
      if (c.pieces[std::get<2>(*at)].region.contains(region) && !region.empty()) return std::get<2>(*at);
    fail(j, "moves " + region.to_string() + ", which is no part of what the unit moves");
    return std::size_t{0};
  };
  // What each receiver gets: the ops that bring it the whole unit, and the pieces of the others.
  constexpr std::size_t none = static_cast<std::size_t>(-1);
  std::vector<std::size_t> whole_from(receivers.size(), none);
  // The ops that carry part of the unit, by distinct payload (a slice and the forwards of it
  // share one): each payload's pieces are found once, and each receiver's set of payloads checked
  // once however many receivers get the same set (the devices of a host, under an all-gather).
  std::vector<std::vector<std::pair<std::size_t, const box*>>> payloads;  // unit piece, region
  std::vector<std::size_t> payload_op;      // the first op carrying each
  std::vector<std::size_t> payload_of_op(ops.size(), none);
  std::vector<std::vector<std::size_t>> got(receivers.size());  // payloads each receiver gets
  auto same_payload = [&](const op& a, const op& b) {
    return tensor_of(a) == tensor_of(b) && a.task == b.task && a.region == b.region && a.parts == b.parts;
  };
  for (std::size_t j = 0; j < ops.size(); ++j) {
    const op& o = ops[j];
    const bool whole = o.region == lead.region && tensor_of(o) == lead.tensor && o.task == lead.task &&
                       (c.rest ? o.parts == *c.rest : o.parts.empty());
    if (!whole) {
      std::size_t& id = payload_of_op[j];
      if (o.after >= 0 && o.after < static_cast<int>(j) && same_payload(o, ops[static_cast<std::size_t>(o.after)]))
        id = payload_of_op[static_cast<std::size_t>(o.after)];
      for (std::size_t q = 0; q < payloads.size() && id == none; ++q)
        if (same_payload(o, ops[payload_op[q]])) id = q;
      if (id == none) {
        id = payloads.size();
        auto& pieces = payloads.emplace_back();
        pieces.emplace_back(piece_of(j, tensor_of(o), o.task, o.region), &o.region);
        for (const transfer_part& q : o.parts) pieces.emplace_back(piece_of(j, q.tensor, q.task, q.region), &q.region);
        payload_op.push_back(j);
      }
    }
    static const std::vector<std::pair<std::size_t, const box*>> nothing;
    const auto& carried = whole ? nothing : payloads[payload_of_op[j]];
    const plan& p = plan_of(whole ? lead.tensor : c.pieces[carried[0].first].tensor);  // a tensor of the unit
    if (o.sender < 0 || o.sender >= p.device_count) fail(j, "names a sender that is no device of the plan");
    if (o.receivers.empty()) fail(j, "has no receiver");
    if (o.after < -1 || o.after >= static_cast<int>(j)) fail(j, "waits (after) for an op that does not come before it in the option");
    if (o.kind == transfer_kind::forward) {
      if (o.after < 0) fail(j, "is a forward that waits (after) for no op: it would send before its sender has received");
      const op& from = ops[static_cast<std::size_t>(o.after)];
      if (std::find(from.receivers.begin(), from.receivers.end(), o.sender) == from.receivers.end())
        fail(j, "forwards what op " + std::to_string(o.after) + " brings, but its sender is no receiver of that op");
      if (tensor_of(from) != tensor_of(o) || !from.region.contains(o.region) || from.parts != o.parts)
        fail(j, "forwards more than op " + std::to_string(o.after) + ", which it waits for, brings its sender");
    } else if (std::find(c.holders.begin(), c.holders.end(), o.sender) == c.holders.end()) {
      auto holds = [&](std::int32_t tensor, const box& region) {
        if (!plan_of(tensor).source_tile(o.sender).contains(region))
          fail(j, "sends " + region.to_string() + " from device " + std::to_string(o.sender) + ", which does not hold it");
      };
      if (whole)
        for (const transfer_part& q : c.pieces) holds(q.tensor, q.region);
      for (const auto& [k, region] : carried) holds(c.pieces[k].tensor, *region);
    }
    for (index_t r : o.receivers) {
      const std::size_t i = receiver_index(j, r);
      if (!whole) {
        got[i].push_back(payload_of_op[j]);
      } else if (whole_from[i] != none) {
        fail(j, "gives device " + std::to_string(r) + " part of " + lead.region.to_string() + " that op " +
                    std::to_string(whole_from[i]) + " gives it too");
      } else {
        whole_from[i] = j;
      }
    }
  }
  // Every remote receiver gets every piece exactly once: disjoint regions inside it, summing to it.
  auto short_of = [&](std::size_t i, std::size_t k, index_t volume) {
    throw error("strategy '" + std::string(c.strategy) + "' made an invalid option for tensor " +
                std::to_string(c.pieces[k].tensor) + "'s task " + std::to_string(c.pieces[k].task) + " from device " +
                std::to_string(sender) + ": remote receiver " + std::to_string(receivers[i]) + " gets " + std::to_string(volume) +
                " of the " + std::to_string(c.pieces[k].region.volume()) + " elements of " + c.pieces[k].region.to_string());
  };
  std::vector<std::size_t> order(receivers.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i, std::sort(got[i].begin(), got[i].end());
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return std::tie(got[a], a) < std::tie(got[b], b); });
  std::vector<index_t> volume(n_pieces);
  std::vector<std::tuple<std::size_t, std::size_t, const box*>> in;  // piece, op, region
  for (std::size_t n = 0; n < order.size(); ++n) {
    const std::size_t i = order[n];
    if (whole_from[i] != none) {
      if (!got[i].empty())
        fail(payload_op[got[i].front()], "gives device " + std::to_string(receivers[i]) + " part of " + lead.region.to_string() +
                                             " that op " + std::to_string(whole_from[i]) + " gives it too");
      continue;
    }
    if (n > 0 && got[i] == got[order[n - 1]] && whole_from[order[n - 1]] == none) continue;  // the same set: checked
    in.clear();
    for (std::size_t q = 0; q < got[i].size(); ++q) {
      if (q > 0 && got[i][q] == got[i][q - 1])
        fail(payload_op[got[i][q]], "gives device " + std::to_string(receivers[i]) + " what another op gives it too");
      for (const auto& [k, region] : payloads[got[i][q]]) in.emplace_back(k, payload_op[got[i][q]], region);
    }
    std::sort(in.begin(), in.end(), [](const auto& a, const auto& b) {
      return std::tie(std::get<0>(a), std::get<1>(a)) < std::tie(std::get<0>(b), std::get<1>(b));
    });
    std::fill(volume.begin(), volume.end(), 0);
    for (std::size_t e = 0; e < in.size(); ++e) {
      const auto& [k, j, region] = in[e];
      for (std::size_t d = e; d-- > 0 && std::get<0>(in[d]) == k;)
        if (!intersect(*std::get<2>(in[d]), *region).empty())
          fail(j, "gives device " + std::to_string(receivers[i]) + " part of " + c.pieces[k].region.to_string() + " that op " +
                      std::to_string(std::get<1>(in[d])) + " gives it too");
      volume[k] += region->volume();  // disjoint pieces of one region: no overflow
    }
    for (std::size_t k = 0; k < n_pieces; ++k)
      if (volume[k] != c.pieces[k].region.volume()) short_of(i, k, volume[k]);
  }
}

}  // namespace meshcast::detail

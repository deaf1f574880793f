// Checking a solver's answer against its instance, in O(ops log ops): whatever a solver returns
// (a user's included), `solve` hands on only schedules that deliver every byte exactly once.
//
// A valid answer takes one option of every unit and every op of that option, each where its
// `after` op is complete. A solver may cut an op into pieces (open_shop does, to pipeline
// transfers and to share one transfer among replicas): the pieces are slabs of the op's region
// along one dim that together tile it exactly, each sent as the op of some option of the unit
// (options that differ only in their sender, so that a piece's sender holds it). An op that
// carries a bundle (transfer::parts) is not cut.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "../core/error.hpp"
#include "../model/connections.hpp"
#include "../model/network.hpp"
#include "instance.hpp"

namespace meshcast {

namespace detail {
// Whether `pieces` (regions inside `whole`) tile it exactly: one piece equal to it, or slabs
// along one dim that meet end to end.
inline bool tiles(const box& whole, std::vector<box>& pieces) {
  if (pieces.size() == 1) return pieces[0] == whole;
  int cut = -1;
  for (int d = 0; d < whole.rank && cut < 0; ++d)
    if (!(pieces[0][d] == whole[d])) cut = d;
  if (cut < 0) return false;  // two pieces equal to the whole overlap
  for (const box& b : pieces)
    for (int d = 0; d < whole.rank; ++d)
      if (d != cut && !(b[d] == whole[d])) return false;
  std::sort(pieces.begin(), pieces.end(), [cut](const box& a, const box& b) { return a[cut].lo < b[cut].lo; });
  index_t at = whole[cut].lo;
  for (const box& b : pieces) {
    if (b[cut].lo != at || b[cut].hi <= b[cut].lo) return false;
    at = b[cut].hi;
  }
  return at == whole[cut].hi;
}

// Why `o`, the whole of `own` or a piece of it, is not modelled as the instance models it, or
// nullptr. The model is what simulate() predicts and the executor follows (connections, chain
// pieces), so a solver may not change it: a whole op keeps its own; a piece, which only a
// point-to-point transfer may be cut into, keeps its resources and latency and takes the
// network's time for its bytes, as open_shop cuts them.
inline const char* model_mismatch(const network& net, const op& o, const op& own) {
  if (o.resources != own.resources || o.holders != own.holders || o.egress_hosts != own.egress_hosts ||
      o.ingress_hosts != own.ingress_hosts || o.hold_from != own.hold_from || o.hold_until != own.hold_until ||
      o.connection != own.connection || o.latency_s != own.latency_s || o.piece_bytes != own.piece_bytes)
    return "changes its model (the resources it holds, its hosts, connection, latency or piece size)";
  if (o.region == own.region)
    return o.duration == own.duration && o.eager == own.eager ? nullptr : "changes its modelled duration";
  if (own.kind != transfer_kind::point_to_point || own.receivers.size() != 1) return "cuts a transfer that is not point to point";
  op remodelled = o;
  remodelled.duration = net.transfer_time(o.sender, o.receivers[0], o.bytes);
  connection_map::resize(remodelled, net);  // a piece may go eagerly where the whole did not
  if (o.duration != remodelled.duration || o.eager != remodelled.eager)
    return "has a piece not modelled as the network's transfer of its bytes";
  return nullptr;
}
}  // namespace detail

/// Throws `meshcast::error` naming `solver` and the first problem when `ops` is not a valid
/// answer for `in` (see the file comment).
inline void validate_solution(const instance& in, const std::vector<op>& ops, std::string_view solver) {
  auto fail = [&](const std::string& why) {
    throw error("solver '" + std::string(solver) + "' returned an invalid schedule: " + why);
  };
  const std::size_t n_units = in.units.size();
  std::vector<int> chosen(n_units, -1);  // the first option seen: the reference for the unit's ops
  auto same_shape = [](const option& a, const option& b) {
    if (a.ops.size() != b.ops.size()) return false;
    for (std::size_t j = 0; j < a.ops.size(); ++j)
      if (!(a.ops[j].region == b.ops[j].region) || a.ops[j].receivers != b.ops[j].receivers ||
          a.ops[j].after != b.ops[j].after)
        return false;
    return true;
  };
  std::vector<std::uint64_t> compatible(n_units, 0);  // options found to match the reference (first 64)
  for (const op& o : ops) {
    if (o.unit < 0 || o.unit >= static_cast<index_t>(n_units)) fail("an op names no unit of the instance");
    const unit& u = in.units[static_cast<std::size_t>(o.unit)];
    if (o.option < 0 || o.option >= static_cast<int>(u.options.size()) || o.part < 0 ||
        o.part >= static_cast<int>(u.options[static_cast<std::size_t>(o.option)].ops.size()))
      fail("an op of unit " + std::to_string(o.unit) + " names no op of the instance");
    int& c = chosen[static_cast<std::size_t>(o.unit)];
    if (c < 0) c = o.option;
    if (c == o.option) continue;
    std::uint64_t& seen = compatible[static_cast<std::size_t>(o.unit)];
    const std::uint64_t bit = o.option < 64 ? std::uint64_t{1} << o.option : 0;
    if (bit && (seen & bit)) continue;
    if (!same_shape(u.options[static_cast<std::size_t>(c)], u.options[static_cast<std::size_t>(o.option)]))
      fail("unit " + std::to_string(o.unit) + " mixes options that deliver different things");
    seen |= bit;
  }
  // Slot of (unit, part) under the chosen option: pieces are grouped by slot.
  std::vector<std::size_t> base(n_units + 1, 0);
  for (std::size_t u = 0; u < n_units; ++u) {
    if (chosen[u] < 0) fail("unit " + std::to_string(u) + " (task " + std::to_string(in.units[u].task) + ") is missing");
    base[u + 1] = base[u] + in.units[u].options[static_cast<std::size_t>(chosen[u])].ops.size();
  }
  const std::size_t slots = base[n_units];
  std::vector<std::size_t> first(slots, ops.size()), last(slots, 0), count(slots + 1, 0);
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const std::size_t s = base[static_cast<std::size_t>(ops[i].unit)] + static_cast<std::size_t>(ops[i].part);
    first[s] = std::min(first[s], i);
    last[s] = i;
    ++count[s + 1];
  }
  for (std::size_t s = 0; s < slots; ++s) count[s + 1] += count[s];
  std::vector<std::size_t> by_slot(ops.size()), fill(count.begin(), count.end() - 1);
  for (std::size_t i = 0; i < ops.size(); ++i)
    by_slot[fill[base[static_cast<std::size_t>(ops[i].unit)] + static_cast<std::size_t>(ops[i].part)]++] = i;
  std::vector<box> pieces;
  for (std::size_t u = 0; u < n_units; ++u) {
    const auto& model_ops = in.units[u].options[static_cast<std::size_t>(chosen[u])].ops;
    for (std::size_t j = 0; j < model_ops.size(); ++j) {
      const op& model = model_ops[j];
      const std::size_t s = base[u] + j;
      const std::string where = "op " + std::to_string(j) + " of unit " + std::to_string(u);
      if (count[s] == count[s + 1]) fail(where + " is missing");
      pieces.clear();
      for (std::size_t k = count[s]; k < count[s + 1]; ++k) {
        const op& o = ops[by_slot[k]];
        const op& own = in.units[u].options[static_cast<std::size_t>(o.option)].ops[static_cast<std::size_t>(o.part)];
        if (o.sender != own.sender || o.receivers != own.receivers || o.task != own.task || o.tensor != own.tensor ||
            o.kind != own.kind)
          fail(where + " changes its sender or receivers");
        if (o.region.rank != model.region.rank || !model.region.contains(o.region) || o.region.empty())
          fail(where + " has a piece outside its region");
        if (!own.parts.empty()) {  // a bundle goes whole
          if (!(o.region == own.region) || o.parts != own.parts || o.bytes != own.bytes) fail(where + " cuts a bundle");
        } else if (o.bytes != o.region.volume() * in.plans[static_cast<std::size_t>(own.tensor)]->element_bytes) {
          fail(where + " has a piece whose bytes do not match its region");
        }
        if (const char* why = detail::model_mismatch(*in.net, o, own)) fail(where + " " + why);
        pieces.push_back(o.region);
      }
      if (!detail::tiles(model.region, pieces)) fail(where + " is not delivered exactly once");
      if (model.after >= 0) {
        const std::size_t before = base[u] + static_cast<std::size_t>(model.after);
        if (last[before] >= first[s]) fail(where + " is issued before the op it waits for is complete");
      }
    }
  }
}

}  // namespace meshcast

// open_shop: for point-to-point strategies, reach the lower bound up to chunking and latency.
//
// 1. Spread every unit over its replicas in the proportions of the egress bound's optimal flow
//    (with replica splitting; otherwise each unit goes whole to its largest share).
// 2. Cut every NIC transfer into chunks of about (lower bound / rounds) seconds (in ordered mode
//    over a transport with eager messages, one between hosts that goes by rendezvous stays whole).
// 3. The chunks form a bipartite multigraph between egress and ingress ports. By Koenig's
//    theorem its edges can be coloured with as many colours as the largest degree; each colour is
//    a round in which no port is used twice. Rounds are issued one after another.
#pragma once

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "../../core/detail/deadline.hpp"
#include "../../core/detail/edge_colour.hpp"
#include "../lower_bound.hpp"
#include "../senders.hpp"
#include "../../layout/slice.hpp"
#include "../solver.hpp"

namespace meshcast {

struct open_shop {
  static constexpr std::string_view name = "open_shop";
  int rounds = 256;  ///< target number of chunks on the busiest port (fewer when latency dominates), 1..max_rounds
  /// The most rounds: the chunks grow with them (INT_MAX made 11 million chunks, 16 GB and 53 s
  /// under a 0.2 s limit on a network without latency, which caps nothing).
  static constexpr int max_rounds = 4096;

  const char* supports(const instance& in) const {
    if (!in.point_to_point)
      return "open_shop colours point-to-point transfers; a broadcast chain holds several ports at once";
    return nullptr;
  }

  solver_result solve(const instance& in, const solver_options& options) const {
    if (rounds < 1 || rounds > max_rounds)
      throw error("open_shop::rounds is " + std::to_string(rounds) + "; it must be 1 to " + std::to_string(max_rounds));
    const detail::deadline stop(options.time_limit_s);
    const network& net = *in.net;
    const resource_space& rs = in.resources;
    egress_split split = egress_bound(in);
    // Every chunk pays one latency: keep chunks at least 50 latencies long (<= 2% overhead).
    const double bound = lower_bound(in).value();
    const double wanted_rounds = net.latency_s() > 0 ? std::min<double>(rounds, bound / (50 * net.latency_s())) : rounds;
    const double chunk_s = std::max(bound / std::max(1.0, wanted_rounds), 1e-12);
    std::vector<std::size_t> longest(in.units.size());
    for (std::size_t u = 0; u < longest.size(); ++u) longest[u] = u;
    std::stable_sort(longest.begin(), longest.end(),
                     [&](std::size_t a, std::size_t b) { return unit_time(in.units[a]) > unit_time(in.units[b]); });
    const std::vector<int> whole = quota_senders(in, longest);
    solver_result out;
    std::vector<op> chunks;
    struct followup {
      std::size_t pending;  // chunks of the transfer still to be issued
      std::vector<op> then;  // ops that need the whole transfer first (local all-gather)
    };
    std::vector<followup> follow;
    std::vector<std::size_t> follow_of;  // chunk -> followup index, or npos

    for (std::size_t u = 0; u < in.units.size(); ++u) {
      const unit& un = in.units[u];
      const bool hurry = stop.expired();  // out of time: the rest go whole, uncut
      if (!un.has_choice() && !any_nic(un.options[0], rs)) {
        detail::emit(in, u, 0, out.ops);  // local and intra-host work goes first
        continue;
      }
      std::vector<double> share = split.fraction[u];
      // A transfer that would be cut into pieces shorter than a chunk among its replicas is not
      // worth cutting (each piece pays a latency): it goes whole to the sender its quota names.
      const auto sharing = std::count_if(share.begin(), share.end(), [](double f) { return f > 1e-9; });
      if (!in.split_replicas || !same_shape(un) || longest_op(un) < chunk_s * static_cast<double>(sharing)) {
        std::fill(share.begin(), share.end(), 0.0);
        share[static_cast<std::size_t>(whole[u])] = 1;
      }
      const auto& ops0 = un.options[0].ops;
      for (std::size_t j = 0; j < ops0.size(); ++j) {
        if (ops0[j].after >= 0) continue;  // handled with the transfer it waits for
        if (!ops0[j].uses_nic(rs)) {
          out.ops.push_back(ops0[j]);
          for (const op& x : ops0)
            if (x.after == static_cast<int>(j)) out.ops.push_back(x);
          continue;
        }
        const box& region = ops0[j].region;
        const index_t element_bytes = region.volume() > 0 ? ops0[j].bytes / region.volume() : 1;
        // Replica shares and chunks are all slabs along one dim, chosen for the chunk count.
        const double whole_s = net.transfer_time(ops0[j].sender, ops0[j].receivers[0], ops0[j].bytes);
        const int d = slice_dim(region, std::max<index_t>(2, static_cast<index_t>(std::min(1e6, whole_s / chunk_s))));
        std::vector<index_t> rows = apportion(region[d].size(), share);
        std::vector<box> blocks = slice_by_counts(region, d, rows);
        std::size_t first_chunk = chunks.size();
        // A bundle (transfer::parts) is not cut: it goes whole, from the sender its quota names.
        if (!ops0[j].parts.empty()) blocks.clear(), chunks.push_back(un.options[static_cast<std::size_t>(whole[u])].ops[j]);
        for (std::size_t k = 0; k < blocks.size(); ++k) {
          if (rows[k] == 0) continue;
          const op& model = un.options[k].ops[j];
          index_t block_bytes = blocks[k].volume() * element_bytes;
          double t = net.transfer_time(model.sender, model.receivers[0], block_bytes);
          index_t n = static_cast<index_t>(std::clamp(std::round(t / chunk_s), 1.0, 1e6));
          // Under the connection rule (connections.hpp) transfers the other way between two
          // devices start together only if both go by rendezvous and the model starts them at
          // one time: pieces would go eagerly or drift apart by a row and run one after the
          // other (a same-mesh transpose's rounds took twice as long), so such a transfer
          // stays whole.
          if ((model.connection >= 0 && block_bytes > net.eager_bytes()) || hurry) n = 1;
          auto pieces = slice_along(blocks[k], d, n);
          for (const box& piece : pieces) {
            op c = model;
            c.region = piece;
            c.bytes = piece.volume() * element_bytes;
            c.duration = net.transfer_time(model.sender, model.receivers[0], c.bytes);
            connection_map::resize(c, net);  // a piece may go eagerly where the whole did not
            chunks.push_back(std::move(c));
          }
        }
        std::vector<op> then;
        for (const op& x : ops0)
          if (x.after == static_cast<int>(j)) then.push_back(x);
        std::size_t f = then.empty() ? npos : follow.size();
        if (!then.empty()) follow.push_back({chunks.size() - first_chunk, std::move(then)});
        follow_of.resize(chunks.size(), f);
      }
    }

    // Colour the chunk graph: vertices are egress ports (left) and ingress ports (right).
    std::vector<int> degree(static_cast<std::size_t>(rs.port_directions()), 0);
    std::vector<std::pair<int, int>> ends(chunks.size());
    for (std::size_t e = 0; e < chunks.size(); ++e) {
      int a = -1, b = -1;
      for (int r : chunks[e].resources) {
        if (rs.is_egress(r)) a = r;
        else if (rs.is_ingress(r)) b = r;
      }
      ends[e] = {a, b};
      ++degree[a], ++degree[b];
    }
    const int colours = chunks.empty() ? 0 : *std::max_element(degree.begin(), degree.end());
    std::vector<int> colour = detail::edge_colour(ends, rs.port_directions(), colours, &stop);
    if (colour.empty()) colour.assign(chunks.size(), 0);  // out of time: one round, in creation order
    std::vector<std::vector<std::size_t>> by_round(static_cast<std::size_t>(std::max(colours, 1)));
    for (std::size_t e = 0; e < chunks.size(); ++e) by_round[colour[e]].push_back(e);
    for (const auto& round : by_round) {
      std::vector<std::size_t> finished;
      for (std::size_t e : round) {
        out.ops.push_back(chunks[e]);
        if (follow_of[e] != npos && --follow[follow_of[e]].pending == 0) finished.push_back(follow_of[e]);
      }
      for (std::size_t f : finished)
        for (const op& x : follow[f].then) out.ops.push_back(x);
    }
    return out;
  }

 private:
  static constexpr std::size_t npos = static_cast<std::size_t>(-1);

  // Time the unit's NIC work takes under its first option, and its longest transfer.
  static double unit_time(const unit& u) {
    double t = 0;
    for (const op& x : u.options[0].ops) t += x.duration;
    return t;
  }
  static double longest_op(const unit& u) {
    double t = 0;
    for (const op& x : u.options[0].ops) t = std::max(t, x.duration);
    return t;
  }

  static bool any_nic(const option& o, const resource_space& rs) {
    return std::any_of(o.ops.begin(), o.ops.end(), [&](const op& x) { return x.uses_nic(rs); });
  }
  // Options that differ only in the sender can share one unit's transfers between replicas.
  static bool same_shape(const unit& u) {
    for (const option& o : u.options) {
      if (o.ops.size() != u.options[0].ops.size()) return false;
      for (std::size_t j = 0; j < o.ops.size(); ++j)
        if (o.ops[j].receivers != u.options[0].ops[j].receivers || !(o.ops[j].region == u.options[0].ops[j].region))
          return false;
    }
    return true;
  }
  // Splits n indices in the given proportions (largest remainder). Above 2^53 a double does not
  // hold n exactly and share * n may round past what is left: each count is capped at what is left
  // before it is converted, so the counts never sum past n (nor convert 2^63 to an integer).
  static std::vector<index_t> apportion(index_t n, const std::vector<double>& share) {
    std::vector<index_t> counts(share.size(), 0);
    std::vector<std::pair<double, std::size_t>> rest;
    index_t given = 0;
    for (std::size_t k = 0; k < share.size(); ++k) {
      const double exact = std::max(0.0, share[k] * static_cast<double>(n));  // a share of -1e-17 gives none
      const index_t left = n - given;
      counts[k] = exact >= static_cast<double>(left) ? left : static_cast<index_t>(std::floor(exact));
      given += counts[k];
      rest.push_back({exact - std::floor(exact), k});
    }
    std::sort(rest.begin(), rest.end(), [](auto& a, auto& b) { return a.first > b.first; });
    for (std::size_t i = 0; given < n; ++i, ++given) ++counts[rest[i % rest.size()].second];
    return counts;
  }
};

}  // namespace meshcast

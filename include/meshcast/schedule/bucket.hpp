// Bucketing: in a batch's schedule, the messages that go from one device to another travel
// together, so that a model of thousands of tensors pays a latency per pair and bucket, not per
// tensor. A point-to-point transfer joins the open bucket of its (sender, receiver) pair, a chain
// that of its (sender, members) sequence, placed where the bucket's first transfer was, while the
// bucket stays under its size; the bucket's model is one message (one chain) of all their bytes.
// The executor packs a bucket's pieces one after another (transfer::parts) and unpacks them at
// every receiver.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "../core/detail/checked.hpp"
#include "../model/network.hpp"
#include "../model/schedule.hpp"
#include "../model/simulate.hpp"
#include "bundle_messages.hpp"
#include "strategy/broadcast.hpp"

namespace meshcast {

/// The bytes a bucket (a bundle, bundle.hpp) holds at most on `net`: enough that one latency
/// costs at most a 64th of the bucket's time on the slowest NIC, and, where the busiest NIC
/// direction must work `busiest_s` seconds whatever the schedule, enough that the batch makes at
/// most about 1024 buckets per NIC direction (a bucket's time is then at most a thousandth of
/// the whole: what a last bucket can leave unbalanced); within [256 KiB, 64 MiB]; under a
/// staging cap, at most half of it (a bucket goes through a message buffer). 0: no bucketing.
inline std::size_t bucket_bytes(const network& net, std::size_t max_staging_bytes = 0, double busiest_s = 0) {
  double slowest = 0;
  for (int port = 0; port < net.port_count(); ++port) {
    const double bps = std::min(net.egress_bps(port), net.ingress_bps(port));
    slowest = slowest == 0 ? bps : std::min(slowest, bps);
  }
  const double wanted = slowest * std::max(64 * net.latency_s(), std::isfinite(busiest_s) ? busiest_s / 1024 : 0.0);
  std::size_t b = wanted < double(std::size_t{256} << 10) ? std::size_t{256} << 10
                  : wanted > double(std::size_t{64} << 20) ? std::size_t{64} << 20
                                                            : static_cast<std::size_t>(wanted);
  if (max_staging_bytes > 0) b = std::min(b, max_staging_bytes / 2);
  return b;
}

namespace detail {
// Whether a transfer may join a bucket, and the key of the buckets it may join.
inline bool bucket_candidate(const transfer& t, std::size_t max_bytes) {
  return ((t.kind == transfer_kind::point_to_point && t.receivers.size() == 1) || t.kind == transfer_kind::chain) &&
         t.waits_for.empty() && t.parts.empty() && static_cast<std::size_t>(t.bytes) < max_bytes;
}
inline std::vector<index_t> bucket_key(const transfer& t) {
  std::vector<index_t> key{static_cast<index_t>(t.kind), t.sender};
  key.insert(key.end(), t.receivers.begin(), t.receivers.end());
  return key;
}
// Whether two transfers of `s` could share a bucket (else bucketing changes nothing).
inline bool bucketable(const schedule& s, std::size_t max_bytes) {
  std::map<std::vector<index_t>, index_t> seen;  // key -> bytes of the first candidate
  for (const transfer& t : s.transfers) {
    if (!bucket_candidate(t, max_bytes)) continue;
    auto [it, fresh] = seen.try_emplace(bucket_key(t), t.bytes);
    if (fresh) continue;
    if (detail::sum_within(it->second, t.bytes, max_bytes)) return true;
    it->second = t.bytes;  // the next bucket of that key opens with it
  }
  return false;
}
}  // namespace detail

/// `s` with its point-to-point messages bucketed (at most `max_bytes` a bucket; see the file
/// comment), times and makespan simulated anew. Transfers that wait for others (forwards), chains,
/// broadcasts and local copies stay as they are; what waits for a bucketed transfer waits for its
/// bucket. The lower bound stays where it holds (the latency-free physical bound otherwise).
/// With the batch's `plans`, a bucket the executor sends piece by piece is eager by its smallest
/// piece, as it runs (bundle_messages.hpp); without them, by all its bytes, as one packed message.
inline schedule bucketed(const schedule& s, const network& net, std::size_t max_bytes,
                         std::span<const std::shared_ptr<const plan>> plans = {}) {
  if (max_bytes == 0 || s.model.size() != s.transfers.size() || !detail::bucketable(s, max_bytes)) return s;
  // Devices and dependencies index the network and the schedule: a hand-made schedule is checked
  // first (a sender of 2^19 was read past the network's hosts).
  for (std::size_t i = 0; i < s.transfers.size(); ++i) {
    const transfer& t = s.transfers[i];
    bool fits = t.sender >= 0 && t.sender < net.device_count() && !t.receivers.empty();
    for (index_t r : t.receivers) fits = fits && r >= 0 && r < net.device_count();
    for (std::int32_t w : t.waits_for) fits = fits && w >= 0 && static_cast<std::size_t>(w) < i;
    if (!fits)
      throw error("bucketed: transfer " + std::to_string(i) +
                  " names a device outside the network, no receiver, or waits for a transfer that does not come before it");
  }
  schedule out = s;
  out.transfers.clear();
  out.model.clear();
  const resource_space rs{net.port_count(), net.device_count()};
  std::map<std::vector<index_t>, std::size_t> open;  // (kind, sender, receivers...) -> its bucket
  std::vector<std::int32_t> moved(s.transfers.size());     // old index -> new index
  std::vector<char> grown;  // per new transfer: whether messages were merged into it here
  bool merged = false;
  for (std::size_t i = 0; i < s.transfers.size(); ++i) {
    const transfer& t = s.transfers[i];
    const bool candidate = detail::bucket_candidate(t, max_bytes);
    std::vector<index_t> key;
    if (candidate) {
      key = detail::bucket_key(t);
      auto it = open.find(key);
      if (it != open.end() && detail::sum_within(out.transfers[it->second].bytes, t.bytes, max_bytes)) {
        transfer& b = out.transfers[it->second];
        b.parts.push_back({t.tensor, t.task, t.region, t.bytes});
        b.bytes += t.bytes;
        moved[i] = static_cast<std::int32_t>(it->second);
        grown[it->second] = 1;
        merged = true;
        continue;
      }
    }
    moved[i] = static_cast<std::int32_t>(out.transfers.size());
    if (candidate) open[key] = out.transfers.size();
    out.transfers.push_back(t);
    grown.push_back(0);
    for (std::int32_t& w : out.transfers.back().waits_for) w = moved[static_cast<std::size_t>(w)];
    out.model.push_back(s.model[i]);
  }
  if (!merged) return s;
  for (std::size_t i = 0; i < out.transfers.size(); ++i) {
    // Only what this pass merged is modelled anew: a bundle that came with its parts (a forward,
    // a group broadcast) keeps its own model, which a chain's would misdescribe.
    if (!grown[i]) continue;
    const transfer& t = out.transfers[i];
    transfer_model& m = out.model[i];  // one message, or one chain, of all the bucket's bytes
    if (t.kind == transfer_kind::point_to_point) {
      m.duration = net.transfer_time(t.sender, t.receivers[0], t.bytes);
      if (plans.empty()) m.eager = m.connection >= 0 && t.bytes <= net.eager_bytes();
      else m.eager = goes_eagerly(detail::plan_in(plans), t, m.connection, net);
    } else {
      std::vector<op> chain;
      broadcast{}.remote_ops(net, rs, t.task, t.region, t.bytes, t.sender, t.receivers, chain);
      if (chain.size() != 1 || chain[0].receivers != t.receivers) return s;  // not a chain the model knows: leave it
      const double start = m.start, end = m.end;
      m = static_cast<const transfer_model&>(chain[0]);
      m.start = start, m.end = end;
      out.transfers[i].piece_bytes = chain[0].piece_bytes;
    }
  }
  simulate(out, net, rs);
  if (out.makespan_s < out.lower_bound_s) {  // that bound charged a latency per message
    out.lower_bound_s = s.physical_bound_s;
    out.solver_bound_s = s.physical_bound_s;
    out.proven_optimal = false;
  }
  return out;
}

/// `s` bucketed where that shortens its predicted makespan, else `s`.
inline schedule with_buckets(schedule s, const network& net, std::size_t max_bytes,
                             std::span<const std::shared_ptr<const plan>> plans = {}) {
  if (max_bytes == 0 || !detail::bucketable(s, max_bytes)) return s;
  schedule b = bucketed(s, net, max_bytes, plans);
  return b.makespan_s < s.makespan_s ? b : s;
}

}  // namespace meshcast

// A scheduling instance: the plan's tasks turned, by a strategy, into units of work with one
// option per possible sender. Solvers choose an option per unit and an order for all the ops.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "../core/detail/deadline.hpp"
#include "bundle.hpp"
#include "bundle_messages.hpp"
#include "option_check.hpp"
#include "instance_budget.hpp"
#include "../model/connections.hpp"
#include "../model/execution.hpp"
#include "../model/network.hpp"
#include "../plan/plan.hpp"
#include "../layout/slice.hpp"
#include "strategy.hpp"

namespace meshcast {

/// The ops that deliver a unit when `sender` sends it (-1: no choice to make, e.g. local copies).
struct option {
  index_t sender = -1;
  std::vector<op> ops;
};

/// A task, or a slice of one under replica splitting, with its alternatives.
struct unit {
  index_t task = 0;
  std::int32_t tensor = 0;  ///< the plan (tensor of a batch) the task belongs to
  box region;
  index_t bytes = 0;
  std::vector<option> options;
  bool has_choice() const noexcept { return options.size() > 1; }
};

/// Owns (shares) the plans and network it was made from, so it can never outlive them. A batch
/// of tensors is one instance: their units share the network, so a solver balances the NICs
/// across all of them.
struct instance {
  std::shared_ptr<const plan> source;  ///< the first plan (the only one for a single tensor)
  std::vector<std::shared_ptr<const plan>> plans;  ///< every tensor's plan; units name theirs
  const plan& plan_of(const unit& u) const noexcept { return *plans[static_cast<std::size_t>(u.tensor)]; }
  std::shared_ptr<const network> net;
  resource_space resources;
  std::string strategy;
  bool point_to_point = true;
  bool split_replicas = false;
  execution mode = execution::ordered;  ///< the mode its schedules are made for
  std::vector<unit> units;
  /// Ordered mode over a transport with eager messages: the connections' slots.
  connection_map connections;
};

struct instance_options {
  /// Cut the part of a task that must cross the network into one slice per sender NIC port (at
  /// most `max_slices`), each slice with its own choice of sender.
  bool split_replicas = false;
  /// The execution mode the schedule will run in: solvers optimise its model.
  execution mode = execution::ordered;
  /// solve_batch: a batch's tasks between the same devices travel in bundles, and its remaining
  /// messages between two devices in buckets, of at most this many bytes (bundle.hpp, bucket.hpp):
  /// `auto_bucket_bytes` sizes them to the network and the batch, 0 turns both off.
  std::size_t bucket_bytes = auto_bucket_bytes;
  static constexpr std::size_t auto_bucket_bytes = static_cast<std::size_t>(-1);
  /// The staging cap the schedule will run under (0: none): `auto_bucket_bytes` stays within half.
  std::size_t max_staging_bytes = 0;
  /// Under a strategy that moves bundles: a batch's tasks that share their senders and receivers
  /// go in bundles of at most this many bytes, one unit each (bundle.hpp); 0: one unit per task.
  std::size_t bundle_bytes = 0;
  /// The bundles of these plans, made beforehand for `bundle_bytes` and `split_replicas`
  /// (solve_batch shares them among its instances); none: make_instance makes them.
  std::shared_ptr<const std::vector<bundle>> bundles{};
  /// Building throws `time_limit_reached` once this passes (none: no limit); the caller keeps it.
  const detail::deadline* stop = nullptr;
};

/// Most slices a task is cut into under replica splitting.
inline constexpr index_t max_slices = 8;
/// Most sender options a unit offers; with more replicas than this, a unit offers one device on
/// each of `max_options` sender ports spread over all of them (keeps instances linear in size).
inline constexpr std::size_t max_options = 8;

/// Distinct NIC ports of a task's senders, in order of first appearance.
inline std::vector<int> sender_ports(const network& net, std::span<const index_t> senders) {
  std::vector<int> ports;
  for (index_t s : senders)
    if (std::find(ports.begin(), ports.end(), net.port_of(s)) == ports.end()) ports.push_back(net.port_of(s));
  return ports;
}

/// The devices offered as senders of the unit at `position` (task t's slice k of n slices is
/// position t * n + k): every replica when there are few; otherwise one device on each of
/// `max_options` ports at an even stride from port `position` (mod the port count), so that
/// consecutive units, and the slices of one task, start on consecutive ports and the units
/// together cover every port evenly.
inline std::vector<index_t> sender_choices(const network& net, std::span<const index_t> senders, index_t position) {
  if (senders.size() <= max_options) return {senders.begin(), senders.end()};
  std::vector<int> ports = sender_ports(net, senders);
  const std::size_t n = ports.size(), take = std::min(n, max_options), stride = n / take;
  std::vector<index_t> picked;
  for (std::size_t i = 0; i < take; ++i) {
    int port = ports[(static_cast<std::size_t>(position) + i * stride) % n];
    std::vector<index_t> behind;
    for (index_t s : senders)
      if (net.port_of(s) == port) behind.push_back(s);
    picked.push_back(behind[static_cast<std::size_t>(position / static_cast<index_t>(n)) % behind.size()]);
  }
  return picked;
}

namespace detail {
// A strategy as building an instance sees it: its name, flags and ops behind function pointers.
// The builder below is then compiled once, not once per strategy (auto_strategy alone asks for
// four: itself and the three it chooses among); a strategy's own ops stay templates.
struct strategy_view {
  const void* self = nullptr;
  std::string_view name;
  bool point_to_point = true;
  std::size_t alternatives = 1;  ///< ops offered per sender (strategy_with_alternatives), else 1
  /// Checks an option it made (option_check.hpp); null for a trusted strategy (options_trusted).
  void (*check)(const option_context&, std::span<const std::shared_ptr<const plan>>, index_t, const std::vector<op>&) = nullptr;
  void (*remote)(const void* self, std::size_t alternative, const network& net, const resource_space& rs, index_t task,
                 const box& region, index_t bytes, index_t sender, std::span<const index_t> remote,
                 std::vector<op>& out) = nullptr;
  /// Null where the strategy moves no bundles (moves_bundles below).
  void (*remote_bundle)(const void* self, std::size_t alternative, const network& net, const resource_space& rs,
                        const payload& what, index_t sender, std::span<const index_t> remote,
                        std::vector<op>& out) = nullptr;
};

// Whether S moves bundles, each of its alternatives too if it offers several.
template <class S>
constexpr bool moves_bundles() {
  if constexpr (!bundling_strategy<S>) return false;
  else if constexpr (strategy_with_alternatives<S>)
    return requires(const S& s, const network& net, const resource_space& rs, const payload& what, index_t sender,
                    std::span<const index_t> remote, std::vector<op>& out) {
      s.remote_bundle_ops_of(std::size_t{0}, net, rs, what, sender, remote, out);
    };
  else return true;
}

template <strategy S>
strategy_view view_of(const S& st) {
  strategy_view v{&st, S::name, static_cast<bool>(S::point_to_point)};
  if constexpr (!options_trusted<S>) v.check = &check_option;
  if constexpr (strategy_with_alternatives<S>) v.alternatives = S::alternatives();
  v.remote = [](const void* self, std::size_t a, const network& net, const resource_space& rs, index_t task,
                const box& region, index_t bytes, index_t sender, std::span<const index_t> remote, std::vector<op>& out) {
    const S& s = *static_cast<const S*>(self);
    if constexpr (strategy_with_alternatives<S>) s.remote_ops_of(a, net, rs, task, region, bytes, sender, remote, out);
    else s.remote_ops(net, rs, task, region, bytes, sender, remote, out);
  };
  if constexpr (moves_bundles<S>())
    v.remote_bundle = [](const void* self, std::size_t a, const network& net, const resource_space& rs,
                         const payload& what, index_t sender, std::span<const index_t> remote, std::vector<op>& out) {
      const S& s = *static_cast<const S*>(self);
      if constexpr (strategy_with_alternatives<S>) s.remote_bundle_ops_of(a, net, rs, what, sender, remote, out);
      else s.remote_bundle_ops(net, rs, what, sender, remote, out);
    };
  return v;
}

// The options of a unit: for each sender offered, the ops `make(alternative, sender, out)` appends
// (every distinct alternative under a strategy that offers several), each kept one counted in
// `words`; a strategy that refuses to build an option as too large is named with this unit.
template <class Make>
void add_options(unit& u, std::size_t alternatives, std::span<const index_t> choices, instance_words& words,
                 Make&& make) {
  for (index_t s : choices) {
    const std::size_t first = u.options.size();
    for (std::size_t a = 0; a < alternatives; ++a) {
      option o{s, {}};
      try {
        make(a, s, o.ops);
      } catch (const instance_too_large&) {
        words.refuse(u.tensor, u.task);
      }
      bool repeated = false;
      for (std::size_t k = first; k < u.options.size() && !repeated; ++k) repeated = same_ops(u.options[k].ops, o.ops);
      if (repeated) continue;
      words.add(o.ops, u.tensor, u.task);
      u.options.push_back(std::move(o));
    }
  }
}

// Appends a unit, stamping every op with where it comes from (see op::unit) and, unless its ops
// name their tensors already (bundles), with the unit's tensor.
inline void add_unit(instance& in, unit&& u, bool stamp_tensor = true) {
  const auto id = static_cast<index_t>(in.units.size());
  for (std::size_t k = 0; k < u.options.size(); ++k)
    for (std::size_t j = 0; j < u.options[k].ops.size(); ++j) {
      op& o = u.options[k].ops[j];
      if (stamp_tensor) o.tensor = u.tensor;
      o.unit = id;
      o.option = static_cast<int>(k);
      o.part = static_cast<int>(j);
    }
  in.units.push_back(std::move(u));
}

// Ordered mode over a transport with eager messages: every op takes its connection's slot, and a
// bundle goes eagerly as its messages do (bundle_messages.hpp).
inline void apply_connections(instance& in) {
  if (in.mode != execution::ordered || in.net->eager_bytes() == 0) return;
  const auto plan_of = detail::plan_in(in.plans);
  piece_fit_memo memo;  // a unit's options share their parts: their devices are asked once
  for (unit& u : in.units)
    for (option& o : u.options)
      for (op& x : o.ops) {
        in.connections.apply(x, *in.net);
        if (!x.parts.empty()) x.eager = goes_eagerly(plan_of, x, x.connection, *in.net, &memo);
      }
}

// The units of a batch's bundles (bundle.hpp): a bundle of local receivers is one fixed unit, a
// bundle across the network one unit with an option per sender offered, each op carrying every
// piece of the bundle.
inline void add_bundles(instance& in, const strategy_view& st, const std::vector<bundle>& bundles, instance_words& words) {
  const network& net = *in.net;
  for (std::size_t b = 0; b < bundles.size(); ++b) {
    const bundle& x = bundles[b];
    const transfer_part& lead = x.pieces.front();
    payload what{x.pieces, x.bytes};
    what.rest.assign(x.pieces.begin() + 1, x.pieces.end());
    unit u{lead.task, lead.tensor, lead.region, x.bytes, {}};
    if (x.local) {
      u.options.push_back(option{});
      deliver_locally(net, in.resources, what, x.senders, x.receivers, u.options[0].ops);
      words.add(u.options[0].ops, u.tensor, u.task);
      add_unit(in, std::move(u), false);
      continue;
    }
    const std::vector<index_t> remote = remote_receivers(net, x.senders, x.receivers);
    const option_context checks{st.name, x.pieces, x.senders, remote, true, &what.rest};
    add_options(u, st.alternatives, sender_choices(net, x.senders, static_cast<index_t>(b)), words,
                [&](std::size_t a, index_t s, std::vector<op>& ops) {
                  st.remote_bundle(st.self, a, net, in.resources, what, s, remote, ops);
                  if (st.check) st.check(checks, in.plans, s, ops);
                });
    add_unit(in, std::move(u), false);
  }
}

// make_instance's body, for any strategy.
inline instance build_instance(std::vector<std::shared_ptr<const plan>> plans, std::shared_ptr<const network> net_ptr,
                               const strategy_view& st, instance_options options) {
  const bool split_replicas = options.split_replicas;
  if (plans.empty() || !net_ptr) throw error("make_instance needs at least one plan and a network");
  if (plans.size() > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max())) throw error("too many tensors in one batch");
  const network& net = *net_ptr;
  instance in;
  for (const auto& p : plans) {
    if (!p) throw error("make_instance needs a plan for every tensor");
    net.check_describes(p->device_count);
  }
  in.source = plans.front();
  in.plans = std::move(plans);
  in.net = std::move(net_ptr);
  in.resources = {net.port_count(), net.device_count()};
  in.strategy = std::string(st.name);
  in.point_to_point = st.point_to_point;
  in.split_replicas = split_replicas;
  in.mode = checked_execution(options.mode, "instance_options::mode");
  instance_words words(st.name);
  if (st.remote_bundle && options.bundle_bytes > 0) {
    if (options.bundles) add_bundles(in, st, *options.bundles, words);
    else add_bundles(in, st, make_bundles(in.plans, net, options.bundle_bytes, split_replicas, max_slices), words);
    apply_connections(in);
    return in;
  }
  for (std::size_t tensor = 0; tensor < in.plans.size(); ++tensor) {
    const plan& p = *in.plans[tensor];
    for (std::size_t i = 0; i < p.tasks.size(); ++i) {
      if (options.stop && options.stop->expired())
        throw time_limit_reached("the time limit passed while building the scheduling instance");
      const send_task& t = p.tasks[i];
      const auto task = static_cast<index_t>(i);
      auto senders = p.senders(t);
      unit fixed{task, static_cast<std::int32_t>(tensor), t.region, t.bytes, {option{}}};
      std::vector<index_t> remote =
          deliver_locally(net, in.resources, task, t.region, t.bytes, senders, p.receivers(t), fixed.options[0].ops);
      words.add(fixed.options[0].ops, fixed.tensor, task);
      if (!fixed.options[0].ops.empty()) add_unit(in, std::move(fixed));
      if (remote.empty()) continue;
      // Replicas behind one NIC port cannot share its load, so a task is cut once per sender port.
      const auto ports = static_cast<index_t>(sender_ports(net, senders).size());
      auto slices = split_replicas ? slice_region(t.region, std::min<index_t>(ports, max_slices)) : std::vector<box>{t.region};
      for (std::size_t k = 0; k < slices.size(); ++k) {
        const box& slice = slices[k];
        std::vector<index_t> choices =
            sender_choices(net, senders, task * static_cast<index_t>(slices.size()) + static_cast<index_t>(k));
        unit u{task, static_cast<std::int32_t>(tensor), slice, slice.volume() * p.element_bytes, {}};
        const transfer_part piece{u.tensor, task, slice, u.bytes};
        const option_context checks{st.name, std::span(&piece, 1), senders, remote, false};
        add_options(u, st.alternatives, choices, words, [&](std::size_t a, index_t s, std::vector<op>& ops) {
          st.remote(st.self, a, net, in.resources, task, slice, u.bytes, s, remote, ops);
          if (st.check) st.check(checks, in.plans, s, ops);
        });
        add_unit(in, std::move(u));
      }
    }
  }
  apply_connections(in);
  return in;
}
}  // namespace detail

/// Builds the instance of a batch of plans (one per tensor, all on the devices of `net`) under
/// strategy `st` (see instance_options).
template <strategy S>
instance make_instance(std::vector<std::shared_ptr<const plan>> plans, std::shared_ptr<const network> net_ptr, const S& st,
                       instance_options options = {}) {
  return detail::build_instance(std::move(plans), std::move(net_ptr), detail::view_of(st), std::move(options));
}

/// The instance of one plan.
template <strategy S>
instance make_instance(std::shared_ptr<const plan> plan_ptr, std::shared_ptr<const network> net_ptr, const S& st,
                       instance_options options = {}) {
  return make_instance(std::vector<std::shared_ptr<const plan>>{std::move(plan_ptr)}, std::move(net_ptr), st, options);
}

/// The same, sharing copies of `p` and `net` (the instance then depends on nothing the caller keeps).
template <strategy S>
instance make_instance(const plan& p, const network& net, const S& st, instance_options options = {}) {
  return make_instance(std::make_shared<const plan>(p), std::make_shared<const network>(net), st, options);
}
/// The instance of a batch, sharing copies of the plans and the network.
template <strategy S>
instance make_instance(const std::vector<plan>& plans, const network& net, const S& st, instance_options options = {}) {
  std::vector<std::shared_ptr<const plan>> shared;
  for (const plan& p : plans) shared.push_back(std::make_shared<const plan>(p));
  return make_instance(std::move(shared), std::make_shared<const network>(net), st, options);
}
/// Shorthand: only replica splitting given (ordered execution).
template <strategy S>
instance make_instance(const plan& p, const network& net, const S& st, bool split_replicas) {
  return make_instance(p, net, st, instance_options{.split_replicas = split_replicas});
}

}  // namespace meshcast

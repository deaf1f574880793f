// Solving a batch of plans under a strategy in one call, and what each strategy serves. Under
// `auto_strategy` the solver runs on the instance whose units offer every strategy's ops and on
// each single strategy's instance, sharing the time limit, and the shortest schedule is kept: so
// `auto` is never predicted slower than the best single strategy that solver reaches. With
// replica splitting it runs on each of these unsplit too, since slices pay a message's latency
// each and can lose to whole tasks (small tensors, few receivers): so splitting, where `auto`
// may use it, is never predicted slower than not splitting. An instance that cannot move its
// bytes in less than the best schedule found (its latency-free lower bound) is not solved: it
// could not be kept. An instance too large to build (instance_budget.hpp) is left out too.
#pragma once

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "bucket.hpp"
#include "instance.hpp"
#include "solve.hpp"
#include "strategy/auto.hpp"
#include "strategy/broadcast.hpp"
#include "strategy/send_recv.hpp"
#include "strategy/send_recv_allgather.hpp"

namespace meshcast {

/// The schedule of `plans` (one per tensor, on the devices of `net`) under strategy `st`.
/// Several tensors' tasks between the same devices go in bundles, one unit of the instance each
/// (`io.bucket_bytes`, bundle.hpp), and the remaining messages between two devices in buckets
/// where that shortens the prediction (bucket.hpp).
template <solver Solver, strategy Strategy>
schedule solve_batch(std::vector<std::shared_ptr<const plan>> plans, std::shared_ptr<const network> net, const Strategy& st,
                     const Solver& sv, instance_options io = {}, solver_options so = {}) {
  if (!net) throw error("solve_batch needs a network");
  for (const auto& p : plans) {  // before bundles and bounds read the network by the plans' devices
    if (!p) throw error("solve_batch needs a plan for every tensor");
    net->check_describes(p->device_count);
  }
  std::size_t bucket = io.bucket_bytes;
  if (plans.size() < 2) bucket = 0;
  else if (bucket == instance_options::auto_bucket_bytes) {
    std::vector<const plan*> raw;
    for (const auto& p : plans) raw.push_back(p.get());
    const double busiest_s = physical_bound(raw, *net) - net->latency_s();
    bucket = bucket_bytes(*net, io.max_staging_bytes, busiest_s);
  }
  io.bundle_bytes = bucket;
  if constexpr (!std::is_same_v<Strategy, auto_strategy>) {
    schedule s = solve(make_instance(plans, net, st, io), sv, so);
    return with_buckets(std::move(s), *net, bucket, plans);
  } else {
    const bool split = io.split_replicas;
    so.time_limit_s = detail::checked_seconds(so.time_limit_s, "the solver time limit") / (split ? 8 : 4);
    if (bucket > 0) io.bundles = std::make_shared<const std::vector<bundle>>(make_bundles(plans, *net, bucket, split, max_slices));
    std::optional<schedule> best;
    double bound_s = 0;  // the least lower bound of the instances solved: certified for all of them
    std::vector<std::string> why;  // each instance left out, and why (distinct reasons only)
    auto left_out = [&](std::string reason) {
      if (std::find(why.begin(), why.end(), reason) == why.end()) why.push_back(std::move(reason));
    };
    // One body for the four strategies (a view each, instance.hpp), not one per strategy's type.
    auto consider = [&](const detail::strategy_view& strategy, const instance_options& options) {
      std::optional<instance> made;
      try {
        made.emplace(detail::build_instance(plans, net, strategy, options));
      } catch (const instance_too_large& e) {  // another strategy may still fit
        left_out(e.what());
        return;
      }
      instance& in = *made;
      if (const char* no = sv.supports(in)) {
        left_out("solver '" + std::string(Solver::name) + "' does not apply to strategy '" + in.strategy + "': " + no);
        return;
      }
      // An instance whose every schedule moves bytes for longer than the best found cannot win.
      if (best && lower_bound(in, /*latencies=*/false).value() >= best->makespan_s) return;
      schedule s = with_buckets(solve(in, sv, so), *net, bucket, plans);
      bound_s = best ? std::min(bound_s, s.lower_bound_s) : s.lower_bound_s;
      if (!best || s.makespan_s < best->makespan_s) best = std::move(s);
    };
    const send_recv one_message;
    const send_recv_allgather forwarded;
    const broadcast broadcast_chain;
    const detail::strategy_view each[] = {detail::view_of(st), detail::view_of(one_message), detail::view_of(forwarded),
                                          detail::view_of(broadcast_chain)};
    auto consider_each = [&](const instance_options& options) {
      for (const detail::strategy_view& strategy : each) consider(strategy, options);
    };
    consider_each(io);
    if (split) {  // the same without replica splitting
      instance_options whole = io;
      whole.split_replicas = false;
      if (bucket > 0) whole.bundles = std::make_shared<const std::vector<bundle>>(make_bundles(plans, *net, bucket, false, max_slices));
      consider_each(whole);
    }
    if (!best) {
      std::string reasons;
      for (const std::string& r : why) reasons += (reasons.empty() ? "" : "; ") + r;
      throw error("auto: no strategy's instance could be solved: " + reasons);
    }
    best->strategy = std::string(auto_strategy::name);
    best->lower_bound_s = std::min(best->lower_bound_s, bound_s);
    return *best;
  }
}

/// The same, sharing copies of the plans and the network.
template <solver Solver, strategy Strategy>
schedule solve_batch(std::span<const plan> plans, const network& net, const Strategy& st, const Solver& sv,
                     instance_options io = {}, solver_options so = {}) {
  std::vector<std::shared_ptr<const plan>> shared;
  shared.reserve(plans.size());
  for (const plan& p : plans) shared.push_back(std::make_shared<const plan>(p));
  return solve_batch(std::move(shared), std::make_shared<const network>(net), st, sv, io, so);
}

/// How many tasks of the plans each strategy serves in `s`. Under a single strategy, all of them;
/// under `auto`, a task is counted by what its transfers are: a chain or group broadcast is
/// `broadcast`, forwards on a receiving host are `send_recv_allgather`, anything else (one
/// message per receiver, or copies that never leave the host) `send_recv`; a bucket's pieces count
/// as its kind.
inline std::map<std::string, index_t> tasks_by_strategy(const schedule& s, const std::vector<plan>& plans) {
  // Tasks cut to a staging cap count as the task they were cut from (send_task::origin).
  auto uncut = [](const plan& p) {
    return p.tasks.empty() || p.tasks.back().origin < 0 ? p.tasks.size() : static_cast<std::size_t>(p.tasks.back().origin) + 1;
  };
  std::vector<std::size_t> first(plans.size() + 1, 0);
  for (std::size_t k = 0; k < plans.size(); ++k) first[k + 1] = first[k] + uncut(plans[k]);
  if (s.strategy != auto_strategy::name) return {{s.strategy, static_cast<index_t>(first.back())}};
  std::vector<std::uint8_t> kind(first.back(), 0);  // 0 send_recv, 1 send_recv_allgather, 2 broadcast
  auto mark = [&](std::int32_t tensor, index_t task_index, std::uint8_t k) {
    const send_task& task = plans[static_cast<std::size_t>(tensor)].tasks[static_cast<std::size_t>(task_index)];
    const std::size_t at = first[static_cast<std::size_t>(tensor)] + static_cast<std::size_t>(task.origin >= 0 ? task.origin : task_index);
    kind[at] = std::max(kind[at], k);
  };
  for (const transfer& t : s.transfers) {
    const std::uint8_t k = t.kind == transfer_kind::chain || t.kind == transfer_kind::group_broadcast ? 2
                           : t.kind == transfer_kind::forward                                         ? 1
                                                                                                     : 0;
    mark(t.tensor, t.task, k);
    for (const transfer_part& q : t.parts) mark(q.tensor, q.task, k);  // a bucket's pieces go its way
  }
  std::map<std::string, index_t> out{{std::string(send_recv::name), 0}, {std::string(send_recv_allgather::name), 0},
                                     {std::string(broadcast::name), 0}};
  for (std::uint8_t k : kind) ++out[std::string(auto_strategy::choices[k])];
  return out;
}

}  // namespace meshcast

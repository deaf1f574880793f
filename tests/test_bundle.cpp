// Bundles (bundle.hpp): a batch's tasks between the same devices scheduled as one unit each. Over
// random batches, every strategy, with and without replica splitting, in both modes: the bundles
// hold every task's piece once and stay within their size; the solved schedule delivers every
// destination element of every tensor exactly once, each sender holding what it sends when it
// starts; the executor's checks accept it; and the units are far fewer than the tasks. A user's
// strategy that moves no bundles builds its units task by task, its alternatives once each.
#include <doctest/doctest.h>

#include <meshcast/meshcast.hpp>

#include <map>
#include <random>
#include <tuple>
#include <vector>

#include "support/oracle.hpp"

using namespace meshcast;
using meshcast::testing::for_each_element;
using meshcast::testing::linear;

namespace {
struct test_batch {
  std::vector<plan> plans;
  network net;
};

// A random batch: `tensors` 2-D tensors from a 2x2 mesh on devices 0-3 to a random mesh on 4-7
// (or, one time in three, on the same devices), 8 devices on 4 hosts of 2.
test_batch random_batch(std::mt19937_64& rng, int tensors) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const char* src_specs[] = {"S0,S1", "S1,R", "R,S0", "S01,R", "R,R", "S0,R"};
  const char* dst_specs[] = {"S0,R", "R,S0", "R,R", "S0,S1", "S1,S0", "R,S1"};
  const bool same = pick(0, 2) == 0;
  test_batch b{{}, network::uniform(default_hosts(8, 4, 2), network::gbit_per_s(100), network::gbit_per_s(800), 20e-6, 1)};
  for (int k = 0; k < tensors; ++k) {
    const dynamic_shape shape{pick(1, 12), pick(1, 9)};
    const dynamic_layout src(dynamic_mesh{2, 2}, dynamic_spec(src_specs[pick(0, 5)]), shape);
    const dynamic_layout dst(dynamic_mesh{2, 2}, dynamic_spec(dst_specs[pick(0, 5)]), shape);
    b.plans.push_back(make_plan(src, dst,
                                {.element_bytes = pick(0, 1) ? 4 : 2, .devices = same ? device_map::same() : device_map{},
                                 .device_count = 8}));
  }
  return b;
}

// "" when `s` delivers every destination element of every tensor exactly once, from a sender
// that holds it when it starts (its source tile, or an arrival that ended before), else why not.
std::string check_deliveries(const std::vector<plan>& plans, const schedule& s) {
  std::map<std::tuple<std::size_t, index_t, index_t>, std::pair<int, double>> got;  // (tensor, device, element) -> (count, arrival)
  auto pieces = [](const transfer& t) {
    std::vector<transfer_part> all{{t.tensor, t.task, t.region, 0}};
    all.insert(all.end(), t.parts.begin(), t.parts.end());
    return all;
  };
  for (std::size_t i = 0; i < s.transfers.size(); ++i) {
    const transfer& t = s.transfers[i];
    index_t bytes = 0;
    for (const transfer_part& q : pieces(t)) {
      const plan& p = plans[static_cast<std::size_t>(q.tensor)];
      bytes += q.region.volume() * p.element_bytes;
      const box held = p.source_tile(t.sender);
      std::string problem;
      for_each_element(q.region, [&](const std::vector<index_t>& e) {
        const index_t x = linear(p.src.shape, e);
        box point{q.region.rank, {}};
        for (int d = 0; d < q.region.rank; ++d) point[d] = {e[static_cast<std::size_t>(d)], e[static_cast<std::size_t>(d)] + 1};
        const bool holds = held.contains(point) && !held.empty();
        auto it = got.find({static_cast<std::size_t>(q.tensor), t.sender, x});
        if (!holds && (it == got.end() || it->second.second > s.model[i].start + 1e-12)) problem = "a sender sends what it does not hold";
        for (index_t r : t.receivers) {
          auto& [count, arrival] = got[{static_cast<std::size_t>(q.tensor), r, x}];
          ++count;
          arrival = count == 1 ? s.model[i].end : std::min(arrival, s.model[i].end);
        }
      });
      if (!problem.empty()) return problem + " (transfer " + std::to_string(i) + ")";
    }
    if (bytes != t.bytes) return "transfer " + std::to_string(i) + " counts other bytes than its pieces";
  }
  for (std::size_t k = 0; k < plans.size(); ++k) {
    const plan& p = plans[k];
    for (index_t d : p.dst_devices) {
      const box tile = p.destination_tile(d);
      std::string problem;
      for_each_element(tile, [&](const std::vector<index_t>& e) {
        auto it = got.find({k, d, linear(p.src.shape, e)});
        if (it == got.end() || it->second.first != 1) problem = "an element is delivered " + std::to_string(it == got.end() ? 0 : it->second.first) + " times";
      });
      if (!problem.empty()) return problem + " (tensor " + std::to_string(k) + ", device " + std::to_string(d) + ")";
    }
  }
  return "";
}
}  // namespace

TEST_CASE("make_bundles: every piece once, within the bundle's size, one set of senders and receivers") {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 40; ++round) {
    const test_batch b = random_batch(rng, 2 + round % 9);
    std::vector<std::shared_ptr<const plan>> shared;
    for (const plan& p : b.plans) shared.push_back(std::make_shared<const plan>(p));
    for (std::size_t max_bytes : {std::size_t{1}, std::size_t{64}, std::size_t{1} << 20})
      for (bool split : {false, true}) {
        CAPTURE(round);
        CAPTURE(max_bytes);
        CAPTURE(split);
        const std::vector<bundle> bundles = make_bundles(shared, b.net, max_bytes, split, max_slices);
        std::map<std::tuple<int, index_t, bool>, index_t> covered;  // (tensor, task, local) -> elements
        for (const bundle& x : bundles) {
          index_t bytes = 0;
          for (const transfer_part& q : x.pieces) {
            const plan& p = b.plans[static_cast<std::size_t>(q.tensor)];
            const send_task& t = p.tasks[static_cast<std::size_t>(q.task)];
            CHECK(t.region.contains(q.region));
            CHECK(q.bytes == q.region.volume() * p.element_bytes);
            CHECK(std::ranges::equal(p.senders(t), x.senders));
            CHECK(std::ranges::equal(p.receivers(t), x.receivers));
            covered[{q.tensor, q.task, x.local}] += q.region.volume();
            bytes += q.bytes;
          }
          CHECK(bytes == x.bytes);
          if (x.pieces.size() > 1) CHECK(static_cast<std::size_t>(x.bytes) <= max_bytes);
        }
        for (std::size_t k = 0; k < b.plans.size(); ++k)
          for (std::size_t i = 0; i < b.plans[k].tasks.size(); ++i) {
            const plan& p = b.plans[k];
            const auto [local, remote] = detail::local_and_remote(b.net, p.senders(i), p.receivers(i));
            const auto key = [&](bool l) { return std::tuple{static_cast<int>(k), static_cast<index_t>(i), l}; };
            CHECK(covered[key(true)] == (local ? p.tasks[i].region.volume() : 0));
            CHECK(covered[key(false)] == (remote ? p.tasks[i].region.volume() : 0));
          }
      }
  }
}

TEST_CASE("bundled instances: every element once under every strategy and mode, far fewer units than tasks") {
  std::mt19937_64 rng(11);
  auto each_strategy = [](auto&& f) {
    f(send_recv{});
    f(send_recv_allgather{});
    f(broadcast{});
    f(auto_strategy{});
  };
  for (int round = 0; round < 24; ++round) {
    const test_batch b = random_batch(rng, 3 + round % 10);
    for (execution mode : {execution::ordered, execution::concurrent})
      for (bool split : {false, true})
        each_strategy([&](auto st) {
          CAPTURE(round);
          CAPTURE(split);
          CAPTURE(std::string(decltype(st)::name));
          const instance_options io{.split_replicas = split, .mode = mode, .bucket_bytes = std::size_t{1} << 20};
          const schedule s = solve_batch(b.plans, b.net, st, greedy{}, io, {.time_limit_s = 1});
          CHECK(check_deliveries(b.plans, s) == "");
          CHECK_NOTHROW(check_schedule_fits(b.plans, s));
          CHECK(s.makespan_s >= s.physical_bound_s * (1 - 1e-12));
        });
  }
  // Many tensors between the same devices: one unit per bundle, not per task.
  std::vector<plan> plans;
  for (int k = 0; k < 64; ++k)
    plans.push_back(make_plan(dynamic_layout(dynamic_mesh{2, 2}, dynamic_spec("S0,S1"), dynamic_shape{16, 16}),
                              dynamic_layout(dynamic_mesh{2, 2}, dynamic_spec("S1,S0"), dynamic_shape{16, 16}),
                              {.element_bytes = 4, .device_count = 8}));
  const network net = network::uniform(default_hosts(8, 4, 2), network::gbit_per_s(400), network::gbit_per_s(800), 10e-6, 1);
  std::vector<std::shared_ptr<const plan>> shared;
  std::size_t tasks = 0;
  for (const plan& p : plans) shared.push_back(std::make_shared<const plan>(p)), tasks += p.tasks.size();
  const instance in = make_instance(shared, std::make_shared<const network>(net), broadcast{}, {.bundle_bytes = std::size_t{1} << 20});
  CHECK(in.units.size() * 32 <= tasks);
  const schedule per_task = solve_batch(plans, net, broadcast{}, greedy{}, {.bucket_bytes = 0});
  const schedule bundled = solve_batch(plans, net, broadcast{}, greedy{});
  CHECK(bundled.makespan_s < per_task.makespan_s);
  CHECK(check_deliveries(plans, bundled) == "");
}

namespace {
// A user's strategy that moves no bundles: send_recv's ops, task by task only.
struct tasks_only {
  static constexpr std::string_view name = "tasks_only";
  static constexpr bool point_to_point = true;
  void remote_ops(const network& net, const resource_space& rs, index_t task, const box& region, index_t bytes,
                  index_t sender, std::span<const index_t> remote, std::vector<op>& out) const {
    send_recv{}.remote_ops(net, rs, task, region, bytes, sender, remote, out);
  }
};
// One that offers two alternatives per sender (send_recv's ops, then send_recv_allgather's) and moves
// bundles as a plain strategy only: its alternatives have no bundle form, so it moves none.
struct two_ways {
  static constexpr std::string_view name = "two_ways";
  static constexpr bool point_to_point = false;
  static constexpr std::size_t alternatives() { return 2; }
  void remote_ops_of(std::size_t k, const network& net, const resource_space& rs, index_t task, const box& region,
                     index_t bytes, index_t sender, std::span<const index_t> remote, std::vector<op>& out) const {
    if (k == 0) send_recv{}.remote_ops(net, rs, task, region, bytes, sender, remote, out);
    else send_recv_allgather{}.remote_ops(net, rs, task, region, bytes, sender, remote, out);
  }
  void remote_ops(const network& net, const resource_space& rs, index_t task, const box& region, index_t bytes,
                  index_t sender, std::span<const index_t> remote, std::vector<op>& out) const {
    remote_ops_of(0, net, rs, task, region, bytes, sender, remote, out);
  }
  void remote_bundle_ops(const network& net, const resource_space& rs, const payload& what, index_t sender,
                         std::span<const index_t> remote, std::vector<op>& out) const {
    send_recv{}.remote_bundle_ops(net, rs, what, sender, remote, out);
  }
};

bool same_units(const instance& a, const instance& b) {
  if (a.units.size() != b.units.size()) return false;
  for (std::size_t u = 0; u < a.units.size(); ++u) {
    if (a.units[u].options.size() != b.units[u].options.size()) return false;
    for (std::size_t k = 0; k < a.units[u].options.size(); ++k)
      if (a.units[u].options[k].sender != b.units[u].options[k].sender ||
          !detail::same_ops(a.units[u].options[k].ops, b.units[u].options[k].ops))
        return false;
  }
  return true;
}
}  // namespace

TEST_CASE("a strategy that moves no bundles builds its units task by task, whatever the bundle size asks") {
  std::vector<plan> plans;
  for (int k = 0; k < 6; ++k)
    plans.push_back(make_plan(dynamic_layout(dynamic_mesh{2, 2}, dynamic_spec("S0,S1"), dynamic_shape{8, 8}),
                              dynamic_layout(dynamic_mesh{2, 2}, dynamic_spec(k % 2 ? "R,S0" : "S1,R"), dynamic_shape{8, 8}),
                              {.element_bytes = 4, .device_count = 8}));
  const network net = network::uniform(default_hosts(8, 4, 2), network::gbit_per_s(400), network::gbit_per_s(800), 10e-6, 1);
  std::vector<std::shared_ptr<const plan>> shared;
  for (const plan& p : plans) shared.push_back(std::make_shared<const plan>(p));
  const auto net_ptr = std::make_shared<const network>(net);

  static_assert(!detail::moves_bundles<tasks_only>() && !detail::moves_bundles<two_ways>());
  static_assert(detail::moves_bundles<auto_strategy>());
  const bool plain_moves_bundles = detail::view_of(tasks_only{}).remote_bundle != nullptr;
  const bool auto_moves_bundles = detail::view_of(auto_strategy{}).remote_bundle != nullptr;
  CHECK_FALSE(plain_moves_bundles);
  CHECK(auto_moves_bundles);
  CHECK(detail::view_of(two_ways{}).alternatives == 2);
  CHECK(detail::view_of(auto_strategy{}).alternatives == auto_strategy::alternatives());

  const instance plain = make_instance(shared, net_ptr, tasks_only{}, {.bundle_bytes = 0});
  const instance asked = make_instance(shared, net_ptr, tasks_only{}, {.bundle_bytes = std::size_t{1} << 20});
  CHECK(plain.strategy == "tasks_only");
  CHECK(same_units(plain, asked));

  const instance one = make_instance(shared, net_ptr, two_ways{}, {.bundle_bytes = 0});
  const instance two = make_instance(shared, net_ptr, two_ways{}, {.bundle_bytes = std::size_t{1} << 20});
  CHECK(same_units(one, two));
  CHECK_FALSE(one.point_to_point);
  // Each sender offers its alternatives once each, and only where they differ (they coincide where
  // a host has one receiver: no forward to make).
  bool some_unit_offers_both = false, some_unit_offers_one = false;
  for (const unit& u : one.units) {
    std::map<index_t, int> per_sender;
    for (const option& o : u.options) ++per_sender[o.sender];
    for (const auto& [sender, n] : per_sender) {
      CHECK(n <= 2);
      if (n == 1) some_unit_offers_one = true;
    }
    for (std::size_t a = 0; a < u.options.size(); ++a)
      for (std::size_t b = a + 1; b < u.options.size(); ++b)
        if (u.options[a].sender == u.options[b].sender) {
          CHECK_FALSE(detail::same_ops(u.options[a].ops, u.options[b].ops));
          some_unit_offers_both = true;
        }
  }
  CHECK(some_unit_offers_both);
  CHECK(some_unit_offers_one);

  // Solved as a batch (buckets sized automatically), both still deliver every element once.
  for (const schedule& s : {solve_batch(plans, net, tasks_only{}, greedy{}), solve_batch(plans, net, two_ways{}, greedy{})}) {
    CHECK(check_deliveries(plans, s) == "");
    CHECK_NOTHROW(check_schedule_fits(plans, s));
  }
}

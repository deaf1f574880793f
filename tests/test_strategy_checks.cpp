// A user's strategy that gets its ops wrong is an error naming the strategy when the instance is
// built, and a schedule whose forward passes on what its sender has not received is refused by
// every executor: such a forward once ran, sending its receive buffer before anything arrived, and
// its receivers ended with wrong data and no error (found by a user writing a relay strategy from
// docs/policies.md, which did not mention `after`).
#include <doctest/doctest.h>

#include <string>
#include <type_traits>

#include <meshcast/meshcast.hpp>

#include "support/schedule_checker.hpp"

namespace strategy_checks_test {
using namespace meshcast;

enum class mistake { none, forward_without_after, sends_unheld, misses_receiver, delivers_twice, strays, no_ops, wrong_task };

// Device 0 sends to the first remote receiver, which forwards to the others (a relay).
template <mistake M>
struct relay {
  static constexpr std::string_view name = "relay";
  static constexpr bool point_to_point = true;
  void remote_ops(const network& net, const resource_space& rs, index_t task, const box& region, index_t bytes,
                  index_t sender, std::span<const index_t> remote, std::vector<op>& out) const {
    if (M == mistake::no_ops) return;
    out.push_back(make_transfer(net, rs, M == mistake::wrong_task ? task + 7 : task, region, bytes, sender, remote[0]));
    for (std::size_t k = 1; k < remote.size(); ++k) {
      if (M == mistake::misses_receiver && k + 1 == remote.size()) break;
      op f = make_transfer(net, rs, task, region, bytes, remote[0], remote[k]);
      f.kind = M == mistake::sends_unheld ? transfer_kind::point_to_point : transfer_kind::forward;
      f.after = M == mistake::forward_without_after ? -1 : 0;
      out.push_back(f);
    }
    if (M == mistake::delivers_twice) out.push_back(make_transfer(net, rs, task, region, bytes, sender, remote[1]));
    if (M == mistake::strays) {
      op f = make_transfer(net, rs, task, region, bytes, remote[0], sender);
      f.kind = transfer_kind::forward;
      f.after = 0;
      out.push_back(f);
    }
  }
};

// One device on host 0 holds a 64-element tensor; three devices, each on its own host, need it all.
struct relay_case {
  plan p = make_plan(dynamic_layout(dynamic_mesh{1}, dynamic_spec("R"), dynamic_shape{64}),
                     dynamic_layout(dynamic_mesh{3}, dynamic_spec("R"), dynamic_shape{64}), {.element_bytes = 4});
  network net = network::uniform({0, 1, 2, 3}, 1e9, 1e10, 1e-5);
};

template <mistake M>
std::string refusal() {
  const relay_case c;
  try {
    (void)make_instance(c.p, c.net, relay<M>{});
  } catch (const error& e) {
    return e.what();
  }
  return "";
}

TEST_CASE("a strategy's option is checked when the instance is built, and its mistakes name it") {
  const relay_case c;
  const schedule s = solve(make_instance(c.p, c.net, relay<mistake::none>{}), greedy{});
  CHECK(testing::check_schedule(c.p, {0, 1, 2, 3}, s) == "");
  const std::string prefix = "strategy 'relay' made an invalid option for tensor 0's task 0 [0,64) from device 0: ";
  CHECK(refusal<mistake::forward_without_after>() ==
        prefix + "op 1 is a forward that waits (after) for no op: it would send before its sender has received");
  CHECK(refusal<mistake::sends_unheld>() == prefix + "op 1 sends [0,64) from device 1, which does not hold it");
  CHECK(refusal<mistake::misses_receiver>() ==
        "strategy 'relay' made an invalid option for tensor 0's task 0 from device 0: remote receiver 3 gets 0 of the 64 elements of [0,64)");
  CHECK(refusal<mistake::delivers_twice>() == prefix + "op 3 gives device 2 part of [0,64) that op 1 gives it too");
  CHECK(refusal<mistake::strays>() == prefix + "op 3 sends to device 0, which is no remote receiver of the unit");
  CHECK(refusal<mistake::no_ops>() ==
        "strategy 'relay' made an option with no op for tensor 0's task 0 from device 0, whose remote receivers need it");
  CHECK(refusal<mistake::wrong_task>() == prefix + "op 0 names task 7, not the unit's 0");
}

TEST_CASE("every executor refuses a forward that passes on what its sender has not received") {
  const relay_case c;
  const schedule good = solve(make_instance(c.p, c.net, relay<mistake::none>{}), greedy{});
  CHECK_NOTHROW(check_schedule_fits(c.p, good));
  int forwards = 0;
  for (std::size_t i = 0; i < good.transfers.size(); ++i) {
    if (good.transfers[i].kind != transfer_kind::forward) continue;
    ++forwards;
    schedule bad = good;  // waits for nothing
    bad.transfers[i].waits_for.clear();
    CHECK_THROWS_WITH_AS(check_schedule_fits(c.p, bad),
                         doctest::Contains("is a forward that waits for no transfer: it would send before its sender has received"),
                         error);
    bad = good;  // its sender is not whom the transfer it waits for went to
    bad.transfers[i].sender = 2;
    bad.transfers[i].receivers = {3};
    CHECK_THROWS_WITH_AS(check_schedule_fits(c.p, bad), doctest::Contains("whose receivers its sender is not one of"), error);
    bad = good;  // forwards more than it received
    transfer& from = bad.transfers[static_cast<std::size_t>(bad.transfers[i].waits_for.front())];
    from.region[0] = {0, 32};
    from.bytes = 32 * 4;
    CHECK_THROWS_WITH_AS(check_schedule_fits(c.p, bad),
                         doctest::Contains("forwards a region that the transfers it waits for do not bring its sender exactly once"),
                         error);
  }
  CHECK(forwards == 2);
}

// The built-in strategies are trusted (options_trusted): building an instance skips the checks
// for them, so here they are checked over layouts that exercise every kind of op they make:
// slices and forwards, chains, replicas split between senders, and bundles of a batch.
template <class S>
struct untrusted : S {  // the built-in strategy, its options checked as a user's are
  static constexpr bool options_trusted = false;
};

template <class S>
void check_builtin(const std::vector<plan>& plans, const network& net, bool split, std::size_t bundle_bytes) {
  CAPTURE(S::name);
  CAPTURE(split);
  CAPTURE(bundle_bytes);
  static_assert(!options_trusted<untrusted<S>> && strategy<untrusted<S>>);
  CHECK_NOTHROW((void)make_instance(plans, net, untrusted<S>{}, {.split_replicas = split, .bundle_bytes = bundle_bytes}));
}

TEST_CASE("every option the built-in strategies make passes the checks a user's strategy gets") {
  static_assert(options_trusted<send_recv> && options_trusted<auto_strategy> && !options_trusted<relay<mistake::none>>);
  auto layouts = [](const char* src_mesh, const char* src_spec, const char* dst_mesh, const char* dst_spec, dynamic_shape shape,
                    device_map devices) {
    return make_plan(dynamic_layout(parse_mesh(src_mesh), dynamic_spec(src_spec), shape),
                     dynamic_layout(parse_mesh(dst_mesh), dynamic_spec(dst_spec), shape), {.element_bytes = 4, .devices = devices});
  };
  struct setting {
    std::vector<plan> plans;
    index_t src_count, per_host;
  };
  std::vector<setting> settings;
  settings.push_back({{layouts("2", "R,R", "2x2", "R,S0", {8, 6}, device_map::disjoint())}, 2, 2});
  settings.push_back({{layouts("1", "R", "3", "R", {300}, device_map::disjoint())}, 1, 3});
  settings.push_back({{layouts("2x4", "S0,R", "3x4", "R,S01", {1024, 512}, device_map::disjoint())}, 8, 4});
  settings.push_back({{layouts("2x2", "S0,S1", "2x2", "S1,S0", {64, 30}, device_map::same())}, 4, 2});
  // A batch whose tensors share senders and receivers task by task: bundles, whole and sliced.
  settings.push_back({{layouts("4", "S0,R", "2x2", "R,S0", {16, 40}, device_map::disjoint()),
                       layouts("4", "S0,R", "2x2", "R,S0", {12, 8}, device_map::disjoint()),
                       layouts("4", "S0,R", "2x2", "R,S0", {6, 10}, device_map::disjoint())},
                      4, 2});
  settings.push_back({{layouts("2x2", "R,R", "4", "S0,R", {16, 40}, device_map::disjoint()),
                       layouts("2x2", "R,R", "4", "S0,R", {12, 8}, device_map::disjoint())},
                      4, 4});
  for (const setting& c : settings) {
    const index_t devices = c.plans.front().device_count;
    const network net = network::alpa_testbed(default_hosts(devices, c.src_count, c.per_host));
    for (bool split : {false, true})
      for (std::size_t bundle : {std::size_t{0}, std::size_t{1} << 20}) {
        check_builtin<send_recv>(c.plans, net, split, bundle);
        check_builtin<send_recv_allgather>(c.plans, net, split, bundle);
        check_builtin<broadcast>(c.plans, net, split, bundle);
        check_builtin<auto_strategy>(c.plans, net, split, bundle);
      }
  }
}

// A policy's name and flag are static members: an object's member passed the concepts, then broke
// their users with errors deep in the library.
struct name_of_an_object {
  std::string_view name = "object";
  static constexpr bool point_to_point = true;
  void remote_ops(const network&, const resource_space&, index_t, const box&, index_t, index_t, std::span<const index_t>,
                  std::vector<op>&) const {}
};
struct flag_of_an_object {
  static constexpr std::string_view name = "object";
  bool point_to_point = true;
  void remote_ops(const network&, const resource_space&, index_t, const box&, index_t, index_t, std::span<const index_t>,
                  std::vector<op>&) const {}
};
struct solver_named_by_an_object {
  std::string_view name = "object";
  const char* supports(const instance&) const { return nullptr; }
  solver_result solve(const instance&, const solver_options&) const { return {}; }
};
static_assert(strategy<relay<mistake::none>>);
static_assert(!strategy<name_of_an_object>, "a strategy's name must be a static member");
static_assert(!strategy<flag_of_an_object>, "a strategy's point_to_point must be a static member");
static_assert(!solver<solver_named_by_an_object>, "a solver's name must be a static member");

}  // namespace strategy_checks_test

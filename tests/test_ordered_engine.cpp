// The ordered engine (ordered_engine.hpp), and the schedules the solvers build with it pinned on
// fixed instances: exact makespans and exact orders, taken before the solvers' own replays were
// folded into the engine, so that the engine changes no schedule.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include <meshcast/meshcast.hpp>
#if MESHCAST_HAS_CBC
#include <meshcast/solver/ilp.hpp>
#endif

#include "support/schedule_checker.hpp"

using namespace meshcast;

namespace {

struct pinned_case {
  plan p;
  std::vector<index_t> hosts;
  network net;
};

// Whole-second transfers (1 byte/s, no latency) or Alpa's testbed.
pinned_case make_case(const char* src_mesh, const char* src_spec, const char* dst_mesh, const char* dst_spec,
                      const char* shape, index_t devices_per_host, bool testbed = false) {
  const dynamic_shape sh = parse_shape(shape);
  plan p = make_plan(dynamic_layout(parse_mesh(src_mesh), dynamic_spec(src_spec), sh),
                     dynamic_layout(parse_mesh(dst_mesh), dynamic_spec(dst_spec), sh));
  auto hosts = default_hosts(p.device_count, static_cast<index_t>(p.src_devices.size()), devices_per_host);
  network net = testbed ? network::alpa_testbed(hosts) : network::uniform(hosts, 1.0, 1e9, 0.0);
  return {std::move(p), hosts, std::move(net)};
}

// "unit.option.part" of every op, in order.
std::string order_of(const std::vector<op>& ops) {
  std::string s;
  for (const op& o : ops) {  // appended piece by piece: g++ 12 warned (-Wrestrict) on "" + std::string
    if (!s.empty()) s += ' ';
    s += std::to_string(o.unit) + "." + std::to_string(o.option) + "." + std::to_string(o.part);
  }
  return s;
}
template <class V>
std::string list_of(const V& v) {
  std::string s;
  for (auto x : v) {
    if (!s.empty()) s += ' ';
    s += std::to_string(x);
  }
  return s;
}

// greedy without its timed local search: what it builds depends on nothing but the instance.
greedy constructions_only() {
  greedy g;
  g.search_limit_s = 0;
  return g;
}

solver_options generous() {
  solver_options o;
  o.time_limit_s = 60;
  return o;
}

template <class Solver>
schedule checked_solve(const pinned_case& c, const instance& in, const Solver& s) {
  schedule out = solve(in, s, generous());
  CHECK(meshcast::testing::check_schedule(c.p, c.hosts, out) == "");
  return out;
}

}  // namespace

TEST_CASE("resource_space: every resource is exactly one of an egress, an ingress or a lane, and names its port or lane") {
  for (int ports = 0; ports <= 5; ++ports)
    for (meshcast::index_t devices = 0; devices <= 4; ++devices) {
      const meshcast::resource_space rs{ports, devices};
      CHECK(rs.port_directions() == 2 * ports);
      std::vector<int> seen(static_cast<std::size_t>(rs.size()), 0);
      for (int p = 0; p < ports; ++p) {
        CHECK(rs.is_egress(rs.egress(p)));
        CHECK(rs.is_ingress(rs.ingress(p)));
        CHECK(rs.port_of(rs.egress(p)) == p);
        CHECK(rs.port_of(rs.ingress(p)) == p);
        ++seen[static_cast<std::size_t>(rs.egress(p))], ++seen[static_cast<std::size_t>(rs.ingress(p))];
      }
      for (meshcast::index_t d = 0; d < devices; ++d) {
        CHECK(rs.lane_index(rs.send_lane(d)) == 2 * d);
        CHECK(rs.lane_index(rs.receive_lane(d)) == 2 * d + 1);
        ++seen[static_cast<std::size_t>(rs.send_lane(d))], ++seen[static_cast<std::size_t>(rs.receive_lane(d))];
      }
      for (int r = 0; r < rs.size(); ++r) {
        CHECK(seen[static_cast<std::size_t>(r)] == 1);  // the numbering is a bijection
        CHECK(int(rs.is_egress(r)) + int(rs.is_ingress(r)) + int(rs.is_lane(r)) == 1);
        CHECK(rs.is_port(r) == (rs.is_egress(r) || rs.is_ingress(r)));
      }
    }
}

TEST_CASE("transfer_model::occupy keeps resources and holders in step") {
  meshcast::transfer_model m;
  m.occupy(3, 7);
  m.occupy(0, 2);
  CHECK(m.resources == std::vector<int>{3, 0});
  CHECK(m.holders == std::vector<meshcast::index_t>{7, 2});
  CHECK_FALSE(m.holds_briefly());
}

TEST_CASE("resource_clock: an op starts when all its resources are free and holds them") {
  resource_clock clock(4);
  transfer_model a, b, c;
  a.resources = {0, 1};
  a.duration = 2;
  b.resources = {1, 2};
  b.duration = 3;
  c.resources = {3};
  c.duration = 1;
  CHECK(clock.place(a) == 2);
  CHECK(clock.earliest_start(b) == 2);
  CHECK(clock.place(b, 4.0) == 7);  // not before 4
  CHECK(b.start == 4);
  CHECK(b.end == 7);
  CHECK(clock.place(c) == 1);
  CHECK(clock.makespan() == 7);
  CHECK(clock.free_at(0) == 2);
  CHECK(clock.free_at(2) == 7);

  // A trial leaves the clock as it was.
  trial_clock trial(4);
  std::vector<transfer_model> more{a, c};
  CHECK(trial.finish(more, clock) == 9);  // a after b on resource 1, c after a's first placement
  CHECK(clock.free_at(1) == 7);

  // Undo takes placements back, the makespan with them (the searches' backtracking).
  resource_clock::undo_log log;
  clock.mark(log);
  CHECK(clock.place(std::as_const(a), log) == 9);
  CHECK(clock.place(std::as_const(c), log) == 2);
  CHECK(clock.makespan() == 9);
  clock.undo(log);
  CHECK(clock.free_at(0) == 2);
  CHECK(clock.free_at(1) == 7);
  CHECK(clock.free_at(3) == 1);
  CHECK(clock.makespan() == 7);

  // Occupied for other lengths than the op's own times (ilp's whole slots).
  resource_clock slots(2);
  transfer_model d;
  d.resources = {0};
  d.duration = 0.3;
  auto one = [](double) { return 1.0; };
  auto two = [](double) { return 2.0; };
  CHECK(slots.occupy_as(d, slots.earliest_start(d), one) == 1);
  CHECK(slots.earliest_start(d) == 1);
  CHECK(slots.occupy_as(d, 1, two) == 3);
  CHECK(slots.makespan() == 3);
}

TEST_CASE("resource_clock: an op holds each resource from start + held_from to start + held_until") {
  // A chain: its sender's send lane and NIC egress (the first two resources) are free once it has
  // sent; the members' resources here are held to the end.
  resource_clock clock(4);
  transfer_model chain;
  chain.resources = {0, 1, 2, 3};
  chain.duration = 10;
  chain.hold_from = {0, 0, 0, 0};
  chain.hold_until = {6, 6, 10, 10};
  CHECK(chain.held_for(0) == 6);
  CHECK(chain.held_for(1) == 6);
  CHECK(chain.held_for(2) == 10);
  CHECK(clock.place(chain) == 10);
  CHECK(chain.start == 0);
  CHECK(clock.free_at(0) == 6);
  CHECK(clock.free_at(1) == 6);
  CHECK(clock.free_at(2) == 10);
  CHECK(clock.free_at(3) == 10);
  CHECK(clock.makespan() == 10);
  // The sender's next op starts when the sender is free, before the chain ends.
  transfer_model next;
  next.resources = {0, 1};
  next.duration = 5;
  CHECK(clock.place(next) == 11);
  CHECK(next.start == 6);
  // The same in a trial and with an undo log.
  trial_clock trial(4);
  resource_clock fresh(4);
  const std::vector<transfer_model> both{chain, next};
  CHECK(trial.finish(both, fresh) == 11);
  resource_clock::undo_log log;
  fresh.mark(log);
  fresh.place(std::as_const(chain), log);
  CHECK(fresh.free_at(0) == 6);
  fresh.undo(log);
  CHECK(fresh.free_at(0) == 0);
  // A member whose hold begins later: the chain starts before that member's resources are free,
  // so long as they are free by the time the bytes reach it.
  {
    resource_clock c(4);
    transfer_model before;
    before.resources = {3};
    before.duration = 4;
    CHECK(c.place(before) == 4);
    transfer_model late = chain;
    late.hold_from = {0, 0, 2, 3};
    late.hold_until = {6, 6, 8, 10};
    CHECK(c.earliest_start(late) == 1);  // member 3 free at 4 = 1 + 3
    CHECK(c.place(late) == 11);
    CHECK(c.free_at(2) == 9);
    CHECK(c.free_at(3) == 11);
    trial_clock t(4);
    resource_clock empty(4);
    const std::vector<transfer_model> seq{before, late};
    CHECK(t.finish(seq, empty) == 11);
  }
  // Whole slots: each resource for its own rounded time.
  resource_clock slots(4);
  CHECK(slots.occupy_as(chain, 0, [](double t) { return std::ceil(t / 4); }) == 3);
  CHECK(slots.free_at(0) == 2);
  CHECK(slots.free_at(2) == 3);
}

TEST_CASE("the solvers' schedules stay what they were (exact makespans and orders)") {
  // (2,2) on 2 hosts -> (2,3) on 3 hosts, replicas on both source hosts.
  const pinned_case a = make_case("2x2", "S1,R", "2x3", "R,S0", "5x7", 2);
  {
    const instance in = make_instance(a.p, a.net, send_recv{});
    const greedy::outcome g = constructions_only().search(in, generous());
    CHECK(g.makespan == 240);
    CHECK(list_of(g.order) == "3 2 1 0");
    CHECK(list_of(g.choice) == "1 0 1 0");
    CHECK(greedy::list_schedule(in, {0, 1, 2, 3}) == 312);
    CHECK(checked_solve(a, in, constructions_only()).makespan_s == 240);
    const schedule dfs = checked_solve(a, in, alpa_dfs{});
    CHECK(dfs.makespan_s == 216);
    CHECK(order_of(alpa_dfs{}.solve(in, generous()).ops) ==
          "1.0.0 1.0.1 1.0.2 0.1.0 0.1.1 0.1.2 3.1.0 3.1.1 3.1.2 2.0.0 2.0.1 2.0.2");
    const schedule bb = checked_solve(a, in, branch_and_bound{});
    CHECK(bb.proven_optimal);
    CHECK(bb.makespan_s == 216);
    CHECK(checked_solve(a, in, naive{}).makespan_s == 420);
    CHECK(checked_solve(a, in, alpa_least_loaded{}).makespan_s == 420);
    CHECK(checked_solve(a, in, alpa_greedy{}).makespan_s == 240);
#if MESHCAST_HAS_CBC
    const schedule lp = checked_solve(a, in, ilp{});
    CHECK(lp.proven_optimal);
    CHECK(lp.makespan_s == 216);
#endif
  }
  {
    // The lists now start a forward after the receive it passes on (resource_clock::place_option),
    // as the schedule runs it: greedy's own makespan is the schedule's (160 before, by a forward
    // that started early), and the final schedule, dispatched op by op (solver/dispatch.hpp),
    // ends a hair sooner than the list (0x1.400000019c512p+7 before).
    const instance in = make_instance(a.p, a.net, send_recv_allgather{});
    const greedy::outcome g = constructions_only().search(in, generous());
    CHECK(g.makespan == 0x1.400000019c512p+7);
    CHECK(list_of(g.order) == "3 2 1 0");
    CHECK(list_of(g.choice) == "1 0 1 0");
    CHECK(checked_solve(a, in, constructions_only()).makespan_s == 0x1.4000000089706p+7);
    CHECK(checked_solve(a, in, alpa_dfs{}).makespan_s == 0x1.3000000112e0cp+7);
    CHECK(order_of(alpa_dfs{}.solve(in, generous()).ops) ==
          "1.0.0 1.0.1 1.0.2 1.0.3 1.0.4 0.1.0 0.1.1 0.1.2 0.1.3 0.1.4 3.1.0 3.1.1 3.1.2 3.1.3 3.1.4 "
          "2.0.0 2.0.1 2.0.2 2.0.3 2.0.4");
    const schedule bb = checked_solve(a, in, branch_and_bound{});
    CHECK(bb.proven_optimal);
    CHECK(bb.makespan_s == 144);
  }
  {
    const instance in = make_instance(a.p, a.net, send_recv{}, {.split_replicas = true});
    const greedy::outcome g = constructions_only().search(in, generous());
    CHECK(g.makespan == 272);
    CHECK(list_of(g.order) == "3 1 4 5 6 7 2 0");
    CHECK(list_of(g.choice) == "1 1 0 0 0 1 0 1");
    CHECK(checked_solve(a, in, alpa_least_loaded{}).makespan_s == 324);
  }
  {
    // Chains over the same hosts follow each other a hop apart (each member holds its resources
    // only while the bytes pass it); 280 while every member held them for the whole chain.
    const instance in = make_instance(a.p, a.net, broadcast{});
    CHECK(checked_solve(a, in, constructions_only()).makespan_s == 200);
    CHECK(order_of(alpa_dfs{}.solve(in, generous()).ops) == "1.0.0 2.1.0 3.0.0 0.1.0");
    CHECK(checked_solve(a, in, branch_and_bound{}).makespan_s == 140);
  }

  // (2,2) replicated over rows -> (3,2), the command-line tests' instance, sliced among replicas.
  const pinned_case b = make_case("2x2", "R,S1", "3x2", "S0,R", "6x5", 2);
  {
    const instance in = make_instance(b.p, b.net, send_recv{}, {.split_replicas = true});
    const greedy::outcome g = constructions_only().search(in, generous());
    CHECK(g.makespan == 128);
    CHECK(list_of(g.order) == "0 2 1 3 4 6 5 7 8 10 9 11");
    CHECK(list_of(g.choice) == "0 0 1 1 0 1 1 0 0 0 1 1");
    CHECK(checked_solve(b, in, alpa_greedy{}).makespan_s == 120);
    CHECK(checked_solve(b, in, alpa_least_loaded{}).makespan_s == 144);
  }
  {
    const instance in = make_instance(b.p, b.net, send_recv_allgather{});
    // Dispatched: 0x1.000000037d5a7p+6 as the list was. alpa_dfs's search now sees forwards
    // start after their receives (unit 4 moved up).
    CHECK(checked_solve(b, in, constructions_only()).makespan_s == 0x1.0000000089706p+6);
    CHECK(order_of(alpa_dfs{}.solve(in, generous()).ops) ==
          "0.0.0 0.0.1 0.0.2 0.0.3 4.1.0 4.1.1 4.1.2 4.1.3 1.0.0 1.0.1 1.0.2 1.0.3 2.1.0 2.1.1 2.1.2 2.1.3 3.0.0 3.0.1 3.0.2 3.0.3 "
          "5.1.0 5.1.1 5.1.2 5.1.3");
  }

  // Alpa's testbed: latencies and unequal transfer times.
  const pinned_case d = make_case("2x4", "R,S0,R", "3x4", "R,R,S0", "64x64x32", 4, true);
  {
    const instance in = make_instance(d.p, d.net, send_recv{});
    const greedy::outcome g = constructions_only().search(in, generous());
    CHECK(g.makespan == 0x1.f6b81e3826169p-11);
    CHECK(list_of(g.order) == "2 3 5 1 0 4");
    CHECK(checked_solve(d, in, alpa_dfs{}).makespan_s == 0x1.f6b81e3826168p-11);
    CHECK(checked_solve(d, in, naive{}).makespan_s == 0x1.516fd17796097p-10);
  }
  {
    const instance in = make_instance(d.p, d.net, send_recv_allgather{});
    const greedy::outcome g = constructions_only().search(in, generous());
    // Greedy's own makespan is now the schedule's (0x1.59bb400412636p-12, with forwards started
    // before their receives had ended, was 10% short of it); dispatched, the schedule ends
    // sooner than the list's. Every forward pays the per-message latency since the model charges
    // what the executor sends (was only a host's first: greedy 0x1.7bb9068de2fe1p-12 in the order
    // 2 3 5 1 0 4, dispatched 0x1.7b967e7b12ed7p-12, alpa_dfs 0x1.7bb3872dea9fbp-12).
    CHECK(g.makespan == 0x1.cf9bdcb170a1fp-12);
    CHECK(list_of(g.order) == "2 3 1 5 0 4");
    CHECK(checked_solve(d, in, constructions_only()).makespan_s == 0x1.9b0b8ec8680acp-12);
    CHECK(checked_solve(d, in, alpa_dfs{}).makespan_s == 0x1.cf965d5178436p-12);
  }
  {
    // A chain's sender is free once it has sent (transfer_model::hold_until): 0x1.1ad11f696828ap-12
    // before that. A chain's pieces shrink with its length (chain_piece_bytes); where a chain stays on
    // one host, pieces cost one piece's time of pipeline fill more than the whole message did
    // (0x1.1054c4a4f6743p-12 while every piece was 256 KiB).
    const instance in = make_instance(d.p, d.net, broadcast{});
    CHECK(checked_solve(d, in, constructions_only()).makespan_s == 0x1.2bd1a47ece31fp-12);
    CHECK(order_of(alpa_dfs{}.solve(in, generous()).ops) == "0.0.0 2.0.0 4.0.0 1.0.0 3.0.0 5.0.0");
    const schedule bb = checked_solve(d, in, branch_and_bound{});
    CHECK(bb.proven_optimal);
    CHECK(bb.makespan_s == 0x1.2bd1a47ece31fp-12);
  }
}

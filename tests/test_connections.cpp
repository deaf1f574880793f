// The connection rule of the ordered model (connections.hpp): between two devices on different
// hosts, transfers in opposite directions start together (both by rendezvous) or one after the
// other; an eager one never overlaps the other direction.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <meshcast/meshcast.hpp>

#include "support/schedule_checker.hpp"

using namespace meshcast;

namespace {

transfer_model with_slot(std::vector<int> resources, double duration, int slot, bool eager) {
  transfer_model m;
  m.resources = std::move(resources);
  m.duration = duration;
  m.connection = slot;
  m.eager = eager;
  return m;
}

// Every pair of transfers in opposite directions between two devices of different hosts: either
// they do not overlap, or they start together and neither goes eagerly. Returns the first breach.
std::string breach(const schedule& s, const network& net) {
  for (std::size_t a = 0; a < s.transfers.size(); ++a)
    for (std::size_t b = a + 1; b < s.transfers.size(); ++b) {
      const transfer &x = s.transfers[a], &y = s.transfers[b];
      if (!connection_map::concerns(x, net) || !connection_map::concerns(y, net)) continue;
      if (x.sender != y.receivers[0] || y.sender != x.receivers[0]) continue;
      const transfer_model &mx = s.model[a], &my = s.model[b];
      const bool overlap = mx.start < my.end - 1e-12 && my.start < mx.end - 1e-12;
      if (!overlap) continue;
      const bool eager = x.bytes <= net.eager_bytes() || y.bytes <= net.eager_bytes();
      if (mx.start != my.start || eager)
        return "transfers " + std::to_string(a) + " and " + std::to_string(b) + " overlap in opposite directions";
    }
  return "";
}

// A same-mesh reshard of `shape` on `mesh` from `src` to `dst`, on hosts of two devices.
plan same_mesh(const char* mesh, const char* src, const char* dst, const char* shape) {
  const dynamic_shape sh = parse_shape(shape);
  return make_plan(dynamic_layout(parse_mesh(mesh), dynamic_spec(src), sh),
                   dynamic_layout(parse_mesh(mesh), dynamic_spec(dst), sh), {.devices = device_map::same()});
}

std::vector<index_t> hosts_of_two(const plan& p) {
  return default_hosts(p.device_count, static_cast<index_t>(p.src_devices.size()), 2);
}

}  // namespace

TEST_CASE("connection_start: with the other direction, or after it") {
  connection_use none;
  CHECK(connection_start(with_slot({}, 1, 0, false), 3, none) == 3);
  const connection_use big{2, 10, false, true}, eager{2, 10, true, true};
  const transfer_model rendezvous = with_slot({}, 5, 1, false), small = with_slot({}, 5, 1, true);
  CHECK(connection_start(rendezvous, 10, big) == 10);  // it has ended
  CHECK(connection_start(rendezvous, 12, big) == 12);
  CHECK(connection_start(rendezvous, 0, big) == 2);    // started together
  CHECK(connection_start(rendezvous, 2, big) == 2);
  CHECK(connection_start(rendezvous, 3, big) == 10);   // its handshake would wait for the other's data
  CHECK(connection_start(small, 0, big) == 10);        // an eager one never overlaps
  CHECK(connection_start(rendezvous, 0, eager) == 10);
}

TEST_CASE("resource_clock and trial_clock keep the connection rule; undo restores it") {
  // Devices 0 and 1: slot 0 is 0 -> 1, slot 1 is 1 -> 0. Resources: 0 = egress of 0, 1 = egress of 1.
  resource_clock clock(2);
  transfer_model a = with_slot({0}, 10, 0, false);
  CHECK(clock.place(a) == 10);
  transfer_model b = with_slot({1}, 4, 1, false);  // its resources are free at 0: starts with a
  clock.place(b);
  CHECK(b.start == 0);
  CHECK(b.end == 4);
  transfer_model c = with_slot({1}, 4, 1, false);  // free at 4, a still runs: after a
  clock.place(c);
  CHECK(c.start == 10);
  transfer_model d = with_slot({0}, 2, 0, true);  // eager, c runs until 14
  clock.place(d);
  CHECK(d.start == 14);
  CHECK(clock.makespan() == 16);

  resource_clock fresh(2);
  fresh.place(std::as_const(a));
  trial_clock trial(2);
  const std::vector<transfer_model> next{b, c, d};
  CHECK(trial.finish(next, fresh) == 16);
  resource_clock::undo_log log;
  fresh.mark(log);
  fresh.place(std::as_const(b), log);
  fresh.place(std::as_const(c), log);
  CHECK(fresh.use(1).start == 10);
  fresh.undo(log);
  CHECK(!fresh.use(1).used);
  CHECK(fresh.use(0).end == 10);
  transfer_model again = with_slot({1}, 4, 1, false);
  fresh.place(again);
  CHECK(again.start == 0);  // as b was
}

TEST_CASE("instances for ordered runs with eager messages give NIC transfers their connections") {
  const plan p = same_mesh("2x2x2", "S0,S1,S2", "R,S1,S02", "1500x62x93");
  const auto hosts = hosts_of_two(p);
  const network net = network::uniform(hosts, network::gbit_per_s(0.2), network::gbit_per_s(20), 100e-6)
                          .with_eager_bytes(index_t{1} << 20);
  {
    const instance in = make_instance(p, net, send_recv{}, {.split_replicas = true, .mode = execution::ordered});
    int slotted = 0, eager = 0;
    for (const unit& u : in.units)
      for (const option& o : u.options)
        for (const op& x : o.ops) {
          CHECK((x.connection >= 0) == connection_map::concerns(x, net));
          if (x.connection >= 0) ++slotted, eager += x.eager;
          CHECK(x.eager == (x.connection >= 0 && x.bytes <= net.eager_bytes()));
        }
    CHECK(slotted > 0);
    CHECK(eager > 0);  // this layout has pieces of 93,000 bytes and of 2 MB
  }
  // Concurrent runs and transports without eager messages: no connections.
  for (const instance& in : {make_instance(p, net, send_recv{}, {.mode = execution::concurrent}),
                             make_instance(p, network(net).with_eager_bytes(0), send_recv{}, {})})
    for (const unit& u : in.units)
      for (const option& o : u.options)
        for (const op& x : o.ops) CHECK(x.connection == -1);
}

TEST_CASE("every solver's ordered schedule keeps the connection rule") {
  struct layout_case {
    const char *mesh, *src, *dst, *shape;
  };
  // Same-mesh layouts, where devices send to each other: uneven pieces, some eager (up to 64 KiB
  // here), some not; a transpose whose exchanges may start together.
  const layout_case cases[] = {{"2x2x2", "S0,S1,S2", "R,S1,S02", "150x62x93"},
                               {"8", "R,S0", "S0,R", "300x256"},
                               {"4x2", "S0,S1", "S1,S0", "512x512"}};
  for (const layout_case& c : cases) {
    const plan p = same_mesh(c.mesh, c.src, c.dst, c.shape);
    const auto hosts = hosts_of_two(p);
    const network net = network::uniform(hosts, network::gbit_per_s(0.2), network::gbit_per_s(20), 100e-6)
                            .with_eager_bytes(index_t{64} << 10);
    INFO(c.mesh, " ", c.src, " -> ", c.dst, " ", c.shape);
    solver_options o;
    o.time_limit_s = 0.5;
    for (bool split : {false, true}) {
      const instance in = make_instance(p, net, send_recv{}, {.split_replicas = split, .mode = execution::ordered});
      for (const schedule& s : {solve(in, naive{}, o), solve(in, alpa_least_loaded{}, o), solve(in, alpa_greedy{}, o),
                                solve(in, greedy{}, o), solve(in, open_shop{}, o), solve(in, branch_and_bound{}, o)}) {
        INFO(s.solver, split ? " split" : "");
        CHECK(breach(s, net) == "");
        CHECK(meshcast::testing::check_schedule(p, hosts, s) == "");
        CHECK(!(s.solver == "branch_and_bound" && s.proven_optimal));  // its search does not cover the rule
      }
      const instance gathered = make_instance(p, net, send_recv_allgather{}, {.split_replicas = split});
      CHECK(breach(solve(gathered, greedy{}, o), net) == "");
    }
  }
}

TEST_CASE("a transpose's exchanges of large pieces start together") {
  // (4,2) S0,S1 -> S1,S0: every remote piece is 64 KiB, above the eager limit of 32 KiB, and the
  // greedy schedule pairs devices that send each other a piece at once.
  const plan p = same_mesh("4x2", "S0,S1", "S1,S0", "512x512");
  const auto hosts = hosts_of_two(p);
  const network net = network::uniform(hosts, network::gbit_per_s(0.2), network::gbit_per_s(20), 100e-6);
  const schedule without = solve(make_instance(p, net, send_recv{}), greedy{});
  const network eager = network(net).with_eager_bytes(index_t{32} << 10);
  const schedule with = solve(make_instance(p, eager, send_recv{}), greedy{});
  CHECK(breach(with, eager) == "");
  CHECK(with.makespan_s == doctest::Approx(without.makespan_s).epsilon(1e-9));
  int together = 0;
  for (std::size_t a = 0; a < with.transfers.size(); ++a)
    for (std::size_t b = a + 1; b < with.transfers.size(); ++b)
      if (connection_map::concerns(with.transfers[a], eager) && connection_map::concerns(with.transfers[b], eager) &&
          with.transfers[a].sender == with.transfers[b].receivers[0] && with.transfers[b].sender == with.transfers[a].receivers[0] &&
          with.model[a].start == with.model[b].start)
        ++together;
  CHECK(together > 0);
  // The same with every piece eager: no two of them overlap, and it takes longer.
  const network all_eager = network(net).with_eager_bytes(index_t{1} << 20);
  const schedule serial = solve(make_instance(p, all_eager, send_recv{}), greedy{});
  CHECK(breach(serial, all_eager) == "");
  CHECK(serial.makespan_s >= with.makespan_s);
}

TEST_CASE("open_shop does not cut a rendezvous transfer into pieces the rule would serialize") {
  // The suite's (4,2) transpose, scaled: 4 MiB pieces over 1 MiB eager messages. Cut into chunks,
  // pieces the other way went eagerly or drifted apart by a row, ran one after the other, and the
  // ordered model took twice the lower bound (the executor as well, on a NIC without a token
  // bucket's burst).
  const plan p = same_mesh("4x2", "S0,S1", "S1,S0", "4096x4096");
  const auto hosts = hosts_of_two(p);
  const network net = network::uniform(hosts, network::gbit_per_s(0.2), network::gbit_per_s(27), 10e-6)
                          .with_eager_bytes(index_t{1} << 20);
  for (bool split : {false, true}) {
    const instance in = make_instance(p, net, send_recv{}, {.split_replicas = split, .mode = execution::ordered});
    const schedule s = solve(in, open_shop{});
    INFO((split ? "split" : "whole"));
    CHECK(breach(s, net) == "");
    CHECK(s.makespan_s <= 1.01 * lower_bound(in).value());
  }
}

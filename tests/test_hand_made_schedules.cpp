// Hand-made schedules and solver parameters, checked before anything indexes by them (found by
// the API review of 2026-12-07): a model resource held by a device outside its transfer reached
// MPI as a rank (an abort of the job); simulate and bucketed read past their vectors on resource
// ids, dependencies or senders out of range; alpa_greedy with no trial spun until its time limit
// and then read an emptied vector; open_shop with INT_MAX rounds took 53 s and 16 GB under a 0.2 s
// limit; broadcast::how took any value. (A manifest's same_mesh beside other devices: test_manifest.cpp.)
#include <doctest/doctest.h>

#include <algorithm>
#include <climits>
#include <limits>
#include <string>
#include <vector>

#include <meshcast/meshcast.hpp>

#include "support/thrown.hpp"

using namespace meshcast;
using meshcast::testing::thrown;

namespace {
// 4 devices, 2 a host, S0,R -> R,S0 on the same mesh: transfers across hosts and within them.
struct schedule_fixture {
  plan p = make_plan(dynamic_layout(parse_mesh("4"), dynamic_spec("S0,R"), dynamic_shape{8, 6}),
                     dynamic_layout(parse_mesh("4"), dynamic_spec("R,S0"), dynamic_shape{8, 6}),
                     {.devices = device_map::same()});
  network net = network::uniform({0, 0, 1, 1}, 1e9, 1e10, 1e-5);
  instance in = make_instance(p, net, send_recv{});
  schedule s = solve(in, greedy{});
};
bool mentions(const std::string& text, const char* part) { return text.find(part) != std::string::npos; }
}  // namespace

TEST_CASE("hand-made schedules: a model resource held outside its transfer, or a negative one, is refused") {
  schedule_fixture f;
  REQUIRE(f.s.model.size() > 1);
  CHECK_NOTHROW(check_schedule_fits(f.p, f.s));
  const char* why = "held by a device that neither sends nor receives it";
  for (index_t holder : {index_t{-7}, index_t{1000}}) {
    schedule bad = f.s;
    for (index_t& h : bad.model.back().holders) h = holder;
    CHECK(mentions(thrown([&] { check_schedule_fits(f.p, bad); }), why));
  }
  // A device of the plan, but not of this transfer: its token would go to a rank that never waits.
  schedule outsider = f.s;
  const transfer& t = outsider.transfers.back();
  index_t other = 0;
  while (other == t.sender || std::find(t.receivers.begin(), t.receivers.end(), other) != t.receivers.end()) ++other;
  outsider.model.back().holders.front() = other;
  CHECK(mentions(thrown([&] { check_schedule_fits(f.p, outsider); }), why));
  schedule negative = f.s;
  negative.model.back().resources.front() = -1;
  CHECK(mentions(thrown([&] { check_schedule_fits(f.p, negative); }), "resource is negative"));
}

TEST_CASE("hand-made schedules: simulate and bucketed check what they index") {
  schedule_fixture f;
  schedule far = f.s;
  far.model.front().resources.front() = 100000;
  CHECK(mentions(thrown([&] { simulate(far, f.net, f.in.resources); }), "occupies resource 100000, outside the network's"));
  schedule later = f.s;
  later.transfers.front().waits_for = {1000000};
  CHECK(mentions(thrown([&] { simulate(later, f.net, f.in.resources); }), "waits for a transfer that does not come before it"));
  for (execution mode : {execution::ordered, execution::concurrent}) {
    schedule short_model = f.s;
    short_model.mode = mode;
    short_model.model.pop_back();
    CHECK(mentions(thrown([&] { simulate(short_model, f.net, f.in.resources); }), "models"));
  }
  schedule stranger = f.s;
  for (transfer& x : stranger.transfers) x.sender = index_t{1} << 19;
  CHECK(mentions(thrown([&] { (void)bucketed(stranger, f.net, std::size_t{1} << 20); }), "names a device outside the network"));
  CHECK_NOTHROW((void)bucketed(f.s, f.net, std::size_t{1} << 20));
}

TEST_CASE("solver parameters that cannot work are refused, naming them") {
  schedule_fixture f;
  CHECK(thrown([&] { solve(f.in, alpa_greedy{.trials = 0}, {.time_limit_s = 5}); }) ==
        "alpa_greedy::trials is 0; it needs at least 1");
  CHECK_NOTHROW(solve(f.in, alpa_greedy{.trials = 1}));
  for (int rounds : {0, -3, open_shop::max_rounds + 1, INT_MAX})
    CHECK(thrown([&] { solve(f.in, open_shop{.rounds = rounds}); }) ==
          "open_shop::rounds is " + std::to_string(rounds) + "; it must be 1 to 4096");
  CHECK_NOTHROW(solve(f.in, open_shop{.rounds = open_shop::max_rounds}));
  CHECK(mentions(thrown([&] { make_instance(f.p, f.net, broadcast{.how = transfer_kind::point_to_point}); }),
            "broadcast::how must be transfer_kind::chain or transfer_kind::group_broadcast"));
}

// The lower layers' review (2026-12-07): simulate trusted a hand-made model's times (NaN gave a
// makespan of 0, inf stopped the concurrent model early), its connection slots (2^26 grew a 1.5 GB
// table) and its resource space (2^31 devices wrapped to 4 resources).
TEST_CASE("hand-made schedules: simulate refuses times that are not seconds, in both modes") {
  schedule_fixture f;
  const char* why = "not a finite, non-negative number of seconds";
  for (execution mode : {execution::ordered, execution::concurrent}) {
    schedule good = f.s;
    good.mode = mode;
    const double expected = simulate(good, f.net, f.in.resources);
    CHECK(expected > 0);
    for (double bad_time : {std::numeric_limits<double>::quiet_NaN(), -1e9, std::numeric_limits<double>::infinity()}) {
      schedule dur = good, lat = good;
      dur.model.front().duration = bad_time;
      lat.model.back().latency_s = bad_time;
      CHECK(mentions(thrown([&] { simulate(dur, f.net, f.in.resources); }), why));
      CHECK(mentions(thrown([&] { simulate(lat, f.net, f.in.resources); }), why));
    }
    schedule reversed = good;
    transfer_model& m = reversed.model.front();
    m.hold_from.assign(m.resources.size(), 0.5 * m.duration);
    m.hold_until.assign(m.resources.size(), 0.25 * m.duration);
    CHECK(mentions(thrown([&] { simulate(reversed, f.net, f.in.resources); }), "a hold that ends before it starts"));
  }
}

TEST_CASE("hand-made schedules: connection slots far apart simulate as the same slots dense, and are given back") {
  schedule_fixture f;
  // Transfers 2k and 2k + 1 are the two directions of one connection (slots k and k ^ 1).
  schedule dense = f.s;
  for (std::size_t i = 0; i < dense.model.size(); ++i) dense.model[i].connection = static_cast<int>(i);
  const double expected = simulate(dense, f.net, f.in.resources);
  const int n = static_cast<int>(dense.model.size());
  for (int base : {1 << 26, (INT_MAX - n - 1) & ~1}) {
    schedule sparse = dense;
    for (transfer_model& m : sparse.model) m.connection += base;
    std::vector<int> given;
    for (const transfer_model& m : sparse.model) given.push_back(m.connection);
    CHECK(simulate(sparse, f.net, f.in.resources) == doctest::Approx(expected));
    std::vector<int> after;
    for (const transfer_model& m : sparse.model) after.push_back(m.connection);
    CHECK(after == given);
  }
}

TEST_CASE("hand-made schedules: simulate refuses a resource space whose size does not fit an int") {
  schedule_fixture f;
  for (index_t devices : {index_t{1} << 30, index_t{1} << 31, index_t{-1}}) {
    resource_space rs{f.in.resources.ports, devices};
    CHECK(mentions(thrown([&] { simulate(f.s, f.net, rs); }), "a resource space of"));
  }
  CHECK(mentions(thrown([&] { simulate(f.s, f.net, resource_space{-1, 4}); }), "a resource space of"));
}

// Hand-made inputs are checked, not trusted. A schedule, before an executor runs it: every task
// reaches each of its receivers exactly once, nothing reaches a device that does not need it, no
// receiver is named twice. A box, before the checked host pack reads its dims. (Each was a
// silently wrong or out-of-bounds run before; found by the API review.)
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <meshcast/meshcast.hpp>

#include "support/thrown.hpp"

using namespace meshcast;
using meshcast::testing::thrown;

namespace {
// 2 -> 4 devices, S0 to S0 on 8x4 elements: every task has one receiver, no forwards.
struct fixture {
  plan p = make_plan(dynamic_layout(parse_mesh("2"), dynamic_spec("S0,R"), dynamic_shape{8, 4}),
                     dynamic_layout(parse_mesh("4"), dynamic_spec("R,R"), dynamic_shape{8, 4}));
  schedule s = solve(make_instance(p, network::alpa_testbed(default_hosts(p.device_count, 2, 2)), send_recv{}), greedy{});
};
bool has(const std::string& text, const char* part) { return text.find(part) != std::string::npos; }
}  // namespace

TEST_CASE("schedule fits: what solve returns passes, over every strategy") {
  fixture f;
  CHECK_NOTHROW(check_schedule_fits(f.p, f.s));
  const network net = network::alpa_testbed(default_hosts(f.p.device_count, 2, 2));
  CHECK_NOTHROW(check_schedule_fits(f.p, solve(make_instance(f.p, net, broadcast{}), greedy{})));
  CHECK_NOTHROW(check_schedule_fits(f.p, solve(make_instance(f.p, net, send_recv_allgather{}), greedy{})));
  const std::vector<plan> one{f.p};
  CHECK_NOTHROW(check_schedule_fits(one, solve_batch(one, net, auto_strategy{}, greedy{})));
}

TEST_CASE("schedule fits: a task left out, delivered twice or cut short is refused") {
  fixture f;
  REQUIRE(f.s.transfers.size() > 1);
  REQUIRE(f.s.transfers.back().waits_for.empty());
  schedule dropped = f.s;
  dropped.transfers.pop_back();
  dropped.model.clear();
  CHECK(has(thrown([&] { check_schedule_fits(f.p, dropped); }), "elements of tensor 0's task"));
  schedule twice = f.s;
  twice.transfers.push_back(twice.transfers.back());
  twice.model.clear();
  CHECK(has(thrown([&] { check_schedule_fits(f.p, twice); }), "was it made for another plan?"));
  schedule short_region = f.s;
  transfer& t = short_region.transfers.front();
  const index_t whole = t.region.volume();
  for (int d = 0; d < t.region.rank; ++d) t.region[d].hi = t.region[d].lo + 1;  // one element of it
  REQUIRE(t.region.volume() < whole);
  t.bytes = t.region.volume() * f.p.element_bytes;
  CHECK(has(thrown([&] { check_schedule_fits(f.p, short_region); }), "elements of tensor 0's task"));
}

TEST_CASE("schedule fits: a receiver that does not need the region, or one named twice, is refused") {
  fixture f;
  schedule extra = f.s;
  transfer& t = extra.transfers.front();
  index_t stranger = 0;
  while (stranger == t.sender || std::find(t.receivers.begin(), t.receivers.end(), stranger) != t.receivers.end()) ++stranger;
  t.receivers.push_back(stranger);
  CHECK(has(thrown([&] { check_schedule_fits(f.p, extra); }), "which that device does not need"));
  schedule repeated = f.s;
  repeated.transfers.front().receivers.push_back(repeated.transfers.front().receivers.front());
  CHECK(has(thrown([&] { check_schedule_fits(f.p, repeated); }), "names a receiver twice"));
}

TEST_CASE("schedule fits: a model time that is not a finite number of seconds, or hold times unlike its resources, is refused") {
  // The executor orders its rounds by the model's starts: a NaN start (false against every time)
  // made the round loop stand still, past every deadline.
  fixture f;
  REQUIRE(!f.s.model.empty());
  const char* why = "has a model time that is not a finite, non-negative number of seconds";
  for (double bad : {std::nan(""), std::numeric_limits<double>::infinity(), -1.0}) {
    schedule start = f.s;
    start.model.front().start = bad;
    CHECK(has(thrown([&] { check_schedule_fits(f.p, start); }), why));
    schedule duration = f.s;
    duration.model.back().duration = bad;
    CHECK(has(thrown([&] { check_schedule_fits(f.p, duration); }), why));
    schedule latency = f.s;
    latency.model.back().latency_s = bad;
    CHECK(has(thrown([&] { check_schedule_fits(f.p, latency); }), why));
  }
  schedule backwards = f.s;
  backwards.model.front().end = backwards.model.front().start / 2;
  backwards.model.front().start += 1;
  CHECK(has(thrown([&] { check_schedule_fits(f.p, backwards); }), "or ends before it starts"));
  schedule holds = f.s;
  holds.model.front().hold_from.assign(holds.model.front().resources.size() + 1, 0.0);
  holds.model.front().hold_until.assign(holds.model.front().resources.size() + 1, 0.0);
  CHECK(has(thrown([&] { check_schedule_fits(f.p, holds); }), "hold times do not match its resources"));
  holds.model.front().hold_until.pop_back();
  CHECK(has(thrown([&] { check_schedule_fits(f.p, holds); }), "hold times do not match its resources"));
  // resources and holders are built in step (transfer_model::occupy); a hand-made model may not be
  schedule holders = f.s;
  REQUIRE_FALSE(holders.model.front().holders.empty());
  holders.model.front().holders.pop_back();
  CHECK(has(thrown([&] { check_schedule_fits(f.p, holders); }), "resources and holders differ in number"));
}

TEST_CASE("hand-made boxes: pack, unpack, copy_region and cut_region refuse rank 0 and a piece of no elements") {
  // A tensor has at least one dim: a rank-0 box read region[-1] in the run layout, and
  // cut_region with pieces of 0 elements walked past the last dim (division by zero).
  std::vector<std::byte> a(64), b(64);
  box tile{1, {range{0, 16}}};
  box none{};
  REQUIRE(none.rank == 0);
  CHECK(has(thrown([&] { pack(tile, a, none, 4, b); }), "a tile or region of rank 0; ranks are 1.."));
  CHECK(has(thrown([&] { pack(none, a, none, 4, b); }), "a tile or region of rank 0"));
  CHECK(has(thrown([&] { unpack(a, none, b, none, 4); }), "a tile or region of rank 0"));
  CHECK(has(thrown([&] { copy_region(none, a, none, b, none, 4); }), "copy_region: a region of rank 0; ranks are 1.."));
  std::vector<box> pieces;
  CHECK(has(thrown([&] { cut_region(tile, 0, pieces); }), "cut_region: pieces of at most 0 elements"));
  CHECK(has(thrown([&] { cut_region(tile, -3, pieces); }), "cut_region: pieces of at most -3 elements"));
  CHECK(has(thrown([&] { cut_region(none, 4, pieces); }), "cut_region: a region of rank 0"));
  CHECK(pieces.empty());
  REQUIRE(cut_region(tile, 4, pieces));
  CHECK(pieces.size() == 4);
}

TEST_CASE("hand-made boxes: the checked host pack, unpack and copy_region refuse a rank past max_rank") {
  std::vector<std::byte> a(64), b(64);
  box tile{1, {range{0, 16}}};
  box bad = tile;
  bad.rank = max_rank + 1;  // its dims hold max_rank ranges
  CHECK(has(thrown([&] { pack(tile, a, bad, 4, b); }), "a tile or region of rank"));
  CHECK(has(thrown([&] { pack(bad, a, tile, 4, b); }), "a tile or region of rank"));
  CHECK(has(thrown([&] { unpack(a, bad, b, tile, 4); }), "a tile or region of rank"));
  CHECK(has(thrown([&] { copy_region(tile, a, tile, b, bad, 4); }), "copy_region: a region of rank"));
  CHECK(has(thrown([&] { copy_region(tile, a, bad, b, tile, 4); }), "a tile or region of rank"));
  box two{2, {range{0, 4}, range{0, 4}}};
  CHECK(has(thrown([&] { pack(two, a, tile, 4, b); }), "pack:"));  // ranks that differ
  CHECK_NOTHROW(pack(tile, a, tile, 4, b));
}

TEST_CASE("hand-made enums: a device_map or execution value outside its enum names the option at fault") {
  fixture f;
  device_map odd = device_map::same();
  odd.how = static_cast<device_map::kind>(7);
  const dynamic_layout two(parse_mesh("2"), dynamic_spec("S0"), dynamic_shape{8});
  CHECK(thrown([&] { make_plan(two, two, {.devices = odd}); }) == "device_map::how holds 7, which is not disjoint, same or listed");
  const network net = network::alpa_testbed(default_hosts(f.p.device_count, 2, 2));
  CHECK(thrown([&] { make_instance(f.p, net, send_recv{}, {.mode = static_cast<execution>(5)}); }) ==
        "instance_options::mode holds 5, which is not execution::ordered or execution::concurrent");
}

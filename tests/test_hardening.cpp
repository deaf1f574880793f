// No input breaks the library: sizes that do not fit, non-finite reals, solvers that misbehave,
// temporaries. Each case here is a regression of a failure found by hand or by the fuzzers.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <meshcast/api/manifest.hpp>
#include <meshcast/meshcast.hpp>

#include "support/schedule_checker.hpp"
#include "support/thrown.hpp"

using namespace meshcast;
using meshcast::testing::thrown;

namespace {
constexpr index_t big = std::numeric_limits<index_t>::max();
}  // namespace

TEST_CASE("hardening: sizes that do not fit are errors, never wrapped values") {
  // Mesh and shape products.
  CHECK(thrown([] { parse_mesh("384773x95883776011880"); }).find("does not fit in 64 bits") != std::string::npos);
  CHECK(thrown([] { parse_mesh("4294967296x4294967296"); }).find("does not fit") != std::string::npos);
  CHECK(thrown([] { parse_mesh("65536x65536"); }).find("max_devices") != std::string::npos);
  CHECK(thrown([] { parse_shape("4294967296x4294967296"); }).find("does not fit") != std::string::npos);
  CHECK(thrown([] { parse_shape("3037000500x3037000500"); }).find("does not fit") != std::string::npos);
  CHECK(thrown([] { parse_shape("99999999999999999999"); }).find("does not fit") != std::string::npos);
  CHECK(thrown([] { dynamic_shape{big, 2}; }).find("does not fit") != std::string::npos);
  CHECK(thrown([] { mesh<dyn, 4>{big}; }).find("does not fit") != std::string::npos);
  // Element size times volume.
  dynamic_layout a(parse_mesh("2"), dynamic_spec("R,R"), dynamic_shape{index_t{1} << 31, index_t{1} << 31});
  CHECK(thrown([&] { make_plan(a, a, {.element_bytes = 4}); }).find("more bytes than fit") != std::string::npos);
  CHECK(thrown([&] { make_plan(a, a, {.element_bytes = max_element_bytes + 1}); }).find("element size") != std::string::npos);
  // A value-form layout is validated too, whatever the caller put in it.
  layout_value v = a.value();
  v.shape.values[0] = -3;
  CHECK(thrown([&] { make_plan(v, v); }).find("negative") != std::string::npos);
  v = a.value();
  v.mesh.values[0] = big;
  CHECK(thrown([&] { make_plan(v, v); }).find("max_devices") != std::string::npos);
  // Device ids: bounded, and memory stays proportional to the plan (no table per id).
  dynamic_layout four(parse_mesh("4"), dynamic_spec("S0"), dynamic_shape{8});
  CHECK(thrown([&] { make_plan(four, four, {.devices = device_map::listed({0, 1, 2, 100'000'000})}); })
            .find("outside") != std::string::npos);
  CHECK(thrown([&] { make_plan(four, four, {.devices = device_map::listed({0, 1, 2, -1})}); }).find("outside") !=
        std::string::npos);
  CHECK(thrown([] { default_hosts(8, 4, 0); }).find("devices per host") != std::string::npos);
  CHECK(thrown([] { default_hosts(8, 4, big); }).find("devices per host") != std::string::npos);
}

TEST_CASE("hardening: the chunk rule is exact at the edge of the index range") {
  const index_t n = big;  // 2^63 - 1
  for (index_t k : {index_t{1}, index_t{2}, index_t{3}, index_t{7}, max_devices}) {
    CAPTURE(k);
    index_t covered = 0;
    for (index_t j : {index_t{0}, k / 2, k - 1}) {
      range r = chunk_range(n, k, j);
      CHECK(r.lo >= 0);
      CHECK(r.hi <= n);
      CHECK(r.lo <= r.hi);
      if (j == k - 1) covered = r.hi;
    }
    CHECK(covered == n);
    CHECK(chunk_size(n, k) == n / k + (n % k != 0));
  }
  CHECK(chunk_range(0, 4, 3) == range{0, 0});
  CHECK(chunk_size(5, 0) == 5);  // never a division by zero
}

TEST_CASE("hardening: reals are finite and in range") {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  for (double bad : {0.0, -1.0, nan, inf, 1e300, 0.5})
    CHECK_THROWS_AS(network::uniform({0, 1}, bad, 1e9, 1e-6), error);
  for (double bad : {-1.0, nan, inf, 1e9})
    CHECK_THROWS_AS(network::uniform({0, 1}, 1e9, 1e9, bad), error);
  CHECK_THROWS_AS(network::uniform({0, 1}, 1e9, 1e9, 1e-6, 0), error);
  CHECK_THROWS_AS(network::uniform({0, 1}, 1e9, 1e9, 1e-6, max_nics_per_host + 1), error);
  CHECK_THROWS_AS(network::uniform({0, max_devices + 1}, 1e9, 1e9, 1e-6), error);
  // Time limits: NaN, infinity and anything past the cap are refused before any clock arithmetic.
  plan p = make_plan(dynamic_layout(parse_mesh("2"), dynamic_spec("S0"), dynamic_shape{8}),
                     dynamic_layout(parse_mesh("2"), dynamic_spec("R"), dynamic_shape{8}));
  instance in = make_instance(p, network::alpa_testbed(default_hosts(p.device_count, 2, 1)), send_recv{});
  for (double bad : {nan, inf, -1.0, 1e10}) {
    CAPTURE(bad);
    CHECK(thrown([&] { solve(in, greedy{}, {.time_limit_s = bad}); }).find("time limit") != std::string::npos);
  }
  CHECK_THROWS_AS(detail::deadline(1e13), error);
  // Reals in messages are the shortest text that reads back, not std::to_string's six decimals.
  CHECK(thrown([] { detail::deadline(-0.5, "the timeout"); }) == "the timeout (-0.5 s) must be a number in [0, 1e6] seconds");
  CHECK(thrown([] { detail::deadline(1e13); }).find("(1e+13 s)") != std::string::npos);
  CHECK(thrown([&] { network::uniform({0, 1}, 1e9, 1e9, nan); }).find("the latency (nan s) must be a number in [0, 3600]") == 0);
  CHECK(detail::number(5) == "5");
  CHECK(detail::number(0.1) == "0.1");
  CHECK(detail::number(-inf) == "-inf");
}

TEST_CASE("hardening: the fluid simulation ends on extreme but valid networks and sizes") {
  // Huge byte counts at the highest bandwidth and tiny ones at the lowest: every pass of the
  // simulation removes a flow, so it ends (it looped forever on NaN before).
  dynamic_layout src(parse_mesh("4"), dynamic_spec("S0,R"), dynamic_shape{index_t{1} << 30, index_t{1} << 20});
  dynamic_layout dst(parse_mesh("4"), dynamic_spec("R,S0"), dynamic_shape{index_t{1} << 30, index_t{1} << 20});
  plan p = make_plan(src, dst, {.element_bytes = 8});
  for (double bw : {network::min_bandwidth_bps, network::max_bandwidth_bps}) {
    network net = network::uniform(default_hosts(p.device_count, 4, 1), bw, bw, 0);
    schedule s = solve(make_instance(p, net, send_recv{}), naive{});
    s.mode = execution::concurrent;
    const double t = simulate(s, net, {net.port_count(), net.device_count()});
    CHECK(std::isfinite(t));
    CHECK(t > 0);
  }
}

TEST_CASE("hardening: an instance owns what it is made of") {
  // Built from temporaries only: nothing dangles (this segfaulted when the instance kept pointers).
  instance in = make_instance(make_plan(dynamic_layout(parse_mesh("2x2"), dynamic_spec("S0,R"), dynamic_shape{6, 5}),
                                        dynamic_layout(parse_mesh("3"), dynamic_spec("R,S0"), dynamic_shape{6, 5})),
                              network::alpa_testbed(default_hosts(7, 4, 2)), send_recv_allgather{}, true);
  schedule s = solve(in, greedy{});
  CHECK(meshcast::testing::check_schedule(*in.source, in.net->hosts(), s) == "");
}

namespace {
// A user's solver that does something wrong with the greedy answer.
template <int Mistake>
struct broken_solver {
  static constexpr std::string_view name = "broken";
  const char* supports(const instance&) const { return nullptr; }
  solver_result solve(const instance& in, const solver_options& o) const {
    solver_result r = greedy{}.solve(in, o);
    if constexpr (Mistake == 0) r.ops.pop_back();                    // drops an op
    if constexpr (Mistake == 1) r.ops.push_back(r.ops.front());      // sends something twice
    if constexpr (Mistake == 2) std::reverse(r.ops.begin(), r.ops.end());  // forwards before receiving
    if constexpr (Mistake == 3) r.ops.front().sender = (r.ops.front().sender + 1) % in.source->device_count;
    if constexpr (Mistake == 4) r.ops.front().region[0].hi += 1;     // a region grown past its op
    if constexpr (Mistake == 5) r.ops.front().unit = static_cast<index_t>(in.units.size());  // no such unit
    if constexpr (Mistake == 6) {  // a second sender sends part of a unit again
      for (const unit& u : in.units)
        if (u.has_choice()) {
          r.ops.push_back(u.options[1].ops[0]);
          break;
        }
    }
    // The model is the instance's: a solver that re-times or re-routes a transfer is refused
    // (solve() simulated what the solver said, a NaN or a resource past the table included).
    if constexpr (Mistake == 7) r.ops.back().duration = -1;
    if constexpr (Mistake == 8) r.ops.back().duration = std::numeric_limits<double>::quiet_NaN();
    if constexpr (Mistake == 9) r.ops.back().resources.back() = 1 << 30;
    if constexpr (Mistake == 10) r.ops.back().piece_bytes = -5;
    if constexpr (Mistake == 11) r.ops.back().latency_s += 1e-3;
    if constexpr (Mistake == 12) {  // a NIC transfer cut in two, the second piece said to take no time
      for (std::size_t i = 0; i < r.ops.size(); ++i)
        if (r.ops[i].kind == transfer_kind::point_to_point && r.ops[i].region[0].size() > 1) {
          op second = r.ops[i];
          const index_t mid = r.ops[i].region[0].lo + r.ops[i].region[0].size() / 2;
          r.ops[i].region[0].hi = second.region[0].lo = mid;
          r.ops[i].bytes = r.ops[i].region.volume() * in.plans[0]->element_bytes;
          r.ops[i].duration = in.net->transfer_time(r.ops[i].sender, r.ops[i].receivers[0], r.ops[i].bytes);
          second.bytes = second.region.volume() * in.plans[0]->element_bytes;
          second.duration = 0;
          r.ops.insert(r.ops.begin() + static_cast<std::ptrdiff_t>(i) + 1, second);
          break;
        }
    }
    if constexpr (Mistake == 13) r.bound_s = std::numeric_limits<double>::infinity();
    if constexpr (Mistake == 14) r.bound_s = 1e9;  // a "lower bound" above the schedule it bounds
    return r;
  }
};

template <int Mistake>
std::string error_of_broken() {
  // Two replicas on two hosts, each destination tile needed by both devices of a host: every
  // unit has two senders, and an all-gather step after each of its NIC transfers.
  plan p = make_plan(dynamic_layout(parse_mesh("2"), dynamic_spec("R,R"), dynamic_shape{8, 6}),
                     dynamic_layout(parse_mesh("2x2"), dynamic_spec("R,S0"), dynamic_shape{8, 6}));
  instance in = make_instance(p, network::alpa_testbed(default_hosts(p.device_count, 2, 2)), send_recv_allgather{}, true);
  return thrown([&] { solve(in, broken_solver<Mistake>{}); });
}
}  // namespace

TEST_CASE("hardening: solve() refuses a solver's wrong answer") {
  CHECK(error_of_broken<0>().find("solver 'broken' returned an invalid schedule") != std::string::npos);
  CHECK(error_of_broken<0>().find("missing") != std::string::npos);
  CHECK(error_of_broken<1>().find("exactly once") != std::string::npos);
  CHECK(error_of_broken<2>().find("before the op it waits for") != std::string::npos);
  CHECK(error_of_broken<3>().find("sender") != std::string::npos);
  CHECK(error_of_broken<4>().find("outside its region") != std::string::npos);
  CHECK(error_of_broken<5>().find("names no unit") != std::string::npos);
  CHECK(error_of_broken<6>().find("exactly once") != std::string::npos);
  CHECK(error_of_broken<7>().find("changes its modelled duration") != std::string::npos);
  CHECK(error_of_broken<8>().find("changes its modelled duration") != std::string::npos);
  CHECK(error_of_broken<9>().find("changes its model (the resources") != std::string::npos);
  CHECK(error_of_broken<10>().find("changes its model (the resources") != std::string::npos);
  CHECK(error_of_broken<11>().find("changes its model (the resources") != std::string::npos);
  CHECK(error_of_broken<12>().find("has a piece not modelled as the network's transfer of its bytes") != std::string::npos);
  CHECK(error_of_broken<13>() == "solver 'broken' returned a lower bound of inf s: a bound must be a finite number of seconds, at least 0");
  CHECK(error_of_broken<14>().find("returned a lower bound of 1e+09 s, above the makespan of its own schedule") != std::string::npos);
}

TEST_CASE("hardening: every solver keeps its time limit on a large instance, first construction included") {
  // 256 -> 256 devices transposed: 65,536 units (alpa_dfs recursed once per unit and overflowed
  // the stack; its first dive, alpa_greedy and ilp ignored the limit). Generous bounds: this is a
  // regression test, not a benchmark.
  plan p = make_plan(dynamic_layout(parse_mesh("256"), dynamic_spec("S0,R"), dynamic_shape{4096, 4096}),
                     dynamic_layout(parse_mesh("256"), dynamic_spec("R,S0"), dynamic_shape{4096, 4096}),
                     {.devices = device_map::same()});
  instance in = make_instance(p, network::alpa_testbed(default_hosts(p.device_count, 256, 4)), send_recv{});
  REQUIRE(in.units.size() == 65536);
  auto timed = [&](auto solver) {
    const auto t0 = std::chrono::steady_clock::now();
    schedule s = solve(in, solver, {.time_limit_s = 0.2});
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    INFO(decltype(solver)::name, " took ", seconds, " s");
    CHECK(seconds < 10);  // bound, check and simulation included
    CHECK(s.transfers.size() >= in.units.size());
  };
  timed(alpa_dfs{});
  timed(alpa_greedy{});
  timed(greedy{});
  timed(branch_and_bound{});
  timed(open_shop{});
}

TEST_CASE("hardening: the checked host pack, unpack and copy_region refuse a tile whose size wraps") {
  // 2^32 x 2^32 elements of 1 byte came to 0 bytes, so a 16-byte buffer passed the size check and
  // pack read 2^63 bytes past it (SIGSEGV).
  box huge;
  huge.rank = 2;
  huge[0] = {0, index_t{1} << 32};
  huge[1] = {0, index_t{1} << 32};
  box small;
  small.rank = 2;
  small[0] = {0, 2};
  small[1] = {0, 2};
  std::vector<std::byte> a(16), b(16);
  CHECK_THROWS_WITH_AS(pack(huge, a, small, 1, b), doctest::Contains("no size that fits"), error);
  CHECK_THROWS_WITH_AS(unpack(a, huge, b, small, 1), doctest::Contains("no size that fits"), error);
  CHECK_THROWS_WITH_AS(copy_region(huge, a, small, b, small, 1), doctest::Contains("no size that fits"), error);
  CHECK_THROWS_WITH_AS(copy_region(small, a, huge, b, small, 1), doctest::Contains("no size that fits"), error);
  // 2^31 x 2^31 elements of 4 bytes: 2^64 bytes, one past size_t.
  huge[0] = {0, index_t{1} << 31};
  huge[1] = {0, index_t{1} << 31};
  CHECK_THROWS_AS(pack(huge, a, small, 4, b), error);
  // Sizes that fit still pass: 2x2 of 4 bytes in 16; an empty tile is 0 bytes whichever dim is
  // empty (dims multiplied before the empty one overflowed).
  CHECK_NOTHROW(pack(small, a, small, 4, b));
  box empty;
  empty.rank = 2;
  empty[0] = {0, index_t{1} << 62};
  empty[1] = {0, 0};
  CHECK(detail::checked_tile_bytes(empty, 8, "pack") == 0);
  std::swap(empty[0], empty[1]);
  CHECK(detail::checked_tile_bytes(empty, 8, "pack") == 0);
}

// A spec_value built by hand indexed a bool[8] by its axes before checking them (SEGV at axis 10^6).
TEST_CASE("hardening: a spec in value form is checked before its axes index anything") {
  spec_value v;
  v.rank = 1;
  v.dims[0].axis_count = 1;
  v.dims[0].axes[0] = 1'000'000;
  CHECK(thrown([&] { dynamic_spec{v}; }) == "spec entry 0 names mesh axis 1000000, outside 0..max_rank-1");
  v.dims[0].axes[0] = -1;
  CHECK(thrown([&] { dynamic_spec{v}; }) == "spec entry 0 names mesh axis -1, outside 0..max_rank-1");
  v.dims[0].axis_count = 99;
  CHECK(thrown([&] { dynamic_spec{v}; }) == "spec entry 0 lists a bad number of mesh axes (99)");
  v.dims[0].axis_count = 0;
  for (int rank : {-1, max_rank + 1}) {
    v.rank = rank;
    CHECK(thrown([&] { dynamic_spec{v}; }).find("a spec has " + std::to_string(rank) + " entries") == 0);
  }
  v.rank = 2;
  v.dims[0] = {1, {0}};
  v.dims[1] = {1, {0}};
  CHECK(thrown([&] { dynamic_spec{v}; }) == "spec one mesh axis is used twice");
  v.dims[1] = {1, {1}};
  CHECK(dynamic_spec{v}.to_string() == "S0,S1");
}

// Text from a spec is shown with control characters escaped and cut short, as text from a shape is.
TEST_CASE("hardening: a bad spec's text is printable in the message") {
  const std::string message = thrown([] { dynamic_spec("S0,\x1b[2J" + std::string(300, 'R')); });
  CHECK(message.find("\\x1b[2J") != std::string::npos);
  CHECK(message.find('\x1b') == std::string::npos);
  CHECK(message.size() < 300);  // the text and the bad token, 60 characters each at most
}

// A run-time extent of an unsigned type past 2^63 - 1 was reported as a negative number.
TEST_CASE("hardening: unsigned extents past 2^63 - 1 are named as given") {
  CHECK(thrown([] { shape<dyn>{std::uint64_t(-1)}; }) == "extent 18446744073709551615 does not fit in 64 bits");
  CHECK(thrown([] { mesh<dyn, 2>{std::uint64_t{1} << 63}; }) == "extent 9223372036854775808 does not fit in 64 bits");
  CHECK(thrown([] { shape<dyn>{-3}; }) == "extent -3 is negative");
  CHECK(shape<dyn, 4>{std::size_t{5}}.extent(0) == 5);
}

TEST_CASE("hardening: make_instance stops at the deadline it is given") {
  // Automatic sharding builds instances of 2^18 triples for one cost (seconds each): its time
  // limit reaches into the building.
  plan p = make_plan(dynamic_layout(parse_mesh("4x4"), dynamic_spec("S0,R"), dynamic_shape{64, 64}),
                     dynamic_layout(parse_mesh("4x4"), dynamic_spec("R,S1"), dynamic_shape{64, 64}),
                     {.devices = device_map::same()});
  const network net = network::alpa_testbed(default_hosts(p.device_count, 4, 4));
  const meshcast::detail::deadline passed(0), later(60);
  CHECK_THROWS_AS(make_instance(p, net, send_recv{}, {.split_replicas = true, .stop = &passed}), time_limit_reached);
  CHECK(make_instance(p, net, send_recv{}, {.split_replicas = true, .stop = &later}).units.size() ==
        make_instance(p, net, send_recv{}, true).units.size());
}

TEST_CASE("hardening: a payload fraction near 0 is refused, not turned into absurd durations") {
  network net = network::alpa_testbed({0, 1});
  for (double bad : {0.0, 1e-300, 5e-324, 9.99e-4, 1.0000001, -0.5, std::numeric_limits<double>::quiet_NaN()}) {
    CAPTURE(bad);
    CHECK(thrown([&] { net.with_payload_fraction(bad); }).find("must be a number in [0.001, 1]") != std::string::npos);
  }
  CHECK(net.with_payload_fraction(1e-3).payload_fraction() == 1e-3);
  CHECK(std::isfinite(net.transfer_time(0, 1, big)));
  CHECK(thrown([] { network_from(reshard_options{.nic_efficiency = 1e-300}, {0, 1}); }).find("payload fraction") !=
        std::string::npos);
}

TEST_CASE("hardening: a network that describes fewer devices than a plan is refused wherever both meet") {
  // 4 devices on 2 hosts of 2; the network knows 2 devices only (was a read past its vectors).
  const std::vector<plan> plans{
      make_plan(dynamic_layout(parse_mesh("2"), dynamic_spec("S0"), dynamic_shape{8}),
                dynamic_layout(parse_mesh("2"), dynamic_spec("R"), dynamic_shape{8})),
      make_plan(dynamic_layout(parse_mesh("2"), dynamic_spec("R"), dynamic_shape{8}),
                dynamic_layout(parse_mesh("2"), dynamic_spec("S0"), dynamic_shape{8}))};
  REQUIRE(plans[0].device_count == 4);
  const network small = network::alpa_testbed({0, 0});
  const std::string says = "the network describes 2 devices but a plan uses 4";
  CHECK(thrown([&] { physical_bound(plans[0], small); }) == says);
  CHECK(thrown([&] { busiest_nic_bound_s(plans, small); }) == says);
  CHECK(thrown([&] { solve_batch(plans, small, send_recv{}, greedy{}); }) == says);
  CHECK(thrown([&] { solve_batch(plans, small, auto_strategy{}, greedy{}, {.bucket_bytes = 64}); }) == says);
  CHECK(thrown([&] { make_instance(plans[0], small, send_recv{}); }) == says);
  const network enough = network::alpa_testbed({0, 0, 1, 1});
  CHECK(physical_bound(plans[0], enough) > 0);
  CHECK(busiest_nic_bound_s(plans, enough) > 0);
  CHECK(solve_batch(plans, enough, auto_strategy{}, greedy{}).makespan_s > 0);
}

TEST_CASE("hardening: a network's hosts are at most its devices, so its cost grows with devices, not host ids") {
  // Host 2^20 - 1 for the last of 4 devices made every solve walk a million hosts (> 100 s under
  // a 0.1 s time limit).
  CHECK(thrown([] { network::uniform({0, 1, 2, 1048575}, 1e9, 1e9, 1e-6); }) ==
        "device 3 is on host 1048575 but the network has 4 devices; number hosts densely (0, 1, ...), at most one per device");
  CHECK(thrown([] { network({0, 1}, std::vector<host_nics>(3, {1, 1e9, 1e9}), 1e9, 1e-6); }) ==
        "the network describes 3 hosts for 2 devices; number hosts densely, at most one per device");
  CHECK(thrown([] { network_from(reshard_options{}, {0, 5}); }).find("number hosts densely") != std::string::npos);
  CHECK(network::uniform({0, 0, 2, 2}, 1e9, 1e9, 1e-6).host_count() == 3);  // a gap is allowed while hosts <= devices
  CHECK(network::uniform({}, 1e9, 1e9, 1e-6).host_count() == 0);
}

TEST_CASE("hardening: shards that share memory where one is written are found, whatever their order") {
  using detail::shared_memory_problem;
  std::vector<std::byte> m(64);
  auto ro = [&](std::size_t at, std::size_t n) { return std::span<const std::byte>(m.data() + at, n); };
  auto rw = [&](std::size_t at, std::size_t n) { return std::span<std::byte>(m.data() + at, n); };
  std::vector<detail::shard_range> scratch;
  auto problem = [&](std::vector<std::span<const std::byte>> in, std::vector<std::span<std::byte>> out) {
    return shared_memory_problem(std::span<const std::span<const std::byte>>(in), std::span<const std::span<std::byte>>(out),
                                 [&](std::size_t k) { return in[k].size(); }, [&](std::size_t k) { return out[k].size(); },
                                 scratch);
  };
  CHECK(problem({ro(0, 8)}, {rw(4, 8)}) == "the destination shard shares memory with the source shard; give every destination "
                                           "shard memory of its own");
  CHECK(problem({ro(0, 8)}, {rw(8, 8)}).empty());  // adjacent, not shared
  CHECK(problem({ro(0, 8), ro(0, 8)}, {rw(8, 8), rw(16, 8)}).empty());  // sources may share (tied weights)
  CHECK(problem({ro(0, 8), ro(40, 8)}, {rw(20, 8), rw(24, 8)}) ==
        "the destination shard of tensor 0 shares memory with the destination shard of tensor 1; give every destination "
        "shard memory of its own");
  CHECK(problem({ro(0, 0)}, {rw(0, 8)}).empty());  // an empty shard holds no memory
  // Against every pair, over random layouts of 2..5 tensors in 64 bytes.
  std::uint64_t x = 88172645463325252ULL;
  auto next = [&](std::size_t n) { return static_cast<std::size_t>((x ^= x << 13, x ^= x >> 7, x ^= x << 17) % n); };
  for (int round = 0; round < 2000; ++round) {
    const std::size_t n = 2 + next(4);
    std::vector<std::span<const std::byte>> in;
    std::vector<std::span<std::byte>> out;
    for (std::size_t k = 0; k < n; ++k) {
      const std::size_t a = next(60), b = next(60);
      in.push_back(ro(a, next(64 - a)));
      out.push_back(rw(b, next(64 - b)));
    }
    bool shared = false;
    auto meet = [](auto p, auto q) { return !p.empty() && !q.empty() && p.data() < q.data() + q.size() && q.data() < p.data() + p.size(); };
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j < n; ++j) shared = shared || meet(out[i], in[j]) || (i != j && meet(out[i], out[j]));
    CAPTURE(round);
    CHECK(problem(in, out).empty() == !shared);
  }
}

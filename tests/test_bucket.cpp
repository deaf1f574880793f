// Bucketing (bucket.hpp): a batch's messages between two devices travel together. Over batches of
// many small tensors: every piece still goes exactly once, buckets stay under their size, waits
// point back, the executor's checks accept the result, and the prediction only shortens.
#include <doctest/doctest.h>

#include <meshcast/meshcast.hpp>

#include <cmath>
#include <limits>
#include <memory>
#include <map>
#include <tuple>
#include <vector>

using namespace meshcast;

namespace {
// Every (tensor, task, region, receiver) a schedule delivers, with how often.
std::map<std::tuple<int, index_t, std::string, index_t>, int> deliveries(const schedule& s) {
  std::map<std::tuple<int, index_t, std::string, index_t>, int> out;
  for (const transfer& t : s.transfers) {
    for (index_t r : t.receivers) {
      ++out[{t.tensor, t.task, t.region.to_string(), r}];
      for (const transfer_part& q : t.parts) ++out[{q.tensor, q.task, q.region.to_string(), r}];
    }
  }
  return out;
}
}  // namespace

TEST_CASE("bucketed: every piece once, buckets within their size, a prediction no longer") {
  for (int tensors : {2, 7, 24})
    for (execution mode : {execution::ordered, execution::concurrent}) {
      CAPTURE(tensors);
      std::vector<plan> plans;
      for (int k = 0; k < tensors; ++k) {
        const dynamic_layout src(dynamic_mesh{2, 2}, dynamic_spec(k % 2 ? "S0,S1" : "S1,R"), dynamic_shape{8 + k, 6});
        const dynamic_layout dst(dynamic_mesh{4}, dynamic_spec(k % 3 ? "R,S0" : "S0,R"), dynamic_shape{8 + k, 6});
        plans.push_back(make_plan(src, dst, {.element_bytes = 4, .device_count = 8}));
      }
      const network net = network::uniform(default_hosts(8, 4, 2), network::gbit_per_s(400), network::gbit_per_s(800), 10e-6, 1);
      const schedule whole = solve_batch(plans, net, send_recv{}, greedy{}, {.mode = mode, .bucket_bytes = 0});
      for (std::size_t limit : {std::size_t{64}, std::size_t{1000}, bucket_bytes(net)}) {
        CAPTURE(limit);
        const schedule b = bucketed(whole, net, limit);
        CHECK(deliveries(b) == deliveries(whole));
        CHECK_NOTHROW(check_schedule_fits(plans, b));
        for (std::size_t i = 0; i < b.transfers.size(); ++i) {
          const transfer& t = b.transfers[i];
          if (!t.parts.empty()) {
            CHECK(static_cast<std::size_t>(t.bytes) <= limit);
            CHECK(t.kind == transfer_kind::point_to_point);
          }
          for (std::int32_t w : t.waits_for) CHECK(static_cast<std::size_t>(w) < i);
        }
        CHECK(b.makespan_s >= b.physical_bound_s * (1 - 1e-12));
        // Small tensors (192-744 bytes) share their devices: a limit of 1000 bytes or more merges some.
        if (limit >= 1000) CHECK(b.transfers.size() < whole.transfers.size());
        const schedule kept = with_buckets(whole, net, limit);
        CHECK(kept.makespan_s <= whole.makespan_s);
      }
      // Many small tensors at 400 Gbit/s: latency is most of their time, and buckets save it.
      if (tensors == 24 && mode == execution::ordered) {
        const schedule auto_sized = solve_batch(plans, net, send_recv{}, greedy{}, {.mode = mode});
        CHECK(auto_sized.makespan_s < whole.makespan_s);
        CHECK(auto_sized.transfers.size() < whole.transfers.size());
      }
    }
}

TEST_CASE("bucket_bytes: sized to the network and the batch, within [256 KiB, 64 MiB], half a staging cap at most") {
  const auto hosts = default_hosts(4, 2, 2);
  const network slow = network::uniform(hosts, network::gbit_per_s(0.2), network::gbit_per_s(800), 40e-6, 1);
  const network fast = network::uniform(hosts, network::gbit_per_s(400), network::gbit_per_s(800), 10e-6, 1);
  CHECK(bucket_bytes(slow) == std::size_t{256} << 10);
  CHECK(bucket_bytes(fast) >= 31999999);  // 64 x 50 GB/s x 10 us
  CHECK(bucket_bytes(fast) <= 32000000);
  CHECK(bucket_bytes(fast, std::size_t{1} << 20) == std::size_t{512} << 10);
  // A batch whose busiest NIC works 1 s: about 1024 buckets of 48.8 MB; 10 s: the 64 MiB ceiling.
  CHECK(bucket_bytes(fast, 0, 1.0) >= 48828124);
  CHECK(bucket_bytes(fast, 0, 1.0) <= 48828125);
  CHECK(bucket_bytes(fast, 0, 10.0) == std::size_t{64} << 20);
  CHECK(bucket_bytes(fast, std::size_t{16} << 20, 10.0) == std::size_t{8} << 20);
  CHECK(bucket_bytes(slow, 0, std::numeric_limits<double>::infinity()) == std::size_t{256} << 10);
}

// Bucketing modelled anew every transfer with parts once anything merged: a bundled all-gather
// forward (intra-host, two receivers) got a chain's model, which holds a NIC, and a piece size, and
// the executor's check refused the schedule ("has a piece size but is no chain").
TEST_CASE("bucketed: a bundle that was not merged keeps its own model") {
  auto layout_of = [](std::vector<index_t> m, const char* spec) {
    return dynamic_layout(dynamic_mesh(m), dynamic_spec(spec), dynamic_shape{4, 13});
  };
  std::vector<plan> plans{make_plan(layout_of({2, 4}, "S1,R"), layout_of({4, 3}, "R,S0"), {.element_bytes = 6}),
                          make_plan(layout_of({2, 4}, "R,R"), layout_of({4, 3}, "R,S01"), {.element_bytes = 6}),
                          make_plan(layout_of({2, 4}, "S1,R"), layout_of({4, 3}, "R,S0"), {.element_bytes = 6})};
  std::vector<index_t> hosts{0, 0, 0, 1, 1, 1, 2, 2, 3, 3, 3, 4, 4, 4, 5, 5, 5, 6, 6, 6};
  std::vector<host_nics> nics{{1, 1.3e7, 2.1e7}, {1, 6e6, 3.2e7}, {2, 2.5e7, 2.3e7}, {1, 4e7, 1.2e7},
                              {1, 2.2e7, 1e6},   {2, 3.2e7, 2.2e7}, {1, 4e6, 1.7e7}};
  network net(hosts, nics, 5e10, 12e-6);
  net.with_payload_fraction(0.9).with_eager_bytes(1 << 20);
  const resource_space rs{net.port_count(), net.device_count()};
  int bundled_forwards = 0;
  for (execution mode : {execution::ordered, execution::concurrent}) {
    CAPTURE(to_string(mode));
    const schedule s = solve_batch(std::span<const plan>(plans), net, auto_strategy{}, greedy{},
                                   {.split_replicas = true, .mode = mode});
    CHECK_NOTHROW(check_schedule_fits(plans, s));
    for (std::size_t i = 0; i < s.transfers.size(); ++i)
      if (s.transfers[i].kind == transfer_kind::forward && !s.transfers[i].parts.empty()) {
        ++bundled_forwards;
        CHECK(s.transfers[i].piece_bytes == 0);
        CHECK_FALSE(s.model[i].uses_nic(rs));
      }
  }
  CHECK(bundled_forwards > 0);  // the case this test is about arises
}

// A bundle is eager by the smallest message the executor sends for it (bundle_messages.hpp): a
// piece where it goes in place, all its bytes where it is packed. tests/mpi/bundle_messages.cpp
// runs these buckets and checks the executor acknowledges exactly the eager ones.
TEST_CASE("a bucket or bundle sent piece by piece is eager by its smallest piece; a packed one by its total") {
  const auto net = std::make_shared<const network>(
      network::uniform({0, 1}, network::gbit_per_s(10), 100e9, 10e-6, 1).with_eager_bytes(4096));
  struct sized {
    index_t first_rows, second_rows;  // of 64 int32 columns: 256 bytes a row
    const char* first_destination;    // R,R: whole, contiguous; R,S0 over devices 0 and 1: strided
    bool eager;
  };
  for (const sized c : {sized{4, 4, "R,R", true}, sized{4, 64, "R,R", true}, sized{32, 64, "R,R", false},
                        sized{4, 64, "R,S0", false}}) {
    CAPTURE(c.first_rows);
    CAPTURE(c.second_rows);
    CAPTURE(std::string(c.first_destination));
    const bool split = std::string(c.first_destination) == "R,S0";
    std::vector<std::shared_ptr<const plan>> plans;
    plans.push_back(std::make_shared<const plan>(make_plan(
        dynamic_layout(dynamic_mesh{1}, dynamic_spec("R,R"), dynamic_shape{c.first_rows, 64}),
        dynamic_layout(dynamic_mesh{split ? 2 : 1}, dynamic_spec(c.first_destination), dynamic_shape{c.first_rows, 64}),
        {.element_bytes = 4, .devices = device_map::listed(split ? std::vector<index_t>{0, 1} : std::vector<index_t>{1}),
         .device_count = 2})));
    plans.push_back(std::make_shared<const plan>(make_plan(
        dynamic_layout(dynamic_mesh{1}, dynamic_spec("R,R"), dynamic_shape{c.second_rows, 64}),
        dynamic_layout(dynamic_mesh{1}, dynamic_spec("R,R"), dynamic_shape{c.second_rows, 64}),
        {.element_bytes = 4, .devices = device_map::listed({1}), .device_count = 2})));
    auto eager_bundles = [](const auto& transfers, const auto& model_of) {
      std::vector<bool> out;
      for (std::size_t i = 0; i < transfers.size(); ++i)
        if (!transfers[i].parts.empty()) out.push_back(model_of(i).eager);
      return out;
    };
    // A bucket made after solving, with the batch's plans; without them it is modelled packed.
    const schedule whole = solve_batch(plans, net, send_recv{}, greedy{}, {.mode = execution::ordered, .bucket_bytes = 0});
    const schedule with_plans = bucketed(whole, *net, std::size_t{1} << 20, plans);
    const auto model_of = [&](const schedule& s) { return [&s](std::size_t i) { return s.model[i]; }; };
    CHECK(eager_bundles(with_plans.transfers, model_of(with_plans)) == std::vector<bool>{c.eager});
    const schedule packed = bucketed(whole, *net, std::size_t{1} << 20);
    for (std::size_t i = 0; i < packed.transfers.size(); ++i)
      if (!packed.transfers[i].parts.empty()) CHECK(packed.model[i].eager == (packed.transfers[i].bytes <= 4096));
    // A bundle made with the instance: its op's eager flag follows the same rule.
    const instance in = make_instance(plans, net, send_recv{}, {.mode = execution::ordered, .bundle_bytes = std::size_t{1} << 20});
    std::vector<bool> eager;
    for (const unit& u : in.units)
      for (const option& o : u.options)
        for (const op& x : o.ops)
          if (!x.parts.empty() && x.receivers == std::vector<index_t>{1}) eager.push_back(x.eager);
    CHECK(!eager.empty());
    for (bool e : eager) CHECK(e == c.eager);
  }
}

TEST_CASE("goes_eagerly asks the in-place rule only where it matters and answers as the rule does") {
  // The rule as bundle_messages.hpp states it: eager when the smallest message the executor sends
  // (a piece in place, else the whole bundle) fits in an eager message.
  for (std::size_t eager_bytes : {std::size_t{64}, std::size_t{700}, std::size_t{4096}, std::size_t{1} << 20}) {
    CAPTURE(eager_bytes);
    const auto net = std::make_shared<const network>(
        network::uniform(default_hosts(8, 4, 2), network::gbit_per_s(100), network::gbit_per_s(800), 10e-6, 1)
            .with_eager_bytes(eager_bytes));
    for (bool all_rows : {true, false}) {
    CAPTURE(all_rows);
    std::vector<std::shared_ptr<const plan>> plans;
    for (int k = 0; k < 12; ++k) {  // small and large tensors; tiles of whole rows (contiguous) or strided
      const index_t rows = k % 3 == 0 ? 512 : 4 + k;
      const bool rows_src = all_rows || k % 2, rows_dst = all_rows || k % 4 < 2;
      const dynamic_layout src(dynamic_mesh{2, 2}, dynamic_spec(rows_src ? "S0,R" : "R,S1"), dynamic_shape{rows, 16});
      const dynamic_layout dst(dynamic_mesh{4}, dynamic_spec(rows_dst ? "S0,R" : "R,S0"), dynamic_shape{rows, 16});
      const device_map devices = k % 5 == 0 ? device_map::listed({7, 5, 6, 4}) : device_map::disjoint();
      plans.push_back(std::make_shared<const plan>(make_plan(src, dst, {.element_bytes = 4, .devices = devices, .device_count = 8})));
    }
    const auto plan_of = detail::plan_in(plans);
    const auto rule = [&](const transfer& t, int connection) {
      return connection >= 0 && static_cast<std::size_t>(smallest_message_bytes(plan_of, t)) <= eager_bytes;
    };
    std::size_t bundles = 0;
    const auto check_ops = [&](const auto& st) {
      const instance in = make_instance(plans, net, st, {.mode = execution::ordered, .bundle_bytes = std::size_t{1} << 16});
      for (const unit& u : in.units)
        for (const option& o : u.options)
          for (const op& x : o.ops) {
            bundles += !x.parts.empty();
            CHECK(goes_eagerly(plan_of, x, x.connection, *net) == rule(x, x.connection));
            if (!x.parts.empty()) CHECK(x.eager == rule(x, x.connection));
          }
    };
    check_ops(send_recv{});
    check_ops(send_recv_allgather{});
    CHECK(bundles > 0);
    }
  }
  // A plan finds a device's tile at once where its mesh's devices are consecutive ids, by search
  // where they are listed in another order: the same tile either way.
  const dynamic_layout l(dynamic_mesh{2, 2}, dynamic_spec("S0,S1"), dynamic_shape{8, 6});
  for (const std::vector<index_t>& ids : {std::vector<index_t>{4, 5, 6, 7}, std::vector<index_t>{7, 5, 6, 4},
                                          std::vector<index_t>{4, 6, 5, 7}, std::vector<index_t>{5, 4, 7, 6}}) {
    const plan p = make_plan(l, l, {.element_bytes = 4, .devices = device_map::listed(ids), .device_count = 8});
    for (std::size_t j = 0; j < ids.size(); ++j) CHECK(p.destination_tile(ids[j]) == l.tile(static_cast<index_t>(j)));
    for (index_t d : {0, 3}) CHECK(p.destination_tile(d).volume() == 0);
    for (index_t d = 0; d < 4; ++d) CHECK(p.source_tile(d) == l.tile(d));
    CHECK(p.source_tile(4).volume() == 0);
  }
}

TEST_CASE("bundles and buckets never sum bytes past 64 bits") {
  // Two tensors of 2^62 bytes under a 2^63-byte limit: their sum once wrapped to -2^63 bytes, and
  // the schedule predicted 0 s.
  const layout_value l{{1, {1}}, dynamic_spec("R").value(), {1, {index_t{1} << 60}}};
  const std::vector<plan> plans{make_plan(l, l, {.element_bytes = 4}), make_plan(l, l, {.element_bytes = 4})};
  REQUIRE(plans[0].tasks.front().bytes == index_t{1} << 62);
  const network net = network::uniform({0, 1}, 1e9, 1e10, 1e-5);
  const std::size_t limit = std::size_t{1} << 63;
  const double both_s = 2 * std::ldexp(1.0, 62) / 1e9;  // the two tensors, one after the other
  std::vector<std::shared_ptr<const plan>> shared;
  for (const plan& p : plans) shared.push_back(std::make_shared<const plan>(p));
  const std::vector<bundle> bundles = make_bundles(shared, net, limit, false, 8);
  CHECK(bundles.size() == 2);
  for (const bundle& b : bundles) CHECK(b.bytes == index_t{1} << 62);
  const schedule bundled = solve_batch(plans, net, send_recv{}, greedy{}, {.bucket_bytes = limit});
  CHECK(bundled.transfers.size() == 2);
  CHECK(bundled.makespan_s >= both_s);
  const schedule apart = solve_batch(plans, net, send_recv{}, greedy{}, {.bucket_bytes = 0});
  REQUIRE(apart.transfers.size() == 2);
  const schedule b = bucketed(apart, net, limit, shared);
  CHECK(b.transfers.size() == 2);
  for (const transfer& t : b.transfers) CHECK(t.bytes == index_t{1} << 62);
  CHECK(b.makespan_s >= both_s);
}

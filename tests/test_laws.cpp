// Laws over whole domains: static, mixed and dynamic forms of one layout plan alike; the wire
// form of a schedule round-trips; packing merges runs exactly as element-by-element enumeration
// would, and unpack(pack(x)) == x; under auto, replica splitting never loses to none.
#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include <meshcast/meshcast.hpp>

#include "support/random_layouts.hpp"

using namespace meshcast;

namespace {
bool same_plan(const plan& a, const plan& b) {
  if (a.tasks.size() != b.tasks.size() || a.device_count != b.device_count || a.dst_devices != b.dst_devices) return false;
  for (std::size_t i = 0; i < a.tasks.size(); ++i) {
    const send_task &x = a.tasks[i], &y = b.tasks[i];
    if (!(x.region == y.region) || x.bytes != y.bytes) return false;
    auto sa = a.senders(i), sb = b.senders(i), ra = a.receivers(i), rb = b.receivers(i);
    if (!std::equal(sa.begin(), sa.end(), sb.begin(), sb.end()) || !std::equal(ra.begin(), ra.end(), rb.begin(), rb.end()))
      return false;
  }
  return true;
}

// One layout in three forms: all static, mixed (first mesh axis and first dim dynamic), dynamic.
template <index_t M0, index_t M1, class Spec, index_t N0, index_t N1>
struct forms {
  static constexpr layout<mesh<M0, M1>, Spec, shape<N0, N1>> fixed{};
  static auto mixed() { return layout(mesh<dyn, M1>{M0}, Spec{}, shape<dyn, N1>{N0}); }
  static auto dynamic() {
    return dynamic_layout(dynamic_mesh{M0, M1}, dynamic_spec(Spec::value()), dynamic_shape{N0, N1});
  }
};
using f1 = forms<2, 4, spec<S<0>, R>, 13, 7>;
using f2 = forms<2, 4, spec<R, S<1, 0>>, 13, 7>;
using f3 = forms<3, 2, spec<S<1>, S<0>>, 13, 7>;
using f4 = forms<1, 3, spec<R, R>, 13, 7>;
}  // namespace

TEST_CASE_TEMPLATE("laws: static, mixed and dynamic forms of a layout give identical plans", Src, f1, f2, f3, f4) {
  auto check_against = [&](auto dst_forms) {
    using D = decltype(dst_forms);
    for (const plan_options& o : {plan_options{}, plan_options{.element_bytes = 8}}) {
      const plan reference = make_plan(Src::dynamic(), D::dynamic(), o);
      CHECK(same_plan(make_plan(Src::fixed, D::fixed, o), reference));
      CHECK(same_plan(make_plan(Src::fixed, D::mixed(), o), reference));
      CHECK(same_plan(make_plan(Src::mixed(), D::fixed, o), reference));
      CHECK(same_plan(make_plan(Src::mixed(), D::dynamic(), o), reference));
      CHECK(same_plan(make_plan(Src::dynamic(), D::fixed, o), reference));
    }
  };
  check_against(f1{});
  check_against(f2{});
  check_against(f3{});
  check_against(f4{});
}

TEST_CASE("laws: a schedule's wire form round-trips, and a damaged one is an error") {
  meshcast::testing::random_layout_source gen{std::mt19937_64(11)};
  for (int c = 0; c < 40; ++c) {
    const int rank = gen.uniform(1, 3);
    dynamic_shape sh = gen.random_shape(rank);
    dynamic_mesh sm = gen.random_mesh(), dm = gen.random_mesh();
    plan p = make_plan(dynamic_layout(sm, dynamic_spec(gen.random_spec(sm.rank(), rank)), sh),
                       dynamic_layout(dm, dynamic_spec(gen.random_spec(dm.rank(), rank)), sh));
    network net = network::alpa_testbed(default_hosts(p.device_count, sm.size(), gen.uniform(1, 3)));
    for (execution mode : {execution::ordered, execution::concurrent}) {
      schedule s = c % 3 == 0   ? solve(make_instance(p, net, broadcast{}, {.mode = mode}), greedy{})
                   : c % 3 == 1 ? solve(make_instance(p, net, send_recv_allgather{}, {.split_replicas = true, .mode = mode}), open_shop{})
                                : solve(make_instance(p, net, send_recv{}, {.mode = mode}), naive{});
      const auto words = to_wire(s);
      CHECK(from_wire(words) == s);
      CHECK(fingerprint(p, from_wire(words)) == fingerprint(p, s));
      // Every truncation, and a garbled count, is refused with meshcast::error.
      for (std::size_t cut = 0; cut < words.size(); cut += 1 + words.size() / 16) {
        std::vector<std::int64_t> shorter(words.begin(), words.begin() + static_cast<std::ptrdiff_t>(cut));
        CHECK_THROWS_AS(from_wire(shorter), error);
      }
      std::vector<std::int64_t> garbled = words;
      garbled[8] = std::numeric_limits<std::int64_t>::max();  // the solver name's length
      CHECK_THROWS_AS(from_wire(garbled), error);
    }
  }
}

TEST_CASE("laws: run merging equals element-by-element enumeration; unpack(pack(x)) == x; copy_region copies exactly") {
  std::mt19937_64 rng(5);
  auto pick = [&](index_t lo, index_t hi) { return std::uniform_int_distribution<index_t>(lo, hi)(rng); };
  for (int c = 0; c < 400; ++c) {
    const int rank = static_cast<int>(pick(1, 4));
    const std::size_t eb = static_cast<std::size_t>(pick(1, 3)) * 2;
    box tile, region, other;
    tile.rank = region.rank = other.rank = rank;
    for (int d = 0; d < rank; ++d) {
      tile[d] = {pick(0, 5), 0};
      tile[d].hi = tile[d].lo + pick(1, 6);
      region[d].lo = pick(tile[d].lo, tile[d].hi - 1);
      region[d].hi = pick(region[d].lo + 1, tile[d].hi);
      if (pick(0, 2) == 0) region[d] = tile[d];  // dims spanned whole let runs merge
      other[d] = {region[d].lo - pick(0, 2), region[d].hi + pick(0, 2)};
    }
    // The element-by-element offsets of the region inside the tile, row-major.
    std::vector<std::size_t> expect;
    std::vector<index_t> idx(static_cast<std::size_t>(rank));
    for (int d = 0; d < rank; ++d) idx[static_cast<std::size_t>(d)] = region[d].lo;
    while (true) {
      std::size_t off = 0;
      for (int d = 0; d < rank; ++d) off = off * static_cast<std::size_t>(tile[d].size()) + static_cast<std::size_t>(idx[static_cast<std::size_t>(d)] - tile[d].lo);
      expect.push_back(off * eb);
      int d = rank - 1;
      while (d >= 0 && ++idx[static_cast<std::size_t>(d)] == region[d].hi) idx[static_cast<std::size_t>(d)] = region[d].lo, --d;
      if (d < 0) break;
    }
    std::vector<std::size_t> runs, blocks;
    detail::for_each_run(tile, region, eb, [&](std::size_t offset, std::size_t run) {
      for (std::size_t b = 0; b < run; b += eb) runs.push_back(offset + b);
    });
    detail::for_each_block(tile, region, eb, [&](std::size_t offset, std::size_t width, std::size_t height, std::size_t pitch) {
      for (std::size_t r = 0; r < height; ++r)
        for (std::size_t b = 0; b < width; b += eb) blocks.push_back(offset + r * pitch + b);
    });
    CHECK(runs == expect);
    CHECK(blocks == expect);
    // unpack(pack(x)) restores the region and leaves the rest of the tile alone.
    std::vector<std::byte> x(tile_bytes(tile, eb)), packed(tile_bytes(region, eb)), y(x.size(), std::byte{0x33});
    for (auto& b : x) b = static_cast<std::byte>(rng());
    pack(tile, x, region, eb, packed);
    unpack(packed, tile, y, region, eb);
    for (std::size_t k = 0; k < expect.size(); ++k)
      CHECK(std::equal(x.begin() + static_cast<std::ptrdiff_t>(expect[k]), x.begin() + static_cast<std::ptrdiff_t>(expect[k] + eb),
                       y.begin() + static_cast<std::ptrdiff_t>(expect[k])));
    std::size_t untouched = 0;
    for (auto b : y) untouched += b == std::byte{0x33};
    CHECK(untouched >= y.size() - expect.size() * eb);
    // copy_region into a tile of another extent equals copying element by element.
    std::vector<std::byte> z(tile_bytes(other, eb), std::byte{0});
    copy_region(tile, x, other, z, region, eb);
    std::vector<std::byte> z2(z.size(), std::byte{0});
    std::size_t k = 0;
    for (int d = 0; d < rank; ++d) idx[static_cast<std::size_t>(d)] = region[d].lo;
    while (true) {
      std::size_t off = 0;
      for (int d = 0; d < rank; ++d) off = off * static_cast<std::size_t>(other[d].size()) + static_cast<std::size_t>(idx[static_cast<std::size_t>(d)] - other[d].lo);
      std::copy_n(x.begin() + static_cast<std::ptrdiff_t>(expect[k++]), eb, z2.begin() + static_cast<std::ptrdiff_t>(off * eb));
      int d = rank - 1;
      while (d >= 0 && ++idx[static_cast<std::size_t>(d)] == region[d].hi) idx[static_cast<std::size_t>(d)] = region[d].lo, --d;
      if (d < 0) break;
    }
    CHECK(z == z2);
  }
}

TEST_CASE("chain_piece_bytes: pieces within [16 KiB, the largest], about an (8 x hops)th of the message") {
  for (std::size_t members : {2, 3, 5, 9, 33})
    for (std::size_t bytes : {std::size_t{1}, std::size_t{1000}, std::size_t{16} << 10, std::size_t{40} << 10, std::size_t{64} << 10,
                              std::size_t{96} << 10, std::size_t{1} << 20, std::size_t{7} << 20, std::size_t{1} << 30}) {
      CAPTURE(members);
      CAPTURE(bytes);
      const std::size_t piece = chain_piece_bytes(bytes, members);
      CHECK(piece >= 1);
      CHECK(piece <= chain_chunk_bytes);
      const std::size_t pieces = (bytes + piece - 1) / piece;
      if (pieces > 1) CHECK(piece >= chain_min_piece_bytes);
      if (pieces > 1) CHECK(pieces > 2);  // two pieces gain nothing over one
      const std::size_t cuts = chain_pieces_per_hop * (members - 1);
      if (bytes >= cuts * chain_min_piece_bytes && bytes <= cuts * chain_chunk_bytes)
        CHECK(pieces == cuts);  // within the clamps, 8 x hops pieces
      if (bytes <= chain_chunk_bytes && pieces == 1) CHECK(piece == bytes);
    }
  static_assert(chain_piece_bytes(96 << 10, 3) == 16 << 10, "96 KiB down a 3-device chain goes in six 16 KiB pieces.");
  static_assert(chain_piece_bytes(1 << 20, 3) == 64 << 10, "1 MiB down a 3-device chain goes in sixteen 64 KiB pieces.");
}

TEST_CASE("chain_piece_bytes over a link: no piece crosses it in less than a latency, none above the larger clamp") {
  for (double gbps : {0.2, 1.0, 10.0, 100.0, 400.0, 3200.0})
    for (double latency_s : {0.0, 1e-6, 10e-6, 100e-6, 1e-3})
      for (std::size_t members : {2, 3, 9, 33})
        for (std::size_t bytes : {std::size_t{1}, std::size_t{64} << 10, std::size_t{1} << 20, std::size_t{64} << 20, std::size_t{1} << 30}) {
          CAPTURE(gbps);
          CAPTURE(latency_s);
          CAPTURE(members);
          CAPTURE(bytes);
          const double bps = network::gbit_per_s(gbps);
          const std::size_t piece = chain_piece_bytes(bytes, members, bps, latency_s);
          const double floor = std::max(double(chain_min_piece_bytes), std::round(bps * latency_s));
          const std::size_t pieces = (bytes + piece - 1) / piece;
          CHECK(piece >= 1);
          CHECK(double(piece) <= std::max(double(chain_chunk_bytes), floor));
          if (pieces > 1) CHECK(double(piece) >= floor);  // a piece takes a latency or more on the wire
          // Two pieces gain nothing over one: only a message above the largest piece is cut in two.
          if (pieces == 2) CHECK(double(piece) == std::max(double(chain_chunk_bytes), floor));
          // Where the link's floor is below 16 KiB, the rule is the plain one.
          if (bps * latency_s <= double(chain_min_piece_bytes)) CHECK(piece == chain_piece_bytes(bytes, members));
        }
  // 400 Gbit/s and 10 us: pieces of 500 kB (a latency's worth), not 16-256 KiB.
  CHECK(chain_piece_bytes(std::size_t{64} << 20, 9, network::gbit_per_s(400), 10e-6) == 500000);
}

TEST_CASE("laws: under auto, replica splitting is never predicted slower than none; the bound stays certified") {
  // Slices pay a latency each: on small tensors a split schedule lost 2.7x to the unsplit one
  // (512x1024 3x4 S1,R -> 4x8 R,S01 at 100 Gbit/s: 1.336 ms against 0.486 ms) before auto
  // solved both.
  const plan seen = make_plan(dynamic_layout(dynamic_mesh{3, 4}, dynamic_spec("S1,R"), dynamic_shape{512, 1024}),
                              dynamic_layout(dynamic_mesh{4, 8}, dynamic_spec("R,S01"), dynamic_shape{512, 1024}),
                              {.element_bytes = 4});
  const network fast = network::uniform(default_hosts(seen.device_count, 12, 4), network::gbit_per_s(100),
                                        network::gbit_per_s(800), 10e-6, 1);
  const schedule seen_split = solve_batch(std::span(&seen, 1), fast, auto_strategy{}, greedy{}, {.split_replicas = true});
  const schedule seen_whole = solve_batch(std::span(&seen, 1), fast, auto_strategy{}, greedy{}, {.split_replicas = false});
  CHECK(seen_split.makespan_s <= seen_whole.makespan_s);
  CHECK(seen_split.makespan_s < 0.5e-3);

  meshcast::testing::random_layout_source gen{std::mt19937_64(23)};
  for (int c = 0; c < 60; ++c) {
    const int rank = gen.uniform(1, 3);
    const dynamic_shape small = gen.random_shape(rank);
    std::vector<index_t> n;
    for (int d = 0; d < rank; ++d) n.push_back(small.extent(d) * (gen.uniform(1, 3) == 1 ? 1 : 97));  // small and large
    const dynamic_shape sh(n);
    dynamic_mesh sm = gen.random_mesh(), dm = gen.random_mesh();
    const plan p = make_plan(dynamic_layout(sm, dynamic_spec(gen.random_spec(sm.rank(), rank)), sh),
                             dynamic_layout(dm, dynamic_spec(gen.random_spec(dm.rank(), rank)), sh), {.element_bytes = 4});
    const double gbps = c % 2 ? 100 : 1;
    const network net = network::uniform(default_hosts(p.device_count, sm.size(), gen.uniform(1, 3)),
                                         network::gbit_per_s(gbps), network::gbit_per_s(800), 10e-6, 1);
    for (execution mode : {execution::ordered, execution::concurrent}) {
      CAPTURE(c);
      const schedule split = solve_batch(std::span(&p, 1), net, auto_strategy{}, greedy{}, {.split_replicas = true, .mode = mode});
      const schedule whole = solve_batch(std::span(&p, 1), net, auto_strategy{}, greedy{}, {.split_replicas = false, .mode = mode});
      CHECK(split.makespan_s <= whole.makespan_s * (1 + 1e-12));
      CHECK(split.lower_bound_s <= split.makespan_s * (1 + 1e-12));
      CHECK(split.lower_bound_s <= whole.lower_bound_s * (1 + 1e-12));
      CHECK_NOTHROW(check_schedule_fits(std::vector<plan>{p}, split));
    }
  }
}

TEST_CASE("laws: product_fits, sum_fits and difference_fits agree with 128-bit arithmetic") {
  // Operands around every power of two and the type's ends, where a hand-written test goes wrong.
  std::vector<std::int64_t> edge{0, 1, -1, 2, -2, 10, std::numeric_limits<std::int64_t>::max(), std::numeric_limits<std::int64_t>::min()};
  for (int k = 1; k < 63; ++k)
    for (std::int64_t d : {-1, 0, 1}) {
      const std::int64_t p = (std::int64_t{1} << k) + d;
      edge.push_back(p);
      edge.push_back(-p);
    }
  __extension__ typedef __int128 wide;  // exact for any product of two 64-bit integers
  const wide lo = std::numeric_limits<std::int64_t>::min(), hi = std::numeric_limits<std::int64_t>::max();
  for (std::int64_t a : edge)
    for (std::int64_t b : edge) {
      std::int64_t r = 0;
      const wide prod = wide{a} * b, sum = wide{a} + b, diff = wide{a} - b;
      CHECK(meshcast::detail::product_fits(a, b, r) == (prod >= lo && prod <= hi));
      if (prod >= lo && prod <= hi) CHECK(r == static_cast<std::int64_t>(prod));
      CHECK(meshcast::detail::sum_fits(a, b, r) == (sum >= lo && sum <= hi));
      if (sum >= lo && sum <= hi) CHECK(r == static_cast<std::int64_t>(sum));
      CHECK(meshcast::detail::difference_fits(a, b, r) == (diff >= lo && diff <= hi));
      if (diff >= lo && diff <= hi) CHECK(r == static_cast<std::int64_t>(diff));
    }
  std::size_t u = 0;  // unsigned: wrapping is what they refuse
  CHECK_FALSE(meshcast::detail::product_fits(std::size_t{1} << 32, std::size_t{1} << 32, u));
  CHECK(meshcast::detail::product_fits(std::size_t{1} << 31, std::size_t{1} << 32, u));
  CHECK(u == std::size_t{1} << 63);
  CHECK_FALSE(meshcast::detail::difference_fits(std::size_t{0}, std::size_t{1}, u));
}

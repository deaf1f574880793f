// The checked buffers behind every benchmark job (meshcast/api/benchmark_job.hpp), which need no
// ranks: sources hold each element's global index, and `wrong` counts, against the expected
// destination it works out, exactly the elements that differ, whatever the element size.
#include <doctest/doctest.h>

#include <meshcast/benchmark_job.hpp>
#include <meshcast/meshcast.hpp>

#include <cstdint>
#include <vector>

using namespace meshcast;

namespace {
// Element i of `tile` as the sources encode it: its global index, little-endian, 0 past byte 8.
std::vector<std::byte> encoded(const box& tile, const extents_value& shape, std::size_t eb) {
  std::vector<std::byte> out(static_cast<std::size_t>(tile.volume()) * eb);
  detail::fill_with_index(tile, shape, eb, out.data());
  return out;
}
}  // namespace

TEST_CASE("checked_buffers: the expected destination is worked out, every differing element counted once") {
  const dynamic_shape shape{12, 10};
  const dynamic_layout src(dynamic_mesh{4}, dynamic_spec("S0,R"), shape), dst(dynamic_mesh{2, 2}, dynamic_spec("S1,S0"), shape);
  for (index_t eb : {1, 2, 4, 8, 12}) {
    CAPTURE(eb);
    // Disjoint meshes (devices 0-3 send, 4-7 receive) and the same mesh.
    const plan p = make_plan(src, dst, {.element_bytes = eb, .devices = eb % 2 == 0 ? device_map::same() : device_map{}});
    for (int rank = 0; rank < static_cast<int>(p.device_count); ++rank) {
      CAPTURE(rank);
      const box want = p.destination_tile(rank);
      const auto n = static_cast<std::size_t>(want.volume());
      detail::checked_buffers b(p, rank, static_cast<std::size_t>(p.source_tile(rank).volume()), n);
      CHECK(b.in == encoded(p.source_tile(rank), p.src.shape, static_cast<std::size_t>(eb)));
      b.clear();
      CHECK(b.wrong() == n);  // poisoned: every element wrong
      b.out = encoded(want, p.src.shape, static_cast<std::size_t>(eb));
      CHECK(b.wrong() == 0);
      if (n == 0) continue;  // a rank that receives nothing
      // One byte of each of three elements: three wrong, even where two bytes of one element differ.
      for (std::size_t e : {std::size_t{0}, n / 2, n - 1}) b.out[e * static_cast<std::size_t>(eb) + static_cast<std::size_t>(eb) - 1] ^= std::byte{1};
      b.out[0] ^= std::byte{2};
      CHECK(b.wrong() == 3);
    }
  }
}

TEST_CASE("checked_buffers: element i of a tile holds its global row-major index") {
  // Device 1's tile of S0,R,R over 2 devices starts at row 3: its element i is global 3*7*3 + i
  // (a tile at the origin would not tell global from tile-local indices).
  const dynamic_shape shape{6, 7, 3};
  const dynamic_layout l(dynamic_mesh{2}, dynamic_spec("S0,R,R"), shape);
  const plan p = make_plan(l, l, {.element_bytes = 8, .devices = device_map::same()});
  REQUIRE(p.source_tile(1)[0].lo == 3);
  const std::vector<std::byte> tile = encoded(p.source_tile(1), p.src.shape, 8);
  REQUIRE(tile.size() == 3 * 7 * 3 * 8);
  for (std::uint64_t i = 0; i < 3 * 7 * 3; ++i) {
    std::uint64_t v = 0;
    for (int b = 7; b >= 0; --b) v = v << 8 | std::to_integer<std::uint64_t>(tile[i * 8 + static_cast<std::size_t>(b)]);
    REQUIRE(v == 3 * 7 * 3 + i);
  }
}

TEST_CASE("checked_buffers: a poisoned element never reads as right, whatever its index") {
  // 1-byte elements past 256: a constant poison matched every index = poison mod 256.
  for (index_t eb : {1, 2}) {
    CAPTURE(eb);
    const dynamic_layout l(dynamic_mesh{1}, dynamic_spec("R"), dynamic_shape{70000});
    const plan p = make_plan(l, l, {.element_bytes = eb, .devices = device_map::same()});
    detail::checked_buffers b(p, 0, 70000, 70000);
    b.clear();
    CHECK(b.wrong() == 70000);
  }
}

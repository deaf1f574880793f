// The staging cap's parts that need no ranks: cutting tasks to half the cap (laws over whole
// domains of regions and piece sizes) and the first-fit block the executor hands buffers out of.
#include <doctest/doctest.h>

#include <meshcast/meshcast.hpp>

#include <limits>
#include <map>
#include <vector>

using namespace meshcast;

namespace {
box make_box(std::initializer_list<range> dims) {
  box b;
  for (const range& r : dims) b.dims[b.rank++] = r;
  return b;
}
// Every element of `region` lies in exactly one piece, each piece inside the region, none above
// `max_elements`, and the pieces follow one another in row-major order.
void check_cut(const box& region, index_t max_elements) {
  std::vector<box> pieces;
  cut_region(region, max_elements, pieces);
  std::map<std::vector<index_t>, int> seen;
  index_t total = 0;
  for (const box& p : pieces) {
    REQUIRE(region.contains(p));
    REQUIRE(!p.empty());
    REQUIRE(p.volume() <= max_elements);
    total += p.volume();
  }
  CHECK(total == region.volume());
  for (std::size_t i = 1; i < pieces.size(); ++i) {  // row-major: each piece starts after the last
    std::vector<index_t> a, b;
    for (int d = 0; d < region.rank; ++d) a.push_back(pieces[i - 1][d].lo), b.push_back(pieces[i][d].lo);
    CHECK(a < b);
  }
  // Disjoint: their volumes add up to the region's and each element is counted once.
  for (const box& p : pieces) {
    std::vector<index_t> idx(static_cast<std::size_t>(p.rank));
    for (int d = 0; d < p.rank; ++d) idx[static_cast<std::size_t>(d)] = p[d].lo;
    while (true) {
      CHECK(++seen[idx] == 1);
      int d = p.rank - 1;
      while (d >= 0 && ++idx[static_cast<std::size_t>(d)] == p[d].hi) idx[static_cast<std::size_t>(d)] = p[d].lo, --d;
      if (d < 0) break;
    }
  }
  CHECK(static_cast<index_t>(seen.size()) == region.volume());
  if (region.volume() <= max_elements) CHECK(pieces.size() == 1);
}
}  // namespace

TEST_CASE("cut_region: every region of up to three dims, every piece size, partitions it") {
  for (index_t a = 1; a <= 4; ++a)
    for (index_t b = 1; b <= 5; ++b)
      for (index_t c = 1; c <= 3; ++c)
        for (index_t max_elements = 1; max_elements <= a * b * c + 1; ++max_elements) {
          CAPTURE(a);
          CAPTURE(b);
          CAPTURE(c);
          CAPTURE(max_elements);
          check_cut(make_box({{2, 2 + a}, {1, 1 + b}, {5, 5 + c}}), max_elements);
          check_cut(make_box({{3, 3 + a}, {0, b}}), max_elements);
          check_cut(make_box({{7, 7 + a * b * c}}), max_elements);
        }
}

TEST_CASE("cut_for_staging: tasks of at most half the cap, the same bytes, each naming its task") {
  const dynamic_layout src(dynamic_mesh{2, 2}, dynamic_spec("S0,S1"), dynamic_shape{37, 23});
  const dynamic_layout dst(dynamic_mesh{4}, dynamic_spec("R,S0"), dynamic_shape{37, 23});
  const plan whole = make_plan(src, dst, {.element_bytes = 4});
  for (std::size_t cap : {std::size_t{8}, std::size_t{9}, std::size_t{64}, std::size_t{100}, std::size_t{1000}, std::size_t{1} << 20}) {
    CAPTURE(cap);
    std::vector<plan> plans{whole};
    cut_for_staging(plans, cap);
    const plan& p = plans[0];
    CHECK(p.tasks.size() >= whole.tasks.size());
    std::vector<index_t> bytes(whole.tasks.size(), 0);
    for (const send_task& t : p.tasks) {
      CHECK(static_cast<std::size_t>(t.bytes) <= cap / 2);
      CHECK(t.bytes == t.region.volume() * 4);
      // An uncut plan's tasks are their own origin (-1); a cut plan's pieces all name theirs.
      const index_t origin = t.origin >= 0 ? t.origin : static_cast<index_t>(&t - p.tasks.data());
      CHECK((t.origin >= 0) == (p.tasks.size() > whole.tasks.size()));
      const send_task& from = whole.tasks[static_cast<std::size_t>(origin)];
      CHECK(from.region.contains(t.region));
      CHECK(t.src_group == from.src_group);
      CHECK(t.dst_group == from.dst_group);
      bytes[static_cast<std::size_t>(origin)] += t.bytes;
    }
    for (std::size_t i = 0; i < whole.tasks.size(); ++i) CHECK(bytes[i] == whole.tasks[i].bytes);
    CHECK(p.total_bytes() == whole.total_bytes());
  }
  std::vector<plan> untouched{whole};
  cut_for_staging(untouched, 0);  // no cap
  CHECK(untouched[0].tasks.size() == whole.tasks.size());
  cut_for_staging(untouched, std::size_t{1} << 30);  // a cap every task fits in half of
  CHECK(untouched[0].tasks.size() == whole.tasks.size());
  CHECK(untouched[0].tasks[0].origin == -1);
}

TEST_CASE("cut_for_staging: a cap below two elements is an error with a sentence") {
  const dynamic_layout src(dynamic_mesh{2}, dynamic_spec("S0,R"), dynamic_shape{8, 8});
  const dynamic_layout dst(dynamic_mesh{2}, dynamic_spec("R,S0"), dynamic_shape{8, 8});
  std::vector<plan> plans{make_plan(src, dst, {.element_bytes = 8})};
  CHECK_THROWS_WITH_AS(cut_for_staging(plans, 15), doctest::Contains("must hold two of its 8-byte elements"), error);
  CHECK_NOTHROW(cut_for_staging(plans, 16));
  for (const send_task& t : plans[0].tasks) CHECK(t.bytes == 8);
}

TEST_CASE("cut_region: pieces ending at 2^63 - 1 do not wrap; a count past the limit is refused before any is made") {
  constexpr index_t top = std::numeric_limits<index_t>::max();
  std::vector<box> pieces;
  CHECK(cut_region(make_box({{top - 10, top}}), 4, pieces));  // lo + run passed 2^63 (UBSan; a loop without end)
  REQUIRE(pieces.size() == 3);
  CHECK(pieces[2][0].lo == top - 2);
  CHECK(pieces[2][0].hi == top);
  check_cut(make_box({{3, 5}, {top - 7, top}}), 3);
  // 2^40 one-element pieces asked for, at most 1000 allowed: false at once, nothing added.
  pieces.assign(1, make_box({{0, 1}}));
  CHECK_FALSE(cut_region(make_box({{0, index_t{1} << 40}}), 1, pieces, 1000));
  CHECK(pieces.size() == 1);
  CHECK_FALSE(cut_region(make_box({{0, 1000}, {0, 2}}), 1, pieces, 2000));  // 2000 more than the one held
  CHECK(cut_region(make_box({{0, 1000}, {0, 2}}), 1, pieces, 2001));
  CHECK(pieces.size() == 2001);
}

TEST_CASE("cut_for_staging: past max_staging_pieces is an error before the pieces fill memory") {
  // A 1 TiB tensor of bytes under a 2-byte cap: 2^39 pieces were made (136 B each) before the
  // limit was checked, so the process ran out of memory instead of naming the cap.
  const dynamic_layout src(dynamic_mesh{2}, dynamic_spec("S0"), dynamic_shape{index_t{1} << 40});
  const dynamic_layout dst(dynamic_mesh{2}, dynamic_spec("R"), dynamic_shape{index_t{1} << 40});
  std::vector<plan> plans{make_plan(src, dst, {.element_bytes = 1})};
  CHECK_THROWS_WITH_AS(cut_for_staging(plans, 2), doctest::Contains("pieces"), error);
  // 2^63 - 1 bytes in pieces of 2^49: 16384 of them, the last ending at the top.
  const dynamic_layout whole(dynamic_mesh{1}, dynamic_spec("R"), dynamic_shape{std::numeric_limits<index_t>::max()});
  std::vector<plan> top{make_plan(whole, whole, {.element_bytes = 1})};
  cut_for_staging(top, std::size_t{1} << 50);
  CHECK(top[0].tasks.size() == 16384);
  CHECK(top[0].tasks.back().region[0].hi == std::numeric_limits<index_t>::max());
}

TEST_CASE("staging_arena: first fit, given back in any order, never past its capacity") {
  detail::staging_arena a(100);
  CHECK(a.take(40) == std::optional<std::size_t>(0));
  CHECK(a.take(40) == std::optional<std::size_t>(40));
  CHECK(!a.take(21));
  CHECK(a.take(20) == std::optional<std::size_t>(80));
  CHECK(a.held() == 100);
  a.give(0);
  CHECK(!a.take(41));
  CHECK(a.take(30) == std::optional<std::size_t>(0));  // the first gap that fits
  a.give(40);
  CHECK(a.take(50) == std::optional<std::size_t>(30));
  a.give(30), a.give(0), a.give(80);
  CHECK(a.empty());
  CHECK(a.held() == 0);
  CHECK(a.take(100) == std::optional<std::size_t>(0));
}

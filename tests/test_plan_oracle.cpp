// The plan against a brute-force oracle, element by element, over hundreds of random cases.
#include <doctest/doctest.h>

#include <meshcast/meshcast.hpp>

#include "support/oracle.hpp"
#include "support/random_layouts.hpp"
#include <algorithm>
#include <random>
#include <string>
#include <vector>

using namespace meshcast;

namespace {
using meshcast::testing::for_each_element;
using meshcast::testing::holds;
using meshcast::testing::linear;

void check_against_oracle(const plan& p) {
  const layout_value &src = p.src, &dst = p.dst;
  const index_t volume = src.whole().volume();
  std::vector<index_t> src_pos(p.device_count, -1), dst_pos(p.device_count, -1);
  for (std::size_t i = 0; i < p.src_devices.size(); ++i) src_pos[p.src_devices[i]] = static_cast<index_t>(i);
  for (std::size_t j = 0; j < p.dst_devices.size(); ++j) dst_pos[p.dst_devices[j]] = static_cast<index_t>(j);

  // received[j][element]: how often destination position j is handed each element over the plan.
  std::vector<std::vector<int>> received(p.dst_devices.size(), std::vector<int>(volume, 0));
  for (const send_task& t : p.tasks) {
    REQUIRE(!t.region.empty());
    CHECK(t.bytes == t.region.volume() * p.element_bytes);
    auto senders = p.senders(t);
    auto receivers = p.receivers(t);
    REQUIRE(!senders.empty());
    REQUIRE(!receivers.empty());
    for_each_element(t.region, [&](const std::vector<index_t>& e) {
      for (index_t s : senders) REQUIRE(holds(src, src_pos[s], e));
      for (index_t r : receivers) ++received[dst_pos[r]][linear(src.shape, e)];
    });
    // Every replica holding the region is offered as a sender, and every device needing it receives.
    std::vector<index_t> first(t.region.rank);
    for (int d = 0; d < t.region.rank; ++d) first[d] = t.region[d].lo;
    index_t holders = 0, needers = 0;
    for (index_t i = 0; i < src.device_count(); ++i) holders += holds(src, i, first);
    for (index_t j = 0; j < dst.device_count(); ++j) needers += holds(dst, j, first);
    CHECK(holders == static_cast<index_t>(senders.size()));
    CHECK(needers == static_cast<index_t>(receivers.size()));
  }
  for (index_t j = 0; j < dst.device_count(); ++j)
    for_each_element(dst.whole(), [&](const std::vector<index_t>& e) {
      int expected = holds(dst, j, e) ? 1 : 0;
      REQUIRE(received[j][linear(src.shape, e)] == expected);
    });
}

}  // namespace

TEST_CASE("plans deliver every destination element exactly once from a holder (random oracle)") {
  meshcast::testing::random_layout_source gen{std::mt19937_64(20261122)};
  int same = 0, listed = 0;
  for (int iteration = 0; iteration < 600; ++iteration) {
    int tensor_rank = gen.uniform(1, 3);
    dynamic_shape shape = gen.random_shape(tensor_rank);
    dynamic_mesh src_mesh = gen.random_mesh();
    int mode = gen.uniform(0, 2);  // 0 cross-mesh, 1 same mesh, 2 overlapping device lists
    dynamic_mesh dst_mesh = mode == 1 ? src_mesh : gen.random_mesh();
    if (mode == 1 && gen.uniform(0, 1)) {
      // Same device count, different mesh shape: e.g. 2x3 -> 6 or 3x2.
      std::vector<index_t> sizes{src_mesh.size()};
      if (src_mesh.size() % 2 == 0 && src_mesh.size() > 2) sizes = {2, src_mesh.size() / 2};
      dst_mesh = dynamic_mesh(sizes);
    }
    dynamic_spec src_spec(gen.random_spec(src_mesh.rank(), tensor_rank));
    dynamic_spec dst_spec(gen.random_spec(dst_mesh.rank(), tensor_rank));
    plan_options options;
    options.element_bytes = gen.uniform(1, 8);
    if (mode == 1) {
      options.devices = device_map::same();
      ++same;
    } else if (mode == 2) {
      // Destination j lands on a shuffled mix of source ids and fresh ones.
      std::vector<index_t> ids(src_mesh.size() + dst_mesh.size());
      for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<index_t>(i);
      std::shuffle(ids.begin(), ids.end(), gen.rng);
      ids.resize(dst_mesh.size());
      options.devices = device_map::listed(ids);
      ++listed;
    }
    plan p = make_plan(dynamic_layout(src_mesh, src_spec, shape), dynamic_layout(dst_mesh, dst_spec, shape), options);
    INFO("case ", iteration, ": ", p.src.to_string(), " -> ", p.dst.to_string());
    check_against_oracle(p);
  }
  CHECK(same > 100);
  CHECK(listed > 100);
}

TEST_CASE("law: chunks partition [0, n) in order, each at most ceil(n/k) long") {
  for (index_t n = 0; n <= 40; ++n)
    for (index_t k = 1; k <= 12; ++k) {
      index_t next = 0;
      for (index_t j = 0; j < k; ++j) {
        range r = chunk_range(n, k, j);
        CHECK(r.lo == next);
        CHECK(r.size() <= chunk_size(n, k));
        next = r.hi > r.lo ? r.hi : next;
        for (index_t i = r.lo; i < r.hi; ++i) CHECK(chunk_of(n, k, i) == j);
      }
      CHECK(next == n);
    }
}

TEST_CASE("law: the distinct tiles of a layout partition the tensor; replicas share equal tiles") {
  meshcast::testing::random_layout_source gen{std::mt19937_64(7)};
  for (int iteration = 0; iteration < 300; ++iteration) {
    int rank = gen.uniform(1, 3);
    dynamic_shape shape = gen.random_shape(rank);
    dynamic_mesh m = gen.random_mesh();
    layout_value l = dynamic_layout(m, dynamic_spec(gen.random_spec(m.rank(), rank)), shape).value();
    std::vector<box> distinct;
    index_t replicated = 1;  // product of the sizes of mesh axes used by no dim
    for (int a = 0; a < l.mesh.rank; ++a) {
      bool used = false;
      for (int d = 0; d < rank; ++d)
        for (int x = 0; x < l.spec.dims[d].axis_count; ++x) used |= l.spec.dims[d].axes[x] == a;
      if (!used) replicated *= l.mesh[a];
    }
    for (index_t dev = 0; dev < l.device_count(); ++dev) {
      box t = l.tile(dev);
      index_t copies = 0;
      for (index_t other = 0; other < l.device_count(); ++other) copies += l.tile(other) == t;
      if (!t.empty()) CHECK(copies == replicated);
      if (!t.empty() && std::find(distinct.begin(), distinct.end(), t) == distinct.end()) distinct.push_back(t);
    }
    index_t covered = 0;
    for (const box& t : distinct) covered += t.volume();
    CHECK(covered == l.whole().volume());  // disjoint (checked below) and covering
    for (std::size_t i = 0; i < distinct.size(); ++i)
      for (std::size_t j = i + 1; j < distinct.size(); ++j) CHECK(intersect(distinct[i], distinct[j]).empty());
  }
}

TEST_CASE("law: resharding to the same layout on the same mesh is all local copies") {
  dynamic_layout l(parse_mesh("2x3"), dynamic_spec("S1,R,S0"), parse_shape("7x5x3"));
  plan p = make_plan(l, l, {.devices = device_map::same()});
  for (const send_task& t : p.tasks) {
    auto s = p.senders(t);
    for (index_t r : p.receivers(t)) CHECK(std::find(s.begin(), s.end(), r) != s.end());
  }
}

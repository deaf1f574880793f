// Compile-time properties and run-time errors of meshes, specs, shapes and layouts.
#include <doctest/doctest.h>

#include <meshcast/meshcast.hpp>
#include <string>
#include <type_traits>

#include "support/thrown.hpp"

using namespace meshcast;
using meshcast::testing::thrown;

// A fully static mesh or layout costs nothing to carry around; a mixed one stores only its dyn sizes.
static_assert(std::is_empty_v<mesh<2, 4>>);
static_assert(std::is_empty_v<spec<S<0>, R>>);
static_assert(std::is_empty_v<layout<mesh<2, 4>, spec<S<0>, R>, shape<1024, 512>>>);
static_assert(sizeof(mesh<dyn, 4>) == sizeof(index_t));
static_assert(sizeof(mesh<dyn, dyn, 4>) == 2 * sizeof(index_t));
static_assert(mesh<2, 4>::rank() == 2 && mesh<2, 4>{}.size() == 8);
static_assert(mesh<dyn, 4>{3}.size() == 12);

// Devices are numbered row-major over mesh coordinates.
static_assert(mesh_coordinate(to_value(mesh<2, 3>{}), 4)[0] == 1 && mesh_coordinate(to_value(mesh<2, 3>{}), 4)[1] == 1);

// The whole plan is a constant expression when everything is static.
constexpr layout<mesh<2, 4>, spec<S<0>, R>, shape<1024, 512>> alpa_src;
constexpr layout<mesh<3, 4>, spec<R, S<0, 1>>, shape<1024, 512>> alpa_dst;
static_assert(make_plan(alpa_src, alpa_dst).tasks.size() == 24);
static_assert(make_plan(alpa_src, alpa_dst).tasks[0].bytes == 512 * 43 * 4);
static_assert(make_plan(alpa_src, alpa_dst).senders(0).size() == 4);
// All-gather on one mesh: four uneven source chunks (3,3,3,1), each needed by all four devices.
static_assert(make_plan(layout<mesh<4>, spec<S<0>>, shape<10>>{}, layout<mesh<4>, spec<R>, shape<10>>{},
                        {.devices = device_map::same()})
                  .tasks.size() == 4);

TEST_CASE("spec strings round-trip and reduce to the same value as static specs") {
  CHECK(dynamic_spec("S0,R").value() == spec<S<0>, R>::value());
  CHECK(dynamic_spec("R,S01").value() == spec<R, S<0, 1>>::value());
  CHECK(dynamic_spec(" S1 , S0 ").value() == spec<S<1>, S<0>>::value());
  for (const char* text : {"S0,R", "R,S01", "S1,S0", "R", "S210,R,R", "R,R,R"})
    CHECK(dynamic_spec(text).to_string() == text);
}

TEST_CASE("run-time misuse throws meshcast::error naming the bad input") {
  CHECK(thrown([] { dynamic_spec("S0,X"); }).find("'X'") != std::string::npos);
  CHECK(thrown([] { dynamic_spec("S0,"); }).find("token ''") != std::string::npos);
  CHECK(thrown([] { dynamic_spec("S"); }).find("'S'") != std::string::npos);
  CHECK(thrown([] { dynamic_spec("S0,S0"); }).find("mesh axis 0 is used by dims 0 and 1") != std::string::npos);
  CHECK(thrown([] { dynamic_spec("S00"); }).find("twice") != std::string::npos);
  CHECK(thrown([] { parse_mesh("2x0"); }).find("'2x0'") != std::string::npos);
  CHECK(thrown([] { parse_mesh("2xa"); }).find("'2xa'") != std::string::npos);
  CHECK(thrown([] { dynamic_mesh({0}); }).find("size 0") != std::string::npos);
  CHECK(thrown([] { mesh<dyn, 4>{0}; }).find("size 0") != std::string::npos);
  CHECK(thrown([] { parse_shape("12x"); }).find("'12x'") != std::string::npos);
  CHECK(thrown([] { dynamic_layout(parse_mesh("2x4"), dynamic_spec("S2,R"), parse_shape("8x8")); })
            .find("uses mesh axis 2 but mesh '2x4' has only 2 axes") != std::string::npos);
  CHECK(thrown([] { dynamic_layout(parse_mesh("2x4"), dynamic_spec("S0,R"), parse_shape("8")); })
            .find("spec 'S0,R' has 2 entries but shape '8' has 1 dims") != std::string::npos);
  CHECK(thrown([] { layout(mesh<dyn, 4>{2}, spec<S<0>, R>{}, dynamic_shape{8, 8, 8}); })
            .find("has 2 entries but shape '8x8x8'") != std::string::npos);
  dynamic_layout a(parse_mesh("2x4"), dynamic_spec("S0,R"), parse_shape("8x8"));
  dynamic_layout b(parse_mesh("3x4"), dynamic_spec("S0,R"), parse_shape("8x8"));
  CHECK(thrown([&] { make_plan(a, b, {.devices = device_map::same()}); }).find("8 devices") != std::string::npos);
  CHECK(thrown([&] { make_plan(a, b, {.devices = device_map::listed({1, 2})}); }).find("2 entries") !=
        std::string::npos);
  CHECK(thrown([&] { make_plan(a, b, {.element_bytes = 0}); }).find("got 0") != std::string::npos);
  dynamic_layout c(parse_mesh("2x4"), dynamic_spec("S0,R"), parse_shape("8x9"));
  CHECK(thrown([&] { make_plan(a, c); }).find("'8x9'") != std::string::npos);
}

TEST_CASE("host placement: destination devices start on a fresh host") {
  // 6 source devices on hosts of 4: hosts 0,0,0,0,1,1; destinations start on host 2.
  auto h = default_hosts(6 + 5, 6, 4);
  CHECK(h == std::vector<index_t>{0, 0, 0, 0, 1, 1, 2, 2, 2, 2, 3});
}

// The model manifest (meshcast/api/manifest.hpp): the contract's example, every bad field named, plans
// over listed source devices, and the busiest-NIC bound worked by hand.
#include <doctest/doctest.h>

#include <meshcast/api/manifest.hpp>
#include <meshcast/meshcast.hpp>

#include <string>
#include <vector>

#include "support/thrown.hpp"

using namespace meshcast;
using meshcast::testing::thrown;

namespace {
const char* example = R"({"devices_per_host": 4,
  "src": {"mesh": "2x4"},
  "dst": {"mesh": "2x2", "devices": [8, 9, 10, 11]},
  "same_mesh": false,
  "tensors": [
    {"name": "layers.0.wq", "shape": [512, 512], "dtype_bytes": 2, "src_spec": "S1,S0", "dst_spec": "S0,R"},
    {"name": "layers.0.experts.w1", "shape": [8, 256, 128], "dtype_bytes": 2,
     "src_spec": "S0,R,S1", "dst_spec": "S01,R,R", "src": {"mesh": "1x4", "devices": [4, 5, 6, 7]}}
  ]})";

// The example with `from` replaced by `to` (once).
std::string with(const std::string& from, const std::string& to) {
  std::string s = example;
  const auto at = s.find(from);
  REQUIRE(at != std::string::npos);
  return s.replace(at, from.size(), to);
}

std::string error_of(const std::string& text) {
  try {
    parse_manifest(std::string_view(text));
  } catch (const error& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("the contract's example reads as written") {
  const manifest m = parse_manifest(std::string_view(example));
  CHECK(m.devices_per_host == 4);
  CHECK(m.device_count == 12);
  REQUIRE(m.tensors.size() == 2);
  CHECK(m.tensors[0].name == "layers.0.wq");
  CHECK(m.tensors[0].src_devices == std::vector<index_t>{0, 1, 2, 3, 4, 5, 6, 7});
  CHECK(m.tensors[0].dst_devices == std::vector<index_t>{8, 9, 10, 11});
  CHECK(m.tensors[1].src_devices == std::vector<index_t>{4, 5, 6, 7});
  CHECK(m.tensors[1].element_bytes == 2);
  const auto plans = make_plans(m.tensors, {}, m.device_count);
  REQUIRE(plans.size() == 2);
  for (const plan& p : plans) CHECK(p.device_count == 12);
  // Tensor 1's source tiles sit on devices 4..7; devices 0..3 hold none of it.
  CHECK(plans[1].source_tile(0).volume() == 0);
  CHECK(plans[1].source_tile(4).volume() == 8 * 256 * 128 / 4);
  index_t delivered = 0;
  for (index_t d = 8; d < 12; ++d) delivered += plans[1].destination_tile(d).volume();
  CHECK(delivered == 8 * 256 * 128);  // S01 over 2x2: each of 4 devices holds 2 experts
  CHECK(m.devices_per_host_or(0) == 4);
  CHECK(m.devices_per_host_or(2) == 2);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  CHECK(m.hosts_of(0) == 4);  // the old name forwards for one release
#pragma GCC diagnostic pop
  CHECK(hosts_in_order(12, 4) == std::vector<index_t>{0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2});
}

TEST_CASE("defaults: destination devices right after the source's, same_mesh, an empty model") {
  const manifest a = parse_manifest(std::string_view(
      R"({"src": {"mesh": "2x2"}, "dst": {"mesh": "4"}, "tensors": [
          {"name": "w", "shape": [8, 8], "dtype_bytes": 4, "src_spec": "S0,R", "dst_spec": "R,S0",
           "src": {"mesh": "2", "devices": [6, 7]}, "dst": {"mesh": "2"}}]})"));
  CHECK(a.dst.devices == std::vector<index_t>{4, 5, 6, 7});
  CHECK(a.tensors[0].dst_devices == std::vector<index_t>{8, 9});  // after that tensor's sources
  CHECK(a.device_count == 10);
  CHECK(a.devices_per_host_or(0) == 2);  // the source mesh's last axis
  const manifest b = parse_manifest(std::string_view(
      R"({"devices_per_host": 2, "same_mesh": true, "src": {"mesh": "2x2"}, "dst": {"mesh": "4"}, "tensors": [
          {"name": "w", "shape": [8, 8], "dtype_bytes": 8, "src_spec": "S0,S1", "dst_spec": "S0,R"}]})"));
  CHECK(b.tensors[0].dst_devices == std::vector<index_t>{0, 1, 2, 3});
  CHECK(b.device_count == 4);
  const manifest c = parse_manifest(std::string_view(R"({"src": {"mesh": "2"}, "dst": {"mesh": "2"}, "tensors": []})"));
  CHECK(c.tensors.empty());
  CHECK(c.device_count == 4);
}

TEST_CASE("the device ids a manifest's tensors list are counted against a limit, defaults included") {
  // Each tensor holds its own device lists: a short file naming large default meshes once asked
  // for gigabytes (8 MB a 75-byte tensor on two 2^19-device meshes).
  std::string doc = R"({"src": {"mesh": "4"}, "dst": {"mesh": "2"}, "tensors": [)";
  for (int k = 0; k < 4; ++k)
    doc += (k ? "," : "") + std::string(R"({"name": "t)") + std::to_string(k) +
           R"(", "shape": [4], "dtype_bytes": 4, "src_spec": "S0", "dst_spec": "R"})";
  doc += "]}";
  const json::value parsed = json::parse(doc);
  CHECK(detail::manifest_reader(24).read(parsed).tensors.size() == 4);  // 4 tensors of 4 + 2 ids
  CHECK(thrown([&] { detail::manifest_reader(23).read(parsed); }) ==
        "tensor \"t3\" (tensors[3]): the tensors up to this one list 24 device ids in all, more than the 23 a manifest may "
        "list (meshcast::max_manifest_device_ids)");
  CHECK(parse_manifest(parsed).tensors.size() == 4);
  static_assert(max_manifest_device_ids == std::size_t{1} << 26);
}

TEST_CASE("every bad field is an error naming the tensor and the field") {
  struct bad {
    std::string from, to, expect;
  };
  const std::vector<bad> cases{
      {"\"devices_per_host\": 4", "\"devices_per_host\": 0", "devices_per_host"},
      {"\"devices_per_host\": 4", "\"devices_per_hosts\": 4", "unknown key \"devices_per_hosts\""},
      {"\"same_mesh\": false", "\"same_mesh\": 1", "same_mesh"},
      {"{\"mesh\": \"2x4\"}", "{\"mesh\": \"2y4\"}", "src.mesh"},
      {"{\"mesh\": \"2x4\"}", "{\"mesh\": \"2x4\", \"extra\": 1}", "unknown key \"extra\""},
      {"\"devices\": [8, 9, 10, 11]", "\"devices\": [8, 9, 10]", "dst.devices"},
      {"\"devices\": [8, 9, 10, 11]", "\"devices\": [8, 9, 9, 11]", "listed twice"},
      {"\"devices\": [8, 9, 10, 11]", "\"devices\": [8, 9, 10, -1]", "dst.devices[3]"},
      {"\"name\": \"layers.0.wq\", ", "", "tensors[0]: name"},
      {"\"name\": \"layers.0.wq\"", "\"name\": \"\"", "tensors[0]: name"},
      {"\"layers.0.experts.w1\"", "\"layers.0.wq\"", "is used twice"},
      {"\"shape\": [512, 512]", "\"shape\": [512, -2]", "tensor \"layers.0.wq\" (tensors[0]): shape[1]"},
      {"\"shape\": [512, 512]", "\"shape\": []", "tensor \"layers.0.wq\" (tensors[0]): shape"},
      {"\"shape\": [512, 512]", "\"shape\": \"512x512\"", "tensor \"layers.0.wq\" (tensors[0]): shape"},
      {"\"shape\": [512, 512]", "\"shape\": [4294967296, 4294967296]", "tensor \"layers.0.wq\" (tensors[0]): shape"},
      {"\"dtype_bytes\": 2, \"src_spec\": \"S1", "\"dtype_bytes\": 3, \"src_spec\": \"S1", "tensor \"layers.0.wq\" (tensors[0]): dtype_bytes"},
      {"\"src_spec\": \"S1,S0\"", "\"src_spec\": \"S2,S0\"", "tensor \"layers.0.wq\" (tensors[0]): src_spec"},
      {"\"src_spec\": \"S1,S0\"", "\"src_spec\": \"S1,S0,R\"", "tensor \"layers.0.wq\" (tensors[0]): src_spec"},
      {"\"dst_spec\": \"S0,R\"", "\"dst_spec\": \"Q\"", "tensor \"layers.0.wq\" (tensors[0]): dst_spec"},
      {"\"dst_spec\": \"S0,R\"}", "\"dst_spec\": \"S0,R\", \"dtype\": \"bf16\"}", "tensor \"layers.0.wq\" (tensors[0]): unknown key \"dtype\""},
      {"\"src\": {\"mesh\": \"1x4\", \"devices\": [4, 5, 6, 7]}",
       "\"src\": {\"mesh\": \"1x4\", \"devices\": [4, 5, 6]}", "tensor \"layers.0.experts.w1\" (tensors[1]): src.devices"},
      {"\"src\": {\"mesh\": \"1x4\", \"devices\": [4, 5, 6, 7]}", "\"src\": {\"devices\": [4, 5, 6, 7]}",
       "tensor \"layers.0.experts.w1\" (tensors[1]): src: mesh: missing"},
      {"\"tensors\": [", "\"tensor\": [", "unknown key \"tensor\""},
  };
  for (const bad& b : cases) {
    CAPTURE(b.to);
    const std::string e = error_of(with(b.from, b.to));
    CHECK_MESSAGE(e.find(b.expect) != std::string::npos, "got: " << e);
  }
  CHECK(error_of("[1]").find("the manifest") != std::string::npos);
  CHECK(error_of("{\"src\": {\"mesh\": \"2\"}, \"dst\": {\"mesh\": \"2\"}").find("line") != std::string::npos);
  CHECK(error_of("{\"src\": {\"mesh\": \"2\"}, \"tensors\": []}").find("dst") != std::string::npos);
  CHECK(error_of("{\"same_mesh\": true, \"src\": {\"mesh\": \"2\"}, \"dst\": {\"mesh\": \"3\"}, \"tensors\": []}")
            .find("same_mesh") != std::string::npos);
}

TEST_CASE("the busiest NIC direction bound, worked by hand") {
  // 2x2 S0,R on hosts 0,1 (2 devices each) -> R,R on hosts 2,3: each destination host needs the
  // whole tensor (64 x 4 bytes), each source host alone holds its half and sends it at least once.
  const manifest m = parse_manifest(std::string_view(
      R"({"devices_per_host": 2, "src": {"mesh": "2x2"}, "dst": {"mesh": "2x2"}, "tensors": [
          {"name": "w", "shape": [8, 8], "dtype_bytes": 4, "src_spec": "S0,R", "dst_spec": "R,R"}]})"));
  const auto plans = make_plans(m.tensors, {}, m.device_count);
  const network net = network::uniform(hosts_in_order(m.device_count, 2), network::gbit_per_s(1), network::gbit_per_s(800), 0);
  CHECK(busiest_nic_bound_s(plans, net) == doctest::Approx(256.0 * 8 / 1e9));  // ingress of a destination host
  // Same-mesh R -> S0: nothing crosses a NIC.
  const manifest same = parse_manifest(std::string_view(
      R"({"devices_per_host": 2, "same_mesh": true, "src": {"mesh": "4"}, "tensors": [
          {"name": "w", "shape": [8, 8], "dtype_bytes": 4, "src_spec": "R,R", "dst_spec": "S0,R"}]})"));
  CHECK(busiest_nic_bound_s(make_plans(same.tensors, {}, same.device_count), net) == 0);
}

TEST_CASE("plans over listed source devices") {
  plan_options o;
  o.src_devices = {5, 3};
  o.device_count = 8;
  const plan p = make_plan(dynamic_layout(dynamic_mesh{2}, dynamic_spec("S0"), dynamic_shape{10}),
                           dynamic_layout(dynamic_mesh{2}, dynamic_spec("R"), dynamic_shape{10}), o);
  CHECK(p.device_count == 8);
  CHECK(p.dst_devices == std::vector<index_t>{6, 7});  // disjoint: right after the largest source id
  CHECK(p.source_tile(5).dims[0].lo == 0);
  CHECK(p.source_tile(3).dims[0].lo == 5);
  o.src_devices = {5, 5};
  CHECK_THROWS_WITH_AS(make_plan(dynamic_layout(dynamic_mesh{2}, dynamic_spec("S0"), dynamic_shape{10}),
                                 dynamic_layout(dynamic_mesh{2}, dynamic_spec("R"), dynamic_shape{10}), o),
                       doctest::Contains("source device id 5 is listed twice"), error);
  o.src_devices = {0, 1};
  o.devices = device_map::same();
  o.src_devices = {2, 3};
  const plan q = make_plan(dynamic_layout(dynamic_mesh{2}, dynamic_spec("S0"), dynamic_shape{10}),
                           dynamic_layout(dynamic_mesh{2}, dynamic_spec("R"), dynamic_shape{10}), o);
  CHECK(q.dst_devices == std::vector<index_t>{2, 3});
}

TEST_CASE("a region contiguous in its tile needs no message buffer") {
  box tile;
  tile.rank = 3;
  tile.dims[0] = {0, 4}, tile.dims[1] = {10, 16}, tile.dims[2] = {0, 8};
  box r = tile;
  CHECK(detail::contiguous_offset(tile, r, 2) == 0);  // the whole tile
  r.dims[0] = {1, 3};                                  // rows 1..2: whole rows
  CHECK(detail::contiguous_offset(tile, r, 2) == 1 * 6 * 8 * 2);
  r.dims[0] = {2, 3}, r.dims[1] = {12, 14};  // one row of dim 0, a run of dim 1
  CHECK(detail::contiguous_offset(tile, r, 4) == (2 * 6 * 8 + 2 * 8) * 4);
  r.dims[0] = {1, 3};  // two rows of dim 0, part of dim 1: strided
  CHECK(detail::contiguous_offset(tile, r, 4) == detail::not_contiguous);
  r.dims[0] = {2, 3}, r.dims[1] = {12, 13}, r.dims[2] = {3, 5};  // one run of the last dim
  CHECK(detail::contiguous_offset(tile, r, 1) == 2 * 6 * 8 + 2 * 8 + 3);
  r.dims[1] = {12, 14};  // two rows of dim 1, part of dim 2: strided
  CHECK(detail::contiguous_offset(tile, r, 1) == detail::not_contiguous);
  r.dims[0] = {4, 5};  // outside the tile
  CHECK(detail::contiguous_offset(tile, r, 1) == detail::not_contiguous);
}

TEST_CASE("manifests: same_mesh with a destination devices list that names other devices is refused") {
  const std::string tensor = R"("tensors": [{"name": "w", "shape": [8], "dtype_bytes": 4, "src_spec": "S0", "dst_spec": "R"}])";
  CHECK(thrown([&] {
              parse_manifest(std::string_view(R"({"same_mesh": true, "src": {"mesh": "2"}, "dst": {"mesh": "2", "devices": [7, 8]}, )" + tensor + "}"));
            }).find("dst.devices: same_mesh puts the destination on the source's devices") != std::string::npos);
  CHECK_NOTHROW(parse_manifest(std::string_view(R"({"same_mesh": true, "src": {"mesh": "2"}, "dst": {"mesh": "2", "devices": [0, 1]}, )" + tensor + "}")));
}

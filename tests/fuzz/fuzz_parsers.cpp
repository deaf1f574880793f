// Fuzzes every run-time text parser: meshes, shapes, specs, the CLIs' numbers and id lists, JSON.
// A parser may accept its input or throw meshcast::error; anything else (another exception, a
// crash, a sanitizer report, an accepted value that does not round-trip) is a finding.
#include <cstdint>
#include <cstdlib>
#include <string>

#include <meshcast/core/detail/json.hpp>
#include <meshcast/meshcast.hpp>

#include "cli/plan_options.hpp"
#include "cli/schedule_options.hpp"
#include "provider.hpp"

using namespace meshcast;

namespace {
void require(bool ok) {
  if (!ok) std::abort();
}

void walk(const json::value& v, int depth) {
  require(depth <= json::max_depth);
  if (v.is_array())
    for (const json::value& x : v.as_array("x")) walk(x, depth + 1);
  if (v.is_object())
    for (const json::member& m : v.as_object("x")) walk(m.second, depth + 1);
  if (v.is_number()) require(std::isfinite(v.as_double("x")));
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::provider in(data, size);
  const int which = in.pick(0, 6);
  const std::string text = in.rest();
  try {
    switch (which) {
      case 0: {
        dynamic_mesh m = parse_mesh(text);
        require(m.size() >= 1 && m.size() <= max_devices);
        require(parse_mesh(to_value(m).to_string()).size() == m.size());
        break;
      }
      case 1: {
        dynamic_shape s = parse_shape(text);
        require(to_value(s).product() >= 0);
        break;
      }
      case 2: {
        dynamic_spec s(text);
        require(dynamic_spec(s.to_string()).value() == s.value());
        break;
      }
      case 3: {
        index_t v = cli::parse_count("--n", text, 1, 1'000'000);
        require(v >= 1 && v <= 1'000'000);
        break;
      }
      case 4: {
        double v = cli::parse_real("--x", text, 0, 1e9);
        require(std::isfinite(v) && v >= 0 && v <= 1e9);
        break;
      }
      case 5: {
        for (index_t id : cli::parse_id_list("--ids", text)) require(id >= 0 && id < max_devices);
        break;
      }
      default:
        walk(json::parse(text), 0);
    }
  } catch (const error&) {
    // refused with a message: fine
  }
  return 0;
}

// Fuzzes every run-time text parser: meshes, shapes, specs, the CLIs' numbers and id lists, JSON.
// A parser may accept its input or throw meshcast::error; anything else (another exception, a
// crash, a sanitizer report, an accepted value that does not round-trip, a message carrying a
// control character or a byte of no well-formed UTF-8 sequence) is a finding.
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

// Whether `m` is well-formed UTF-8 with no C0, DEL or C1 control (written apart from
// detail::printable, which it checks): the lead byte gives the length, the continuation bytes
// must follow, and the code point must need that length and lie outside the surrogates.
bool clean(const std::string& m) {
  for (std::size_t i = 0; i < m.size();) {
    const auto b = static_cast<unsigned char>(m[i]);
    const std::size_t n = b < 0x80 ? 1 : (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xe ? 3 : (b >> 3) == 0x1e ? 4 : 0;
    if (n == 0 || i + n > m.size()) return false;
    std::uint32_t cp = n == 1 ? b : b & (0x7f >> n);
    for (std::size_t k = 1; k < n; ++k) {
      const auto c = static_cast<unsigned char>(m[i + k]);
      if ((c >> 6) != 0x2) return false;
      cp = cp << 6 | (c & 0x3f);
    }
    static constexpr std::uint32_t least[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < least[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
    if (cp < 0x20 || (cp >= 0x7f && cp <= 0x9f)) return false;
    i += n;
  }
  return true;
}

// Whether `t` is a decimal number as the flags take one: no letter but an exponent's, no space.
bool decimal(const std::string& t) {
  for (char c : t)
    if (!((c >= '0' && c <= '9') || c == '.' || c == '+' || c == '-' || c == 'e' || c == 'E')) return false;
  return true;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::provider in(data, size);
  const int which = in.pick(0, 7);
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
        require(std::isfinite(v) && v >= 0 && v <= 1e9 && decimal(text));
        break;
      }
      case 5: {
        for (index_t id : cli::parse_id_list("--ids", text)) require(id >= 0 && id < max_devices);
        break;
      }
      case 6:  // the seeds of tests/fuzz/corpus/parsers that start with byte 6 are JSON
        walk(json::parse(text), 0);
        break;
      default: {  // any text shown in a message is clean; clean short text is shown as it is
        const std::string shown = meshcast::detail::printable(text, 64);
        require(clean(shown));
        if (clean(text) && text.size() <= 64) require(shown == text);
      }
    }
  } catch (const error& e) {
    require(clean(e.what()));  // refused with a message that names the input safely: fine
  }
  return 0;
}

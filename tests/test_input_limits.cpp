// No input breaks the library, continued (test_hardening.cpp holds the earlier cases): text shown in
// messages and the memory a scheduling instance may take. Each case fails without its fix.
#include <doctest/doctest.h>

#include <cmath>
#include <cstddef>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include <meshcast/core/detail/json.hpp>
#include <meshcast/meshcast.hpp>

#include "support/thrown.hpp"

using namespace meshcast;
using meshcast::detail::printable;
using meshcast::testing::thrown;

// C1 controls (U+0080-U+009F; U+009B is CSI to a terminal) and bytes of no well-formed UTF-8
// sequence reached messages raw: only C0 and DEL were escaped.
TEST_CASE("input limits: printable escapes C1 controls and malformed UTF-8, keeps other text") {
  CHECK(printable("a\x1b[2J") == "a\\x1b[2J");
  CHECK(printable("\x7f") == "\\x7f");
  CHECK(printable("x\xc2\x9b" "31m") == "x\\xc2\\x9b31m");  // U+009B, CSI
  CHECK(printable("\xc2\x80\xc2\x9f") == "\\xc2\\x80\\xc2\\x9f");
  CHECK(printable("\x9b" "31m") == "\\x9b31m");  // a lone C1 byte, as an 8-bit terminal reads it
  CHECK(printable("\xff\xfe") == "\\xff\\xfe");
  CHECK(printable("\xc0\xaf") == "\\xc0\\xaf");          // an overlong '/'
  CHECK(printable("\xed\xa0\x80") == "\\xed\\xa0\\x80");  // a surrogate
  CHECK(printable("\xf4\x90\x80\x80") == "\\xf4\\x90\\x80\\x80");  // past U+10FFFF
  CHECK(printable("\xe4\xb8") == "\\xe4\\xb8");            // a sequence cut short
  // Well-formed text outside the controls passes as it is: U+00A0 and up, CJK, emoji.
  CHECK(printable("caf\xc3\xa9 \xc2\xa0 \xe4\xb8\xad \xf0\x9f\x98\x80") == "caf\xc3\xa9 \xc2\xa0 \xe4\xb8\xad \xf0\x9f\x98\x80");
  // The cut never splits a sequence, and marks itself.
  const std::string cjk = "\xe4\xb8\xad\xe4\xb8\xad\xe4\xb8\xad";
  CHECK(printable(cjk, 4) == "\xe4\xb8\xad\xe4\xb8\xad...");
  CHECK(printable(cjk, 9) == cjk);
  CHECK(printable(std::string(100, 'a')).size() == 63);
  // No raw byte of 0x80-0x9F or of a malformed sequence is left in any message.
  for (int b = 0x80; b <= 0xff; ++b) {
    const std::string out = printable(std::string(1, static_cast<char>(b)) + "z");
    CHECK(out.find(static_cast<char>(b)) == std::string::npos);
  }
  CHECK(thrown([] { dynamic_spec("S0,\xc2\x9b" "2J"); }).find("\\xc2\\x9b2J") != std::string::npos);
}

namespace {
// One device sends a replicated tensor to `n` devices on one host, which all need all of it:
// all-gather's forwards list n devices each, n^2 in all.
plan fan_out(index_t n) {
  const dynamic_shape sh{n};
  return make_plan(dynamic_layout(dynamic_mesh{1}, dynamic_spec("R"), sh), dynamic_layout(dynamic_mesh{n}, dynamic_spec("R"), sh),
                   {.element_bytes = 4});
}
// The sender on host 0, every receiver on host 1.
network two_hosts(const plan& p) {
  std::vector<index_t> host_of(static_cast<std::size_t>(p.device_count), 1);
  host_of[0] = 0;
  return network::alpa_testbed(host_of);
}
}  // namespace

// 1,024 receivers on one host took 3 GB for one tensor under send_recv_allgather (and so under
// auto) before anything refused it; now the strategy counts its forwards before building them.
TEST_CASE("input limits: an instance past max_instance_words is refused before it is built") {
  const plan p = fan_out(12288);  // 12,288 forwards of 3 x 12,288 entries: 2^28.8 words, in one option
  const network net = two_hosts(p);
  const std::string m = thrown([&] { make_instance(p, net, send_recv_allgather{}); });
  CHECK(m.find("the scheduling instance of strategy 'send_recv_allgather' would hold more than 268435456 words") == 0);
  CHECK(m.find("at tensor 0's task 0") != std::string::npos);
  CHECK_THROWS_AS(make_instance(p, net, send_recv_allgather{}), instance_too_large);
  CHECK(thrown([&] { make_instance(p, net, auto_strategy{}); }).find("strategy 'auto' would hold more than") != std::string::npos);
  // Called alone, the strategy says so itself.
  std::vector<op> out;
  const std::vector<index_t> remote(p.dst_devices.begin(), p.dst_devices.end());
  CHECK(thrown([&] { send_recv_allgather{}.remote_ops(net, resource_space{net.port_count(), net.device_count()}, 0, p.tasks[0].region,
                                                      p.tasks[0].bytes, 0, remote, out); })
            .find("send_recv_allgather: one sender's forwards would hold more than") == 0);
  CHECK(out.empty());
  // Strategies whose ops grow with the receivers still build, and auto keeps to them.
  CHECK(!make_instance(p, net, send_recv{}).units.empty());
  CHECK(!make_instance(p, net, broadcast{}).units.empty());
  std::vector<plan> batch{p};
  const schedule s = solve_batch(std::span<const plan>(batch), net, auto_strategy{}, greedy{});
  CHECK(!s.transfers.empty());
  for (const transfer& t : s.transfers) CHECK(t.kind != transfer_kind::forward);
  CHECK(s.strategy == "auto");
  // Solved under all-gather alone, there is nothing to keep: the error says why.
  CHECK_THROWS_AS(solve_batch(std::span<const plan>(batch), net, send_recv_allgather{}, greedy{}), instance_too_large);
  // A tensor of fewer elements than receivers is cut into fewer slices, and so fewer forwards:
  // 8 forwards to 12,287 devices each fit.
  const dynamic_shape eight{8};
  const plan small = make_plan(dynamic_layout(dynamic_mesh{1}, dynamic_spec("R"), eight),
                               dynamic_layout(dynamic_mesh{12288}, dynamic_spec("R"), eight), {.element_bytes = 4});
  CHECK(!make_instance(small, two_hosts(small), send_recv_allgather{}).units.empty());
}

// The count itself: at the limit it passes, one word past it (or a count that would wrap) it
// does not; options are counted as kept (a repeated alternative is not).
TEST_CASE("input limits: the instance word count refuses past the limit and never wraps") {
  using meshcast::detail::within_instance_words;
  static_assert(within_instance_words(max_instance_words - 10, 10));
  static_assert(within_instance_words(0, max_instance_words));
  static_assert(!within_instance_words(max_instance_words - 10, 11));
  static_assert(!within_instance_words(1, std::numeric_limits<std::size_t>::max()));
  static_assert(!within_instance_words(std::numeric_limits<std::size_t>::max(), 1));
  meshcast::detail::instance_words words("s");
  CHECK(thrown([&] { words.refuse(3, 7); }).find("strategy 's' would hold more than 268435456 words") != std::string::npos);
  CHECK(thrown([&] { words.refuse(3, 7); }).find("at tensor 3's task 7") != std::string::npos);
  // Counted as built: a small instance's words are those of its options and ops.
  const plan p = fan_out(4);
  const network net = two_hosts(p);
  for (const bool under_auto : {false, true}) {
    const instance in = under_auto ? make_instance(p, net, auto_strategy{}) : make_instance(p, net, send_recv_allgather{});
    meshcast::detail::instance_words counted("x");
    std::size_t expected = 0;
    for (const unit& u : in.units)
      for (const option& o : u.options) {
        counted.add(o.ops, u.tensor, u.task);
        expected += (sizeof(std::vector<op>) + 7) / 8 + 1;
        for (const op& x : o.ops) expected += meshcast::detail::op_words(x);
      }
    CHECK(counted.used() == expected);
    CHECK(expected > 0);
  }
}

// A document of small numbers took 88 bytes a value (a string and two pointers in every value):
// 8 MB of `[0,0,...]` peaked at 382 MB. One pointer for the string, array or object: 40 bytes.
TEST_CASE("input limits: a JSON value takes at most 40 bytes, its copies share what it holds") {
  static_assert(sizeof(json::value) <= 40, "a JSON value grew past 40 bytes: a document of small numbers takes that much a value");
  const json::value doc = json::parse(R"({"name": "w\u00e9", "ids": [1, -0, 2.5e0, 9007199254740993], "more": {"x": true}})");
  const json::value copy = doc;  // NOLINT: the copy is the point
  CHECK(&copy.at("name", "doc").as_string("name") == &doc.at("name", "doc").as_string("name"));
  CHECK(copy.at("name", "doc").as_string("name") == "w\xc3\xa9");
  const json::array& ids = doc.at("ids", "doc").as_array("ids");
  REQUIRE(ids.size() == 4);
  CHECK(ids[0].as_int("0") == 1);
  CHECK(std::signbit(ids[1].as_double("1")));
  CHECK(ids[2].as_double("2") == 2.5);
  CHECK(ids[3].as_int("3") == 9007199254740993);
  CHECK(doc.at("more", "doc").at("x", "more").as_bool("x"));
  CHECK(doc.find("absent") == nullptr);
  CHECK(ids[0].find("x") == nullptr);
}

// The lower layers' review (2026-12-07). make_plan built every task before any budget looked: an
// N-device S0,R -> R,S0 makes N * N tasks (2048 devices: 0.7 GB; max_devices: 2^40 tasks and a
// bad_alloc). A default layout<mesh<dyn, 4>, ...> held an axis of 0 devices and tile() divided by it.
// cut_region trusted box::volume, which wrapped: a 2^32 x 2^32 region came back as one piece.
TEST_CASE("input limits: a plan past max_plan_tasks is refused before its tasks are built") {
  auto transpose = [](index_t n) {
    const std::string mesh = std::to_string(n);
    return make_plan(dynamic_layout(parse_mesh(mesh), dynamic_spec("S0,R"), dynamic_shape{n, n}),
                     dynamic_layout(parse_mesh(mesh), dynamic_spec("R,S0"), dynamic_shape{n, n}),
                     {.devices = device_map::same()});
  };
  CHECK(transpose(64).tasks.size() == 64 * 64);
  const std::string why = thrown([&] { (void)transpose(8192); });  // 2^26 tasks
  CHECK(why.find("makes more than 16777216 send tasks (meshcast::max_plan_tasks)") != std::string::npos);
  CHECK(why.find("on mesh 8192 as S0,R") != std::string::npos);
  const std::string huge = thrown([&] { (void)transpose(max_devices); });  // 2^40 tasks: counted, not built
  CHECK(huge.find("meshcast::max_plan_tasks") != std::string::npos);
}

TEST_CASE("input limits: only a layout known whole at compile time is default-constructible") {
  static_assert(std::is_default_constructible_v<layout<mesh<2, 4>, spec<S<0>, R>, shape<8, 8>>>);
  static_assert(!std::is_default_constructible_v<layout<mesh<dyn, 4>, spec<S<0>, R>, shape<8, 8>>>,
                "a default dyn axis holds 0 devices");
  static_assert(!std::is_default_constructible_v<layout<mesh<2, 4>, spec<S<0>, R>, shape<dyn, 8>>>,
                "a default dyn dim holds 0 elements");
  CHECK(layout<mesh<2, 4>, spec<S<0>, R>, shape<8, 8>>{}.tile(5) ==
        layout(mesh<2, 4>{}, spec<S<0>, R>{}, shape<8, 8>{}).tile(5));
}

TEST_CASE("input limits: cut_region refuses a region too large to count") {
  box region;
  region.rank = 2;
  region.dims[0] = {0, index_t{1} << 32};
  region.dims[1] = {0, index_t{1} << 32};
  std::vector<box> out;
  CHECK(thrown([&] { (void)cut_region(region, 1024, out); }).find("has more elements than fit in 64 bits") !=
        std::string::npos);
  CHECK(out.empty());
  region.dims[0] = {0, 4};
  region.dims[1] = {0, 6};
  REQUIRE(cut_region(region, 12, out));
  CHECK(out.size() == 2);
}

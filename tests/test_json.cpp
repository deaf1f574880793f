// The JSON reader: what it accepts, the exact values it gives, and how it refuses bad documents.
#include <doctest/doctest.h>

#include <meshcast/core/detail/json.hpp>
#include <algorithm>
#include <clocale>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

using namespace meshcast;

TEST_CASE("json: values, members in order, exact integers") {
  json::value v = json::parse(R"( {"a": [1, -2, 3.5, 2e3, true, false, null], "b": {"c": "x\u00e9\n\ud83d\ude00"}} )");
  const json::object& o = v.as_object("doc");
  REQUIRE(o.size() == 2);
  CHECK(o[0].first == "a");
  const json::array& a = v.at("a", "doc").as_array("a");
  REQUIRE(a.size() == 7);
  CHECK(a[0].as_int("a[0]") == 1);
  CHECK(a[1].as_int("a[1]") == -2);
  CHECK(a[2].as_double("a[2]") == 3.5);
  CHECK_THROWS_WITH_AS(a[2].as_int("a[2]"), "a[2] must be an integer", error);
  CHECK(a[3].as_int("a[3]") == 2000);
  CHECK(a[4].as_bool("a[4]"));
  CHECK(!a[5].as_bool("a[5]"));
  CHECK(a[6].is_null());
  CHECK(v.at("b", "doc").at("c", "b").as_string("c") == "x\xc3\xa9\n\xf0\x9f\x98\x80");
  CHECK(json::parse("9223372036854775807").as_int("n") == 9223372036854775807LL);
  CHECK(json::parse("-9223372036854775808").as_int("n") == std::numeric_limits<std::int64_t>::min());
  // Beyond 64 bits an integer is a real, never a wrapped value.
  CHECK_THROWS_WITH_AS(json::parse("9223372036854775808").as_int("n"), "n must be an integer", error);
  CHECK_THROWS_WITH_AS(json::parse("5").as_int("n", 0, 4), "n is 5, outside [0, 4]", error);
  CHECK_THROWS_WITH_AS(json::parse("{}").at("k", "doc"), "doc has no \"k\"", error);
}

TEST_CASE("json: bad documents are errors with a position") {
  const char* bad[] = {"",        "{",          "[1,]",       "{\"a\" 1}", "01",        "1.",      "-",
                       "1e",      "\"abc",      "\"\\x\"",    "nul",       "[1] 2",     "1e400",   "-1e400",
                       "{\"a\":1,\"a\":2}", "\"\\ud800\"", "\"\\udc00\"", "\"a\tb\"", "NaN", "Infinity", "+1"};
  for (const char* text : bad) {
    CAPTURE(text);
    CHECK_THROWS_AS(json::parse(text), error);
  }
  CHECK_THROWS_WITH_AS(json::parse("{\n  \"a\": tru\n}"), "JSON at line 2 column 8: unexpected character", error);
  std::string deep(200, '[');
  CHECK_THROWS_WITH_AS(json::parse(deep), "JSON at line 1 column 129: nesting deeper than 128 levels", error);
}

// JSON text is UTF-8 (RFC 8259): a string's raw bytes are whole, shortest UTF-8 sequences, else the
// reader refuses them (they were copied into the tools' JSON output, which then did not parse). A
// number nearer zero than any double is out of range, not a silent 0 (found by review).
TEST_CASE("json: strings are valid UTF-8 and tiny numbers are not read as zero") {
  CHECK(json::parse("\"\xe2\x82\xac \xc3\xa9 \xf4\x8f\xbf\xbf\"").as_string("s") == "\xe2\x82\xac \xc3\xa9 \xf4\x8f\xbf\xbf");
  const char* bad[] = {"\"\xff\"",          "\"\x80\"",             "\"\xc0\xaf\"",     "\"\xc1\xbf\"",
                       "\"\xe0\x80\xaf\"",  "\"\xed\xa0\x80\"",     "\"\xf0\x80\x80\xaf\"", "\"\xf4\x90\x80\x80\"",
                       "\"\xe2\x82\"",      "\"\xe2\x82",           "\"\xf5\x80\x80\x80\""};
  for (const char* text : bad) {
    CAPTURE(text);
    CHECK_THROWS_WITH_AS(json::parse(text), doctest::Contains("invalid UTF-8 inside a string"), error);
  }
  CHECK_THROWS_WITH_AS(json::parse("1e-400"), "JSON at line 1 column 1: number 1e-400 is out of range", error);
  CHECK_THROWS_WITH_AS(json::parse("[-2.5e-999]"), doctest::Contains("number -2.5e-999 is out of range"), error);
  CHECK(json::parse("0e-999").as_double("n") == 0);
  CHECK(json::parse("-0.000e5").as_double("n") == 0);
  CHECK(json::parse("4.9e-324").as_double("n") > 0);  // the smallest subnormal: a number
}

// Long objects: duplicates are found at every length (a linear search up to 16 members, a set
// beyond), the error names the member and the place of its second appearance, and 200,000 members
// parse in well under a second (the quadratic search took minutes; ctest's timeout catches a return).
TEST_CASE("json: long objects keep their order and refuse a repeated member at any length") {
  auto object_of = [](int n, int repeat_at = -1) {
    std::string text = "{";
    for (int i = 0; i < n; ++i) {
      if (i) text += ',';
      text += "\"k" + std::to_string(i == repeat_at ? 3 : i) + "\":" + std::to_string(i);
    }
    return text + "}";
  };
  json::value v = json::parse(object_of(200'000));
  const json::object& o = v.as_object("doc");
  REQUIRE(o.size() == 200'000);
  CHECK(o[199'999].first == "k199999");
  CHECK(o[199'999].second.as_int("k199999") == 199'999);
  CHECK(v.at("k123456", "doc").as_int("k123456") == 123'456);
  for (int at : {4, 15, 16, 17, 100, 199'999}) {
    CAPTURE(at);
    const std::string text = object_of(200'000, at);
    const std::size_t second = text.find("\"k3\"", text.find("\"k3\"") + 1);  // the column just past it
    CHECK_THROWS_WITH_AS(json::parse(text),
                         ("JSON at line 1 column " + std::to_string(second + 5) + ": member \"k3\" appears twice").c_str(),
                         error);
  }
}

// One UTF-8 rule for messages and for JSON strings (detail::scan_utf8; the reader kept its own copy
// until it was merged). Checked over whole domains against every code point's encoding, built by
// shifting bits: a sequence is well formed when it is one of those encodings, and the byte that
// breaks it is the first at which no encoding starts with the bytes so far. The reader
// must accept exactly those strings and report that byte's column.
TEST_CASE("json: raw string bytes follow scan_utf8, checked against every code point's encoding") {
  // Every encoding as its bytes left-aligned in 32 bits, sorted: a lead byte fixes the length, and
  // continuation bytes are never 0, so no shorter encoding or prefix padded with zeros meets another.
  std::vector<std::uint32_t> encodings;
  for (std::uint32_t cp = 0; cp <= 0x10FFFF; ++cp) {
    if (cp >= 0xD800 && cp <= 0xDFFF) continue;
    if (cp < 0x80) encodings.push_back(cp << 24);
    else if (cp < 0x800) encodings.push_back((0xC0 | cp >> 6) << 24 | (0x80 | (cp & 0x3F)) << 16);
    else if (cp < 0x10000)
      encodings.push_back((0xE0 | cp >> 12) << 24 | (0x80 | (cp >> 6 & 0x3F)) << 16 | (0x80 | (cp & 0x3F)) << 8);
    else
      encodings.push_back((0xF0 | cp >> 18) << 24 | (0x80 | (cp >> 12 & 0x3F)) << 16 | (0x80 | (cp >> 6 & 0x3F)) << 8 |
                          (0x80 | (cp & 0x3F)));
  }
  std::sort(encodings.begin(), encodings.end());
  auto key = [](const std::string& t, std::size_t k) {
    std::uint32_t v = 0;
    for (std::size_t i = 0; i < 4; ++i) v = v << 8 | (i < k ? static_cast<unsigned char>(t[i]) : 0U);
    return v;
  };
  auto is_encoding = [&](const std::string& t, std::size_t k) {
    return std::binary_search(encodings.begin(), encodings.end(), key(t, k));
  };
  auto starts_one = [&](const std::string& t, std::size_t k) {  // some encoding longer than k starts so
    const std::uint64_t lo = key(t, k), hi = lo + (std::uint64_t{1} << (8 * (4 - k)));
    const auto at = std::lower_bound(encodings.begin(), encodings.end(), static_cast<std::uint32_t>(lo));
    return at != encodings.end() && *at < hi;
  };
  // Every 1- and 2-byte text (every lead with every second byte); the 3- and 4-byte ones whose
  // later bytes lie on the ranges' edges (a fourth byte on the continuation range's edges only).
  const unsigned edges[] = {0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xFF};
  std::vector<std::string> texts;
  for (unsigned a = 0; a < 256; ++a) {
    texts.push_back({char(a)});
    for (unsigned b = 0; b < 256; ++b) texts.push_back({char(a), char(b)});
    if (a < 0xE0) continue;
    for (unsigned b : edges)
      for (unsigned c : edges) {
        texts.push_back({char(a), char(b), char(c)});
        if (a >= 0xF0)
          for (unsigned d : {0x7Fu, 0x80u, 0xBFu, 0xC0u}) texts.push_back({char(a), char(b), char(c), char(d)});
      }
  }
  // Compared by hand and reported only where they differ.
  std::size_t checked = 0, wrong = 0;
  auto differs = [&](const std::string& t, const std::string& what) {
    static constexpr char hex[] = "0123456789abcdef";
    std::string bytes;
    for (char c : t) bytes += {' ', hex[static_cast<unsigned char>(c) >> 4], hex[c & 0xF]};
    if (++wrong <= 5) FAIL_CHECK("bytes" << bytes << ": " << what);
  };
  for (const std::string& t : texts) {
    std::size_t length = 0, bad_at = 0;
    for (std::size_t k = 1; k <= 4 && length == 0; ++k) {
      if (k <= t.size() && is_encoding(t, k)) length = k;
      else if (k > t.size() || k == 4 || !starts_one(t, k)) { bad_at = k - 1; break; }
    }
    const detail::utf8_scan got = detail::scan_utf8(t);
    if (got.length != length || (length == 0 && got.bad_at != bad_at) || detail::utf8_sequence(t) != length)
      differs(t, "scan_utf8 gives " + std::to_string(got.length) + "/" + std::to_string(got.bad_at) + ", the encodings " +
                     std::to_string(length) + "/" + std::to_string(bad_at));
    if (static_cast<unsigned char>(t[0]) < 0x80) continue;  // ASCII: the reader's other rules
    ++checked;
    const std::string doc = "\"" + t.substr(0, length ? length : t.size()) + "\"";
    std::string said;
    try {
      if (json::parse(doc).as_string("s") != t.substr(0, length)) said = "another string";
      else if (!length) said = "accepted";
    } catch (const error& e) {
      said = e.what();
    }
    const std::string want =
        length ? "" : "JSON at line 1 column " + std::to_string(2 + std::min(bad_at, t.size())) + ": invalid UTF-8 inside a string";
    if (said != want) differs(t, "the reader says '" + said + "', not '" + want + "'");
  }
  CHECK(wrong == 0);
  CHECK(checked == 128 + 128 * 256 + 32 * 11 * 11 + 16 * 11 * 11 * 4);  // every non-ASCII text
}

// Numbers were read with strtod, which takes the decimal point of the program's locale: a program
// that called setlocale under a decimal-comma locale read 12.5e9 as 12 and refused 0.5 (found by
// review). ctest's unit.json_locale makes such a locale and names it in
// MESHCAST_TEST_DECIMAL_COMMA_LOCALE, so that there the case cannot skip.
TEST_CASE("json: numbers read the same under a decimal-comma locale") {
  const char* named = std::getenv("MESHCAST_TEST_DECIMAL_COMMA_LOCALE");
  const std::string before = std::setlocale(LC_NUMERIC, nullptr);
  if (!std::setlocale(LC_NUMERIC, named ? named : "de_DE.UTF-8")) {
    if (named) FAIL_CHECK("the locale " << named << " is not available");
    else MESSAGE("no de_DE.UTF-8 locale here: unit.json_locale runs this case under one it makes");
    return;
  }
  struct restore {
    std::string name;
    ~restore() { std::setlocale(LC_NUMERIC, name.c_str()); }
  } back{before};
  CHECK(std::localeconv()->decimal_point == std::string(","));  // the locale really uses a comma
  CHECK(json::parse("1.5").as_double("x") == 1.5);
  CHECK(json::parse("12.5e9").as_double("x") == 12.5e9);
  CHECK(json::parse("0.5").as_double("x") == 0.5);
  CHECK(json::parse("-2.25E-3").as_double("x") == -2.25e-3);
  CHECK_THROWS_WITH_AS(json::parse("1e400"), doctest::Contains("out of range"), error);
}

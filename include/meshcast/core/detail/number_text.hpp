// The text of a real number in messages: the shortest one that reads back as the same double,
// so an error says "5 s" or "0.1 s", not std::to_string's "5.000000 s" or "0.100000 s".
#pragma once

#include <charconv>
#include <cmath>
#include <string>

namespace meshcast::detail {

/// The shortest text that reads back as `x` ("2", "0.1", "-1e-07", "nan", "inf").
inline std::string number(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, x);
  return std::string(buf, r.ptr);
}

}  // namespace meshcast::detail

// Flag values of the example programs: a name that may not be empty, a finite number, a
// comma-separated list of them, and a split's mesh axes as text ("0,1"). Every message names the
// flag and the text it rejects.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <meshcast/meshcast.hpp>  // meshcast::error

namespace meshcast_cli {

/// An empty value is refused, not taken as "not given".
inline std::string parse_name(const std::string& flag, std::string text) {
  if (text.empty()) throw meshcast::error(flag + " '' names nothing: give a value or leave the flag out");
  return text;
}

/// Whether `text` is a decimal number as people write one: an optional sign, digits with at most
/// one point among or after them, an optional exponent (`e` or `E`, an optional sign, digits);
/// nothing before or after. strtod alone also took leading spaces, "inf", "nan" and hex ("0x10"
/// read 16), none of which a flag means.
inline bool decimal_syntax(const std::string& text) {
  std::size_t i = 0, digits = 0;
  auto run_of_digits = [&] {
    std::size_t n = 0;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i, ++n;
    return n;
  };
  if (i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
  digits += run_of_digits();
  if (i < text.size() && text[i] == '.') {
    ++i;
    digits += run_of_digits();
  }
  if (digits == 0) return false;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    if (i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
    if (run_of_digits() == 0) return false;
  }
  return i == text.size();
}

/// The number `text` spells in decimal_syntax; nothing when it spells none. Past the largest
/// double it is +-inf, which every caller refuses as not finite; nearer 0 than the smallest normal
/// double (1e-310) it is the nearest double, a finite number (std::stod threw on both, and
/// "1e-310" was called "not a finite number").
inline std::optional<double> whole_number(const std::string& text) {
  if (!decimal_syntax(text)) return std::nullopt;  // a NUL inside is no digit
  return std::strtod(text.c_str(), nullptr);
}

/// The whole number `text` spells in decimal digits, with an optional '-' (no spaces, no '+', no
/// other base), when it fits in 64 bits.
inline std::optional<std::int64_t> whole_integer(const std::string& text) {
  const std::size_t first = !text.empty() && text[0] == '-' ? 1 : 0;
  if (text.size() == first || text.find_first_not_of("0123456789", first) != std::string::npos) return std::nullopt;
  std::int64_t v = 0;
  for (std::size_t i = first; i < text.size(); ++i)  // built negative: -2^63 fits, 2^63 does not
    if (!meshcast::detail::product_fits(v, std::int64_t{10}, v) || !meshcast::detail::difference_fits(v, std::int64_t(text[i] - '0'), v))
      return std::nullopt;
  if (first == 1) return v;
  if (v == std::numeric_limits<std::int64_t>::min()) return std::nullopt;
  return -v;
}

inline double parse_number(const std::string& flag, const std::string& text) {
  const std::optional<double> v = whole_number(text);
  if (!v || !std::isfinite(*v)) throw meshcast::error(flag + " '" + meshcast::detail::printable(text) + "' is not a finite number");
  return *v;
}

inline std::vector<double> parse_list(const std::string& flag, const std::string& text) {
  std::vector<double> out;
  std::size_t pos = 0;
  while (true) {
    const std::size_t next = text.find(',', pos);
    out.push_back(parse_number(flag, text.substr(pos, next == std::string::npos ? std::string::npos : next - pos)));
    if (next == std::string::npos) break;
    pos = next + 1;
  }
  return out;
}

/// A mesh axis's bandwidth (--axis-gbps) or latency (--axis-latency-us) in the range meshcast's
/// network model takes (it costs the reshards), named by its flag.
inline void check_axis_gbps(double g) {
  const double lo = meshcast::network::min_bandwidth_bps * 8 / 1e9, hi = meshcast::network::max_bandwidth_bps * 8 / 1e9;
  if (!(g >= lo && g <= hi))
    throw meshcast::error("--axis-gbps " + meshcast::detail::number(g) + " is outside [" + meshcast::detail::number(lo) + ", " +
                          meshcast::detail::number(hi) + "] Gbit/s");
}
inline void check_axis_latency_us(double l) {
  if (const double hi = meshcast::network::max_latency_s * 1e6; !(l >= 0 && l <= hi))
    throw meshcast::error("--axis-latency-us " + meshcast::detail::number(l) + " is outside [0, " + meshcast::detail::number(hi) + "]");
}

/// A 64-bit unsigned integer in decimal digits: every tool's --seed.
inline std::uint64_t parse_u64(const std::string& flag, const std::string& text) {
  if (text.empty() || text.size() > 20 || text.find_first_not_of("0123456789") != std::string::npos)
    throw meshcast::error(flag + " '" + meshcast::detail::printable(text) + "' is not a non-negative integer below 2^64");
  std::uint64_t v = 0;
  for (char c : text)
    if (!meshcast::detail::product_fits(v, std::uint64_t{10}, v) || !meshcast::detail::sum_fits(v, std::uint64_t(c - '0'), v))
      throw meshcast::error(flag + " '" + meshcast::detail::printable(text) + "' is not a non-negative integer below 2^64");
  return v;
}

/// `--mode`'s execution mode; the message names the flag.
inline meshcast::execution parse_mode(const std::string& flag, const std::string& text) {
  try {
    return meshcast::parse_execution(text);
  } catch (const meshcast::error& e) {
    throw meshcast::error(flag + ": " + e.what());
  }
}

inline std::string axes_text(const std::vector<int>& axes) {
  std::string s;
  for (int a : axes) {
    if (!s.empty()) s.push_back(',');
    s.append(std::to_string(a));
  }
  return s;
}

}  // namespace meshcast_cli

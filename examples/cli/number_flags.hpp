// Number flags of the example programs, shared by meshcast-autoshard and autoshard_mlp_mpi: a
// finite number, a comma-separated list of them, and a split's mesh axes as text ("0,1").
// Every message names the flag and the text it rejects.
#pragma once

#include <cmath>
#include <exception>
#include <string>
#include <vector>

#include <meshcast/meshcast.hpp>  // meshcast::error

namespace meshcast_cli {

inline double parse_number(const std::string& flag, const std::string& text) {
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (text.empty() || used != text.size() || !std::isfinite(v))
    throw meshcast::error(flag + " '" + text + "' is not a finite number");
  return v;
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

inline std::string axes_text(const std::vector<int>& axes) {
  std::string s;
  for (int a : axes) {
    if (!s.empty()) s.push_back(',');
    s.append(std::to_string(a));
  }
  return s;
}

}  // namespace meshcast_cli

// Command-line flags shared by meshcast-plan and the tools built on it.
#pragma once

#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include <meshcast/meshcast.hpp>

#include "flag_values.hpp"

namespace meshcast::cli {

struct plan_flags {
  std::string shape, src_mesh, src_spec, dst_mesh, dst_spec;
  index_t dtype_bytes = 4;
  index_t devices_per_host = -1;  // not given: the source mesh's last axis
  bool same_mesh = false;
  bool json = false;
  bool help = false;
  std::vector<index_t> dst_devices;  // explicit destination ids (overlapping meshes)
};

/// A whole number in [lo, hi]; the message names the flag, the text and the range.
inline index_t parse_count(const std::string& flag, const std::string& text, index_t lo = 0,
                           index_t hi = std::numeric_limits<index_t>::max()) {
  const std::string shown = flag + " '" + detail::printable(text) + "'";
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos)
    throw error(shown + " is not a non-negative integer");
  index_t v = 0;
  for (char c : text)
    if (!meshcast::detail::product_fits(v, index_t{10}, v) || !meshcast::detail::sum_fits(v, index_t{c - '0'}, v) || v > hi)
      throw error(shown + " is larger than " + std::to_string(hi));
  if (v < lo) throw error(shown + " is smaller than " + std::to_string(lo));
  return v;
}

/// A flag's value that names something (a file, a solver, a strategy): an empty one is an error,
/// not "not given".
using meshcast_cli::parse_name;

inline std::vector<index_t> parse_id_list(const std::string& flag, const std::string& text) {
  std::vector<index_t> ids;
  std::size_t pos = 0;
  while (true) {
    std::size_t next = text.find(',', pos);
    ids.push_back(parse_count(flag, text.substr(pos, next == std::string::npos ? std::string::npos : next - pos), 0,
                              max_devices - 1));
    if (ids.size() > static_cast<std::size_t>(max_devices)) throw error(flag + " lists more than meshcast::max_devices ids");
    if (next == std::string::npos) break;
    pos = next + 1;
  }
  return ids;
}

/// Parses one flag of the plan family; returns false if `arg` is not one of them.
/// `next()` yields the flag's value (and throws if there is none).
template <class Next>
bool parse_plan_flag(plan_flags& f, const std::string& arg, Next&& next) {
  if (arg == "--shape") f.shape = next();
  else if (arg == "--src-mesh") f.src_mesh = next();
  else if (arg == "--src-spec") f.src_spec = next();
  else if (arg == "--dst-mesh") f.dst_mesh = next();
  else if (arg == "--dst-spec") f.dst_spec = next();
  else if (arg == "--dtype-bytes") f.dtype_bytes = parse_count(arg, next(), 1, max_element_bytes);
  else if (arg == "--devices-per-host") f.devices_per_host = parse_count(arg, next(), 1, max_devices);
  else if (arg == "--dst-devices") f.dst_devices = parse_id_list(arg, next());
  else if (arg == "--same-mesh") f.same_mesh = true;
  else if (arg == "--json") f.json = true;
  else if (arg == "--help" || arg == "-h") f.help = true;
  else return false;
  return true;
}

inline void require(const std::string& value, const char* flag) {
  if (value.empty()) throw error(std::string("missing required flag ") + flag);
}

/// The plan the flags describe. Also settles the default devices per host.
inline plan plan_from_flags(plan_flags& f) {
  require(f.shape, "--shape");
  require(f.src_mesh, "--src-mesh");
  require(f.src_spec, "--src-spec");
  require(f.dst_mesh, "--dst-mesh");
  require(f.dst_spec, "--dst-spec");
  if (f.same_mesh && !f.dst_devices.empty()) throw error("--same-mesh and --dst-devices exclude each other");
  dynamic_shape shape = parse_shape(f.shape);
  dynamic_mesh src_mesh = parse_mesh(f.src_mesh), dst_mesh = parse_mesh(f.dst_mesh);
  dynamic_layout src(src_mesh, dynamic_spec(f.src_spec), shape);
  dynamic_layout dst(dst_mesh, dynamic_spec(f.dst_spec), shape);
  if (f.devices_per_host < 0) f.devices_per_host = src_mesh.extent(src_mesh.rank() - 1);
  plan_options o;
  o.element_bytes = f.dtype_bytes;
  if (f.same_mesh) o.devices = device_map::same();
  else if (!f.dst_devices.empty()) o.devices = device_map::listed(f.dst_devices);
  return make_plan(src, dst, o);
}

inline const char* plan_flags_help() {
  return "  --shape AxB...          global tensor shape (required)\n"
         "  --dtype-bytes N         bytes per element (default 4)\n"
         "  --src-mesh AxB...       source mesh (required)\n"
         "  --src-spec SPEC         source spec, e.g. S0,R (required)\n"
         "  --dst-mesh AxB...       destination mesh (required)\n"
         "  --dst-spec SPEC         destination spec, e.g. R,S01 (required)\n"
         "  --devices-per-host N    devices per host (default: size of the source mesh's last axis)\n"
         "  --same-mesh             destination devices are the source devices (in-place resharding)\n"
         "  --dst-devices I,J,...   explicit destination device ids (overlapping meshes)\n"
         "  --json                  print one JSON object instead of the summary\n";
}

}  // namespace meshcast::cli

// A model's manifest: every weight of a model, with its layout before and after, written once and
// read by `meshcast-plan --manifest`, `meshcast-reshard --manifest` and `read_manifest`.
//
//   {"devices_per_host": 4,
//    "src": {"mesh": "2x4"},                           "devices" optional: default 0..N-1
//    "dst": {"mesh": "2x2", "devices": [8, 9, 10, 11]},  default: right after the source's
//    "same_mesh": false,                               optional; true: dst devices = src devices
//                                                      (a dst "devices" naming others is an error)
//    "tensors": [{"name": "layers.0.wq", "shape": [512, 512], "dtype_bytes": 2,
//                 "src_spec": "S1,S0", "dst_spec": "S0,R",
//                 "src": {"mesh": "1x4", "devices": [4, 5, 6, 7]}}]}   per-tensor src/dst override
//
// Meshes and specs are written as the CLIs' flags; dtype_bytes is 1, 2, 4 or 8; device d sits on
// host d / devices_per_host; the job has (largest device id + 1) devices. A tensor's own "dst"
// without "devices" starts right after that tensor's source devices. Every malformed field,
// unknown key, spec that does not fit its mesh or shape, and repeated name is a `meshcast::error`
// naming the tensor and the field.
#pragma once

#include <algorithm>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "../core/detail/json.hpp"
#include "../core/detail/read_document.hpp"
#include "../layout/layout.hpp"
#include "../model/network.hpp"
#include "../plan/plan.hpp"
#include "../plan/tensor_layouts.hpp"

namespace meshcast {

/// A mesh of a manifest and the global device id of each of its positions.
struct manifest_mesh {
  extents_value mesh;
  std::vector<index_t> devices;
};

/// The most device ids a manifest's tensors may list in all (source and destination, defaults
/// included: each tensor holds its own lists, so a short file naming large default meshes would
/// otherwise ask for gigabytes).
inline constexpr std::size_t max_manifest_device_ids = std::size_t{1} << 26;

struct manifest {
  /// Devices per host given by the file (0: not given).
  index_t devices_per_host = 0;
  bool same_mesh = false;
  manifest_mesh src, dst;  ///< the defaults
  std::vector<tensor_layouts> tensors;
  index_t device_count = 0;  ///< largest device id + 1

  /// Devices per host in force: `flag` when positive, else the file's, else the source mesh's
  /// last axis.
  index_t devices_per_host_or(index_t flag) const noexcept {
    if (flag > 0) return flag;
    if (devices_per_host > 0) return devices_per_host;
    return src.mesh.rank > 0 ? src.mesh[src.mesh.rank - 1] : 1;
  }
  /// The old name, kept for one release: it never returned hosts.
  [[deprecated("hosts_of returns devices per host: call devices_per_host_or")]]
  index_t hosts_of(index_t flag) const noexcept { return devices_per_host_or(flag); }
};

/// Host of every device of a job of `device_count` devices, `per_host` to a host (d / per_host).
inline std::vector<index_t> hosts_in_order(index_t device_count, index_t per_host) {
  if (device_count < 0 || device_count > max_devices)
    throw error("a device count must be in 0.." + std::to_string(max_devices) + ", got " + std::to_string(device_count));
  if (per_host < 1 || per_host > max_devices)
    throw error("devices per host must be in 1.." + std::to_string(max_devices) + ", got " + std::to_string(per_host));
  std::vector<index_t> h(static_cast<std::size_t>(device_count));
  for (index_t d = 0; d < device_count; ++d) h[static_cast<std::size_t>(d)] = d / per_host;
  return h;
}

/// What the busiest NIC direction must carry whatever the strategy, over its line rate: a host
/// takes in every byte its destination tiles need that no device on it holds; a host that alone
/// holds bytes needed on another host sends them at least once. No latency. (`physical_bound`,
/// lower_bound.hpp, is at least this: it also bounds what sets of hosts must send together.)
inline double busiest_nic_bound_s(const std::vector<plan>& plans, const network& net) {
  for (const plan& p : plans) net.check_describes(p.device_count);
  const auto hosts = static_cast<std::size_t>(net.host_count());
  std::vector<double> in(hosts, 0.0), out(hosts, 0.0);
  std::vector<std::size_t> holds(hosts, 0), got(hosts, 0);
  std::size_t tag = 0;
  for (const plan& p : plans)
    for (std::size_t i = 0; i < p.tasks.size(); ++i) {
      ++tag;
      index_t only = -1, holder_hosts = 0;
      for (index_t s : p.senders(i)) {
        const auto h = static_cast<std::size_t>(net.host_of(s));
        if (holds[h] != tag) holds[h] = tag, ++holder_hosts, only = static_cast<index_t>(h);
      }
      bool leaves = false;
      for (index_t r : p.receivers(i)) {
        const auto h = static_cast<std::size_t>(net.host_of(r));
        if (holds[h] == tag || got[h] == tag) continue;
        got[h] = tag;
        in[h] += static_cast<double>(p.tasks[i].bytes);
        leaves = true;
      }
      if (leaves && holder_hosts == 1) out[static_cast<std::size_t>(only)] += static_cast<double>(p.tasks[i].bytes);
    }
  double bound = 0;
  for (std::size_t h = 0; h < hosts; ++h) {
    bound = std::max(bound, in[h] / net.host_line_ingress_bps(static_cast<index_t>(h)));
    bound = std::max(bound, out[h] / net.host_line_egress_bps(static_cast<index_t>(h)));
  }
  return bound;
}

namespace detail {
// Reads one manifest; `where` names what is being read ("tensor \"x\" (tensors[3])").
class manifest_reader {
 public:
  explicit manifest_reader(std::size_t max_device_ids = max_manifest_device_ids) : max_ids_(max_device_ids) {}
  manifest read(const json::value& doc) {
    only(doc, "the manifest", {"devices_per_host", "src", "dst", "same_mesh", "tensors"});
    manifest m;
    if (const json::value* v = doc.find("devices_per_host"))
      m.devices_per_host = v->as_int("devices_per_host", 1, max_devices);
    if (const json::value* v = doc.find("same_mesh")) m.same_mesh = v->as_bool("same_mesh");
    m.src = mesh_of(required(doc, "src", "the manifest"), "src", {});
    if (m.same_mesh) {
      m.dst = doc.find("dst") ? mesh_of(*doc.find("dst"), "dst", {}) : m.src;
      same_devices(m.src, m.dst, doc.find("dst"), "dst");
    } else {
      m.dst = mesh_of(required(doc, "dst", "the manifest"), "dst", after(m.src.devices));
    }
    count(m, m.src);
    count(m, m.dst);
    const json::array& tensors = required(doc, "tensors", "the manifest").as_array("tensors");
    std::set<std::string> names;
    for (std::size_t k = 0; k < tensors.size(); ++k) {
      const json::value& t = tensors[k];
      std::string where = "tensors[" + std::to_string(k) + "]";
      t.as_object(where);
      const json::value* name = t.find("name");
      if (name && name->is_string() && !name->as_string(where).empty()) where = "tensor \"" + printable(name->as_string(where)) + "\" (" + where + ")";
      try {
        tensor_layouts out = tensor(t, m, where);
        if (!names.insert(out.name).second) throw error(where + ": name: \"" + printable(out.name) + "\" is used twice");
        m.tensors.push_back(std::move(out));
      } catch (const error& e) {
        const std::string text = e.what();
        throw error(text.rfind(where, 0) == 0 ? text : where + ": " + text);
      }
    }
    return m;
  }

 private:
  static void only(const json::value& v, const std::string& what, std::initializer_list<std::string_view> keys) {
    for (const json::member& m : v.as_object(what))
      if (std::find(keys.begin(), keys.end(), m.first) == keys.end())
        throw error(what + ": unknown key \"" + printable(m.first) + "\"");
  }
  static const json::value& required(const json::value& v, std::string_view key, const std::string& what) {
    if (const json::value* x = v.find(key)) return *x;
    throw error(what + ": " + std::string(key) + ": missing");
  }
  // Ids right after the largest of `ids`.
  static std::vector<index_t> after(const std::vector<index_t>& ids) {
    std::vector<index_t> out{ids.empty() ? 0 : *std::max_element(ids.begin(), ids.end()) + 1};
    return out;
  }
  // A mesh object; devices default to consecutive ids from `first` (0 if empty).
  static manifest_mesh mesh_of(const json::value& v, const std::string& what, const std::vector<index_t>& first) {
    only(v, what, {"mesh", "devices"});
    manifest_mesh out;
    const std::string text = required(v, "mesh", what).as_string(what + ".mesh");
    try {
      out.mesh = to_value(parse_mesh(text));
      check_mesh(out.mesh);
    } catch (const error& e) {
      throw error(what + ".mesh: " + e.what());
    }
    const index_t n = out.mesh.product();
    if (n > max_devices) throw error(what + ".mesh: '" + printable(text) + "' has more than meshcast::max_devices devices");
    if (const json::value* d = v.find("devices")) {
      const json::array& ids = d->as_array(what + ".devices");
      if (static_cast<index_t>(ids.size()) != n)
        throw error(what + ".devices: lists " + std::to_string(ids.size()) + " devices but mesh " + printable(text) + " has " +
                    std::to_string(n));
      std::set<index_t> seen;
      for (std::size_t i = 0; i < ids.size(); ++i) {
        const index_t id = ids[i].as_int(what + ".devices[" + std::to_string(i) + "]", 0, max_devices - 1);
        if (!seen.insert(id).second) throw error(what + ".devices: device " + std::to_string(id) + " is listed twice");
        out.devices.push_back(id);
      }
    } else {
      const index_t base = first.empty() ? 0 : first.front();
      if (base + n > max_devices) throw error(what + ": its devices would run past meshcast::max_devices");
      for (index_t i = 0; i < n; ++i) out.devices.push_back(base + i);
    }
    return out;
  }
  // same_mesh puts the destination on the source's devices; a "devices" list that names others
  // contradicts it and is refused (it was dropped unsaid).
  static void same_devices(const manifest_mesh& src, manifest_mesh& dst, const json::value* dst_json, const std::string& what) {
    if (src.devices.size() != dst.devices.size())
      throw error(what + ".mesh: same_mesh needs as many devices as the source mesh (" + std::to_string(src.devices.size()) +
                  "), got " + std::to_string(dst.devices.size()));
    if (dst_json && dst_json->find("devices") && dst.devices != src.devices)
      throw error(what + ".devices: same_mesh puts the destination on the source's devices, and this list names others");
    dst.devices = src.devices;
  }
  static void count(manifest& m, const manifest_mesh& x) {
    for (index_t d : x.devices) m.device_count = std::max(m.device_count, d + 1);
  }
  tensor_layouts tensor(const json::value& t, manifest& m, const std::string& where) {
    only(t, where, {"name", "shape", "dtype_bytes", "src_spec", "dst_spec", "src", "dst"});
    tensor_layouts out;
    out.name = required(t, "name", where).as_string(where + ": name");
    if (out.name.empty()) throw error(where + ": name: must not be empty");
    const json::array& shape = required(t, "shape", where).as_array(where + ": shape");
    if (shape.empty() || shape.size() > static_cast<std::size_t>(max_rank))
      throw error(where + ": shape: must have 1.." + std::to_string(max_rank) + " dims, has " + std::to_string(shape.size()));
    std::vector<index_t> dims;
    for (std::size_t i = 0; i < shape.size(); ++i)
      dims.push_back(shape[i].as_int(where + ": shape[" + std::to_string(i) + "]", 0, std::numeric_limits<std::int64_t>::max()));
    const std::int64_t b = required(t, "dtype_bytes", where).as_int(where + ": dtype_bytes", 1, 8);
    if (b != 1 && b != 2 && b != 4 && b != 8) throw error(where + ": dtype_bytes: must be 1, 2, 4 or 8, got " + std::to_string(b));
    out.element_bytes = static_cast<std::size_t>(b);
    const manifest_mesh src = t.find("src") ? mesh_of(*t.find("src"), where + ": src", {}) : m.src;
    manifest_mesh dst;
    if (m.same_mesh) {
      dst = t.find("dst") ? mesh_of(*t.find("dst"), where + ": dst", {}) : m.dst;
      same_devices(src, dst, t.find("dst"), where + ": dst");
    } else {
      dst = t.find("dst") ? mesh_of(*t.find("dst"), where + ": dst", after(src.devices)) : m.dst;
    }
    extents_value s;
    try {
      s = to_value(dynamic_shape(dims));
    } catch (const error& e) {
      throw error(where + ": shape: " + e.what());
    }
    out.src = layout(src.mesh, required(t, "src_spec", where).as_string(where + ": src_spec"), s, where + ": src_spec");
    out.dst = layout(dst.mesh, required(t, "dst_spec", where).as_string(where + ": dst_spec"), s, where + ": dst_spec");
    listed_ += src.devices.size() + dst.devices.size();
    if (listed_ > max_ids_)
      throw error(where + ": the tensors up to this one list " + std::to_string(listed_) + " device ids in all, more than the " +
                  std::to_string(max_ids_) + " a manifest may list (meshcast::max_manifest_device_ids)");
    out.src_devices = src.devices;
    out.dst_devices = dst.devices;
    count(m, src);
    count(m, dst);
    if (index_t bytes = 0; !detail::product_fits(out.src.shape.product(), static_cast<index_t>(b), bytes))
      throw error(where + ": shape: the tensor has more bytes than fit in 64 bits");
    return out;
  }
  static layout_value layout(const extents_value& mesh, const std::string& spec, const extents_value& shape,
                             const std::string& what) {
    try {
      layout_value l;
      l.mesh = mesh;
      l.spec = dynamic_spec(spec).value();
      l.shape = shape;
      validate(l);
      return l;
    } catch (const error& e) {
      throw error(what + ": '" + printable(spec) + "' on mesh " + mesh.to_string() + ": " + e.what());
    }
  }
  std::size_t max_ids_;
  std::size_t listed_ = 0;  // device ids the tensors read so far list
};
}  // namespace detail

/// The manifest a parsed JSON document gives, validated.
inline manifest parse_manifest(const json::value& doc) { return detail::manifest_reader().read(doc); }
/// The manifest in `text` (JSON).
inline manifest parse_manifest(std::string_view text) { return parse_manifest(json::parse(text)); }
/// The manifest in the file `path`; a file that cannot be read is an error naming it.
inline manifest read_manifest(const std::string& path) {
  const std::string text = detail::read_document(path, "the manifest file");
  // A directory opens but reads as nothing, like an empty file: both are named as such.
  if (text.empty()) throw error("the manifest file '" + detail::printable(path, 1024) + "' is empty or not a regular file");
  return parse_manifest(std::string_view(text));
}

}  // namespace meshcast

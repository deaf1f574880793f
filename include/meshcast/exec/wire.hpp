// A flat form of the ops an executor needs (task, region, bytes, sender, receivers), to hand one
// rank's schedule to the others, and a fingerprint to check that all ranks run the same thing.
#pragma once

#include <cstdint>
#include <vector>

#include "../plan.hpp"
#include "../op.hpp"

namespace meshcast {

inline std::vector<std::int64_t> to_wire(const std::vector<op>& ops) {
  std::vector<std::int64_t> w{static_cast<std::int64_t>(ops.size())};
  for (const op& o : ops) {
    w.push_back(o.task);
    w.push_back(o.region.rank);
    for (int d = 0; d < o.region.rank; ++d) w.push_back(o.region[d].lo), w.push_back(o.region[d].hi);
    w.push_back(o.bytes);
    w.push_back(o.sender);
    w.push_back(static_cast<std::int64_t>(o.receivers.size()));
    for (index_t r : o.receivers) w.push_back(r);
  }
  return w;
}

inline std::vector<op> from_wire(const std::vector<std::int64_t>& w) {
  std::vector<op> ops;
  std::size_t at = 0;
  auto next = [&] {
    if (at >= w.size()) throw error("a schedule message is truncated");
    return w[at++];
  };
  const auto n = next();
  for (std::int64_t i = 0; i < n; ++i) {
    op o;
    o.task = next();
    o.region.rank = static_cast<int>(next());
    if (o.region.rank < 0 || o.region.rank > max_rank) throw error("a schedule message has a bad rank");
    for (int d = 0; d < o.region.rank; ++d) o.region[d].lo = next(), o.region[d].hi = next();
    o.bytes = next();
    o.sender = next();
    const auto k = next();
    for (std::int64_t j = 0; j < k; ++j) o.receivers.push_back(next());
    ops.push_back(std::move(o));
  }
  return ops;
}

/// FNV-1a over the plan's layouts, element size, devices and the ops' wire form.
inline std::uint64_t fingerprint(const plan& p, const std::vector<op>& ops) {
  std::uint64_t h = 1469598103934665603ULL;
  auto mix = [&](std::int64_t v) {
    for (int i = 0; i < 8; ++i) h = (h ^ static_cast<std::uint8_t>(v >> (8 * i))) * 1099511628211ULL;
  };
  for (const layout_value* l : {&p.src, &p.dst}) {
    for (int d = 0; d < l->mesh.rank; ++d) mix(l->mesh[d]);
    for (int d = 0; d < l->shape.rank; ++d) mix(l->shape[d]);
    for (int d = 0; d < l->spec.rank; ++d) {
      mix(-1 - l->spec.dims[d].axis_count);
      for (int a = 0; a < l->spec.dims[d].axis_count; ++a) mix(l->spec.dims[d].axes[a]);
    }
  }
  mix(p.element_bytes);
  for (index_t d : p.dst_devices) mix(d);
  for (std::int64_t v : to_wire(ops)) mix(v);
  return h;
}

}  // namespace meshcast

// The plans of a batch of tensors (layout/tensor_layouts.hpp), all over the same devices.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "../core/detail/checked.hpp"
#include "../layout/layout.hpp"
#include "../layout/tensor_layouts.hpp"
#include "plan.hpp"

namespace meshcast {

/// The plan of every tensor of a batch, all over the same `device_count` devices (0: each its own).
inline std::vector<plan> make_plans(const std::vector<tensor_layouts>& tensors, const device_map& devices = {},
                                    index_t device_count = 0) {
  std::vector<plan> plans;
  plans.reserve(tensors.size());
  for (std::size_t k = 0; k < tensors.size(); ++k) {
    const tensor_layouts& t = tensors[k];
    try {
      plan_options o;
      o.element_bytes = detail::checked_cast<index_t>(t.element_bytes, "the element size");
      o.devices = t.dst_devices.empty() ? devices : device_map::listed(t.dst_devices);
      o.src_devices = t.src_devices;
      o.device_count = device_count;
      plans.push_back(make_plan(t.src, t.dst, o));
    } catch (const error& e) {
      if (tensors.size() == 1 && t.name.empty()) throw;
      throw error("tensor " + (t.name.empty() ? std::to_string(k) : "\"" + detail::printable(t.name) + "\"") + ": " + e.what());
    }
  }
  return plans;
}

}  // namespace meshcast

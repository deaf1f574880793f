// One tensor of a batch: its two layouts, element size and, where they are not the batch's
// defaults, the devices that hold it before and after.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "../core/config.hpp"
#include "layout.hpp"

namespace meshcast {

struct tensor_layouts {
  layout_value src, dst;
  std::size_t element_bytes = 4;
  /// Global id of each source mesh position; empty: 0..N-1.
  std::vector<index_t> src_devices{};
  /// Global id of each destination mesh position; empty: the batch's `device_map`.
  std::vector<index_t> dst_devices{};
  /// A name for messages (a model's parameter name); may be empty.
  std::string name{};
};

}  // namespace meshcast

// Members a reader does not know. The pipeline and model-graph formats ignore them (their
// contract); listing them lets a program warn that "edgez" was not read, rather than run a
// pipeline without edges and say nothing.
#pragma once

#include <algorithm>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "../error.hpp"
#include "json.hpp"

namespace meshcast::json {

/// Appends to `out` the path of every member of `v` not named in `known`: `where.name`, or the name
/// alone where `where` is empty (the document itself); control bytes escaped. Nothing where `v` is
/// not an object.
inline void unknown_members(const value& v, std::initializer_list<std::string_view> known, const std::string& where,
                            std::vector<std::string>& out) {
  if (!v.is_object()) return;
  for (const member& m : v.as_object(where))
    if (std::find(known.begin(), known.end(), m.first) == known.end())
      out.push_back((where.empty() ? "" : where + ".") + meshcast::detail::printable(m.first));
}

}  // namespace meshcast::json

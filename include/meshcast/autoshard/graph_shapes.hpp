// The graph (graph.hpp), part: the output shape of each op, inferred from its inputs and
// attributes (the op types' rules are in graph.hpp's first comment).
#pragma once

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "graph.hpp"

namespace meshcast::autoshard {

inline std::vector<index_t> graph::infer(const op_args& a, op_desc& o) const {
  const std::string what = "op '" + a.name + "' (" + a.type + ")";
  auto shape = [&](int i) -> const std::vector<index_t>& { return tensors_[o.inputs[i]].shape; };
  auto name = [&](int i) { return "'" + tensors_[o.inputs[i]].name + "'"; };
  auto want_inputs = [&](std::size_t n) {
    if (o.inputs.size() != n)
      throw error(what + ": takes " + std::to_string(n) + " input" + (n > 1 ? "s" : "") + ", got " +
                  std::to_string(o.inputs.size()));
  };
  auto broadcast = [&](const std::vector<index_t>& x, const std::vector<index_t>& y, const std::string& xs,
                       const std::string& ys) {
    std::vector<index_t> out(std::max(x.size(), y.size()));
    for (std::size_t k = 0; k < out.size(); ++k) {
      index_t dx = k < x.size() ? x[x.size() - 1 - k] : 1, dy = k < y.size() ? y[y.size() - 1 - k] : 1;
      if (dx != dy && dx != 1 && dy != 1)
        throw error(what + ": " + xs + " " + detail::shape_text(x) + " and " + ys + " " + detail::shape_text(y) +
                    " do not broadcast");
      out[out.size() - 1 - k] = std::max(dx, dy);
    }
    return out;
  };
  switch (o.kind) {
    case op_kind::matmul: {
      want_inputs(2);
      const auto &x = shape(0), &y = shape(1);
      if (x.size() < 2 || y.size() < 2)
        throw error(what + ": both inputs need at least 2 dims, got " + name(0) + " " + detail::shape_text(x) + " and " +
                    name(1) + " " + detail::shape_text(y));
      if (x.back() != y[y.size() - 2])
        throw error(what + ": contracted dims differ: " + name(0) + " " + detail::shape_text(x) + " has " +
                    std::to_string(x.back()) + ", " + name(1) + " " + detail::shape_text(y) + " has " +
                    std::to_string(y[y.size() - 2]));
      std::vector<index_t> bx(x.begin(), x.end() - 2), by(y.begin(), y.end() - 2);
      auto out = broadcast(bx, by, name(0) + " (batch dims)", name(1) + " (batch dims)");
      out.push_back(x[x.size() - 2]);
      out.push_back(y.back());
      if (out.size() > static_cast<std::size_t>(max_rank - 1))
        throw error(what + ": output of " + std::to_string(out.size()) + " dims; at most " +
                    std::to_string(max_rank - 1) + " are supported");
      index_t batch = 1;
      for (std::size_t k = 0; k + 2 < out.size(); ++k) batch = checked_mul(batch, out[k], what + " flops");
      o.flops = 2.0 * static_cast<double>(batch) * static_cast<double>(x[x.size() - 2]) * static_cast<double>(x.back()) *
                static_cast<double>(y.back());
      return out;
    }
    case op_kind::unary:
    case op_kind::softmax:
    case op_kind::layernorm: {
      want_inputs(1);
      if (o.kind != op_kind::unary) o.axis = detail::normal_axis(a.axis, shape(0).size(), what);
      return shape(0);
    }
    case op_kind::binary: {
      want_inputs(2);
      return broadcast(shape(0), shape(1), name(0), name(1));
    }
    case op_kind::reduce_sum: {
      want_inputs(1);
      o.axis = detail::normal_axis(a.axis, shape(0).size(), what);
      o.keepdims = a.keepdims;
      std::vector<index_t> out = shape(0);
      if (o.keepdims) {
        out[o.axis] = 1;
      } else {
        if (out.size() == 1) throw error(what + ": reducing a 1-dim tensor leaves no dims; set \"keepdims\": true");
        out.erase(out.begin() + o.axis);
      }
      return out;
    }
    case op_kind::transpose: {
      want_inputs(1);
      const int r = static_cast<int>(shape(0).size());
      std::vector<int> perm = a.perm;
      if (perm.empty()) {
        if (r < 2) throw error(what + ": a 1-dim tensor has nothing to transpose");
        for (int k = 0; k < r; ++k) perm.push_back(k);
        std::swap(perm[r - 1], perm[r - 2]);
      }
      if (static_cast<int>(perm.size()) != r)
        throw error(what + ": perm has " + std::to_string(perm.size()) + " entries for a tensor of " +
                    std::to_string(r) + " dims");
      std::vector<bool> seen(static_cast<std::size_t>(r), false);
      for (int p : perm) {
        if (p < 0 || p >= r || seen[p]) throw error(what + ": perm is not a permutation of 0.." + std::to_string(r - 1));
        seen[p] = true;
      }
      o.perm = perm;
      std::vector<index_t> out;
      for (int p : perm) out.push_back(shape(0)[p]);
      return out;
    }
    case op_kind::reshape: {
      want_inputs(1);
      const int declared = find_tensor(a.output);
      std::vector<index_t> out = a.shape;
      if (out.empty() && declared >= 0) out = tensors_[declared].shape;
      if (out.empty())
        throw error(what + ": the target shape is unknown: declare tensor '" + a.output + "' or give \"shape\"");
      index_t n = 1;
      for (index_t d : out) {
        if (d < 1) throw error(what + ": target shape " + detail::shape_text(out) + " has a dim below 1");
        n = checked_mul(n, d, what + " target shape");
      }
      if (n != tensors_[o.inputs[0]].elements)
        throw error(what + ": target shape " + detail::shape_text(out) + " does not hold the " +
                    std::to_string(tensors_[o.inputs[0]].elements) + " elements of " + name(0) + " " +
                    detail::shape_text(shape(0)));
      return out;
    }
  }
  return {};
}

}  // namespace meshcast::autoshard

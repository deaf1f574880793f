// meshcast-autoshard-mlp-mpi (../autoshard_mlp_mpi.cpp), part: the graph, what this example can execute, and tiles.
// Included once, by that program's one translation unit: its names stay in an unnamed namespace.
#pragma once

#include "options.hpp"

namespace {

// ---- the graph and what this example can execute ---------------------------------------------

const char* const unary_ops[] = {"relu", "gelu", "silu", "tanh", "sigmoid", "exp", "neg", "square", "abs", "identity"};
const char* const binary_ops[] = {"add", "sub", "mul", "maximum", "minimum"};

bool listed(const std::string& type, const auto& list) {
  return std::any_of(std::begin(list), std::end(list), [&](const char* n) { return type == n; });
}

as::graph make_mlp(const options& o) {
  as::graph g;
  g.element_bytes = 4;
  g.add_tensor("x", {o.batch, o.hidden}, false,
               o.x_spec == "free" ? std::nullopt : std::optional<std::string>(o.x_spec));
  g.add_tensor("w1", {o.hidden, o.ffn}, true);
  g.add_tensor("w2", {o.ffn, o.hidden}, true);
  auto op = [&](std::string name, std::string type, std::vector<std::string> inputs, std::string output) {
    as::op_args a;
    a.name = std::move(name), a.type = std::move(type), a.inputs = std::move(inputs), a.output = std::move(output);
    g.add_op(std::move(a));
  };
  op("fc1", "matmul", {"x", "w1"}, "h");
  op("act", o.activation, {"h"}, "a");
  op("fc2", "matmul", {"a", "w2"}, "y");
  g.add_output("y", o.y_spec == "any" ? std::nullopt : std::optional<std::string>(o.y_spec));
  g.finalize();
  return g;
}

void check_executable(const as::graph& g) {
  if (g.element_bytes != 4) throw error("the graph's element_bytes is " + std::to_string(g.element_bytes) +
                                        "; this example computes in 4-byte floats");
  if (g.training) throw error("the graph is a training graph; this example runs forward passes only");
  for (const as::op_desc& op : g.ops()) {
    const auto& ts = g.tensors();
    const std::string what = "op '" + op.name + "' (" + op.type + ")";
    if (op.kind == as::op_kind::matmul) {
      if (ts[op.inputs[0]].shape.size() != 2 || ts[op.inputs[1]].shape.size() != 2)
        throw error(what + ": this example multiplies 2-D matrices only");
    } else if (op.kind == as::op_kind::unary) {
      if (!listed(op.type, unary_ops)) throw error(what + ": this example does not compute it");
    } else if (op.kind == as::op_kind::binary) {
      if (!listed(op.type, binary_ops)) throw error(what + ": this example does not compute it");
      if (ts[op.inputs[0]].shape != ts[op.inputs[1]].shape)
        throw error(what + ": this example computes binary ops of equal shapes only (no broadcasting)");
    } else {
      throw error(what + ": this example computes 2-D matmul and elementwise ops only");
    }
  }
}

using unary_fn = float (*)(float);
using binary_fn = float (*)(float, float);

/// The function of an elementwise unary op (checked by check_executable).
unary_fn unary(const std::string& t) {
  if (t == "relu") return [](float x) { return x > 0 ? x : 0.0f; };
  if (t == "gelu") return [](float x) { return 0.5f * x * (1.0f + std::tanh(0.7978845608f * (x + 0.044715f * x * x * x))); };
  if (t == "silu") return [](float x) { return x / (1.0f + std::exp(-x)); };
  if (t == "tanh") return [](float x) { return std::tanh(x); };
  if (t == "sigmoid") return [](float x) { return 1.0f / (1.0f + std::exp(-x)); };
  if (t == "exp") return [](float x) { return std::exp(x); };
  if (t == "neg") return [](float x) { return -x; };
  if (t == "square") return [](float x) { return x * x; };
  if (t == "abs") return [](float x) { return std::fabs(x); };
  return [](float x) { return x; };  // identity
}

binary_fn binary(const std::string& t) {
  if (t == "add") return [](float x, float y) { return x + y; };
  if (t == "sub") return [](float x, float y) { return x - y; };
  if (t == "mul") return [](float x, float y) { return x * y; };
  if (t == "maximum") return [](float x, float y) { return std::max(x, y); };
  return [](float x, float y) { return std::min(x, y); };
}

/// Value of element `linear` (global row-major index) of tensor `t`: uniform in [-1, 1), scaled
/// by 1/sqrt(rows) for parameters so that products stay of order one.
float fill_value(int t, index_t linear, float scale) {
  std::uint64_t z = (static_cast<std::uint64_t>(t) + 1) * 0x9E3779B97F4A7C15ULL + static_cast<std::uint64_t>(linear);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  z ^= z >> 31;
  return static_cast<float>(static_cast<double>(z >> 40) / static_cast<double>(1 << 24) * 2 - 1) * scale;
}

float fill_scale(const as::tensor_desc& t) {
  return t.parameter ? 1.0f / std::sqrt(static_cast<float>(t.shape[0])) : 1.0f;
}

// ---- tiles -----------------------------------------------------------------------------------

/// Calls f(linear index in `shape`, position in `b`'s row-major order) for every element of box b.
template <class F>
void for_each_in(const mc::box& b, const std::vector<index_t>& shape, F&& f) {
  if (b.empty()) return;
  std::vector<index_t> idx(static_cast<std::size_t>(b.rank));
  for (int d = 0; d < b.rank; ++d) idx[d] = b[d].lo;
  for (index_t pos = 0;; ++pos) {
    index_t linear = 0;
    for (int d = 0; d < b.rank; ++d) linear = linear * shape[d] + idx[d];
    f(linear, pos);
    int d = b.rank - 1;
    while (d >= 0 && ++idx[d] == b[d].hi) idx[d] = b[d].lo, --d;
    if (d < 0) return;
  }
}

/// Copies `region` from `src` (dense over box `from`) to `dst` (dense over box `to`).
void copy_region(const float* src, const mc::box& from, float* dst, const mc::box& to, const mc::box& region) {
  if (region.empty()) return;
  std::vector<index_t> shape_from(from.rank), shape_to(to.rank);
  for (int d = 0; d < from.rank; ++d) shape_from[d] = from[d].size(), shape_to[d] = to[d].size();
  mc::box in_from = region, in_to = region;
  for (int d = 0; d < region.rank; ++d) {
    in_from[d] = {region[d].lo - from[d].lo, region[d].hi - from[d].lo};
    in_to[d] = {region[d].lo - to[d].lo, region[d].hi - to[d].lo};
  }
  std::vector<index_t> dst_pos;
  dst_pos.reserve(static_cast<std::size_t>(region.volume()));
  for_each_in(in_to, shape_to, [&](index_t linear, index_t) { dst_pos.push_back(linear); });
  for_each_in(in_from, shape_from, [&](index_t linear, index_t pos) { dst[dst_pos[pos]] = src[linear]; });
}

struct fixed_layout {
  mc::layout_value v;
  mc::layout_value value() const { return v; }
};

}  // namespace

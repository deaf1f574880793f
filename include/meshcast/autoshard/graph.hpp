// The model graph that automatic sharding works on: tensors (shapes, parameters, optional fixed
// specs), operators (one output each), graph outputs (optionally with a required spec).
//
// Build it in C++ or read it from JSON (autoshard/graph_json.hpp); `finalize()` resolves names,
// orders the ops, infers undeclared shapes and checks everything, with errors naming the tensor,
// op or field at fault.
//
// Op types and what they compute (shapes right-aligned for broadcasting):
//   matmul      A[..., M, K] x B[..., K, N] -> [..., M, N]; leading (batch) dims broadcast
//   unary       relu gelu silu exp log tanh sigmoid neg sqrt rsqrt square abs erf sin cos
//               identity dropout scale: same shape as the input
//   binary      add sub mul div maximum minimum: numpy broadcasting (a dim is equal or 1 or absent)
//   softmax     over "axis" (default -1); layernorm over "axis" (default -1)
//   reduce_sum  over "axis" (default -1), "keepdims" (default false)
//   transpose   "perm" (default: swap the last two dims)
//   reshape     to the output tensor's declared shape or "shape"; splits or merges dims
#pragma once

#include <algorithm>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "../config.hpp"
#include "../error.hpp"
#include "../spec.hpp"
#include "checked.hpp"

namespace meshcast::autoshard {

enum class op_kind { matmul, unary, binary, softmax, layernorm, reduce_sum, transpose, reshape };

/// The kind an op type name belongs to; false when the name is unknown.
inline bool kind_of_type(const std::string& type, op_kind& kind) {
  static const char* const unary[] = {"relu", "gelu", "silu", "exp", "log", "tanh", "sigmoid", "neg", "sqrt",
                                      "rsqrt", "square", "abs", "erf", "sin", "cos", "identity", "dropout", "scale"};
  static const char* const binary[] = {"add", "sub", "mul", "div", "maximum", "minimum"};
  for (const char* u : unary)
    if (type == u) return kind = op_kind::unary, true;
  for (const char* b : binary)
    if (type == b) return kind = op_kind::binary, true;
  if (type == "matmul") return kind = op_kind::matmul, true;
  if (type == "softmax") return kind = op_kind::softmax, true;
  if (type == "layernorm") return kind = op_kind::layernorm, true;
  if (type == "reduce_sum") return kind = op_kind::reduce_sum, true;
  if (type == "transpose") return kind = op_kind::transpose, true;
  if (type == "reshape") return kind = op_kind::reshape, true;
  return false;
}

inline constexpr const char* known_op_types =
    "matmul, relu, gelu, silu, exp, log, tanh, sigmoid, neg, sqrt, rsqrt, square, abs, erf, sin, cos, identity, "
    "dropout, scale, add, sub, mul, div, maximum, minimum, softmax, layernorm, reduce_sum, transpose, reshape";

struct tensor_desc {
  std::string name;
  std::vector<index_t> shape;
  bool parameter = false;
  std::optional<spec_value> spec;  ///< fixed spec, when given
  // Filled by finalize():
  int producer = -1;                            ///< op index, -1 for graph inputs and parameters
  std::vector<std::pair<int, int>> consumers;   ///< (op, input slot)
  bool requires_grad = false;                   ///< a parameter, or computed from one
  index_t elements = 0;
  index_t bytes = 0;
};

/// What an op is built from (names, so that ops may be listed before the tensors they make).
struct op_args {
  std::string name;
  std::string type;
  std::vector<std::string> inputs;
  std::string output;
  std::optional<int> axis;           ///< softmax, layernorm, reduce_sum
  bool keepdims = false;             ///< reduce_sum
  std::vector<int> perm;             ///< transpose
  std::vector<index_t> shape;        ///< reshape (else the output tensor's declared shape)
};

struct op_desc {
  std::string name;
  std::string type;
  op_kind kind = op_kind::unary;
  std::vector<int> inputs;
  int output = -1;
  int axis = -1;  ///< normalised to [0, rank)
  bool keepdims = false;
  std::vector<int> perm;
  double flops = 0;  ///< forward floating-point operations (see flops_of)
};

struct output_desc {
  int tensor = -1;
  std::optional<spec_value> spec;
};

class graph {
 public:
  index_t element_bytes = 4;
  bool training = false;

  /// Declares a tensor: a graph input, a parameter, or an op output whose shape is checked.
  void add_tensor(std::string name, std::vector<index_t> shape, bool parameter = false,
                  std::optional<std::string> spec = std::nullopt) {
    finalized_ = false;
    declared_.push_back({std::move(name), std::move(shape), parameter, std::move(spec)});
  }
  void add_op(op_args a) {
    finalized_ = false;
    args_.push_back(std::move(a));
  }
  /// Marks a tensor as a graph output, optionally with the spec it must be delivered in.
  void add_output(std::string tensor, std::optional<std::string> spec = std::nullopt) {
    finalized_ = false;
    outputs_args_.push_back({std::move(tensor), std::move(spec)});
  }

  /// Resolves and checks everything; throws `meshcast::error` naming the first problem.
  void finalize();

  bool finalized() const noexcept { return finalized_; }
  const std::vector<tensor_desc>& tensors() const { return need(), tensors_; }
  const std::vector<op_desc>& ops() const { return need(), ops_; }
  const std::vector<output_desc>& outputs() const { return need(), outputs_; }
  /// Op indices in a topological order (the listed order whenever that is one).
  const std::vector<int>& order() const { return need(), order_; }
  /// Index of the tensor named `name`, or -1.
  int find_tensor(const std::string& name) const {
    auto it = by_name_.find(name);
    return it == by_name_.end() ? -1 : it->second;
  }

 private:
  struct declared {
    std::string name;
    std::vector<index_t> shape;
    bool parameter;
    std::optional<std::string> spec;
  };
  struct output_args {
    std::string tensor;
    std::optional<std::string> spec;
  };
  void need() const {
    if (!finalized_) throw error("the graph is not finalized: call finalize() after building it");
  }
  void set_sizes(tensor_desc& t) const;
  std::vector<index_t> infer(const op_args& a, op_desc& o) const;

  std::vector<declared> declared_;
  std::vector<op_args> args_;
  std::vector<output_args> outputs_args_;
  bool finalized_ = false;
  std::vector<tensor_desc> tensors_;
  std::vector<op_desc> ops_;
  std::vector<output_desc> outputs_;
  std::vector<int> order_;
  std::unordered_map<std::string, int> by_name_;
};

namespace detail {
inline std::string shape_text(const std::vector<index_t>& s) {
  std::string t = "[";
  for (std::size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
  return t + "]";
}

inline spec_value parse_spec_for(const std::string& text, std::size_t rank, const std::string& what) {
  spec_value v;
  try {
    v = dynamic_spec(text).value();
  } catch (const error& e) {
    throw error(what + ": " + e.what());
  }
  if (static_cast<std::size_t>(v.rank) != rank)
    throw error(what + ": spec '" + text + "' has " + std::to_string(v.rank) + " entries but the tensor has " +
                std::to_string(rank) + " dims");
  return v;
}

inline int normal_axis(std::optional<int> axis, std::size_t rank, const std::string& what) {
  const int r = static_cast<int>(rank);
  int a = axis.value_or(-1);
  if (a < -r || a >= r)
    throw error(what + ": axis " + std::to_string(a) + " is outside a tensor of " + std::to_string(r) + " dims");
  return a < 0 ? a + r : a;
}
}  // namespace detail

inline void graph::set_sizes(tensor_desc& t) const {
  const std::string what = "tensor '" + t.name + "'";
  if (t.shape.empty() || t.shape.size() > static_cast<std::size_t>(max_rank))
    throw error(what + ": a shape needs 1 to " + std::to_string(max_rank) + " dims, got " +
                std::to_string(t.shape.size()));
  index_t n = 1;
  for (index_t d : t.shape) {
    if (d < 1) throw error(what + ": shape " + detail::shape_text(t.shape) + " has a dim below 1");
    n = checked_mul(n, d, what + " element count");
  }
  t.elements = n;
  t.bytes = checked_mul(n, element_bytes, what + " bytes");
}

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

inline void graph::finalize() {
  tensors_.clear();
  ops_.clear();
  outputs_.clear();
  order_.clear();
  by_name_.clear();
  finalized_ = false;
  if (element_bytes < 1 || element_bytes > 1024)
    throw error("element_bytes must be between 1 and 1024, got " + std::to_string(element_bytes));

  for (const declared& d : declared_) {
    if (d.name.empty()) throw error("a tensor has an empty name");
    if (by_name_.count(d.name)) throw error("tensor '" + d.name + "' is declared twice");
    tensor_desc t;
    t.name = d.name;
    t.shape = d.shape;
    t.parameter = d.parameter;
    set_sizes(t);
    if (d.spec) t.spec = detail::parse_spec_for(*d.spec, t.shape.size(), "tensor '" + d.name + "'");
    by_name_[d.name] = static_cast<int>(tensors_.size());
    tensors_.push_back(std::move(t));
  }

  // Producers by output name; ops ordered by their inputs (Kahn, listed order among the ready).
  std::unordered_map<std::string, int> producer_of;
  std::unordered_map<std::string, int> op_names;
  for (std::size_t i = 0; i < args_.size(); ++i) {
    const op_args& a = args_[i];
    if (a.name.empty()) throw error("op " + std::to_string(i) + " has an empty name");
    if (!op_names.emplace(a.name, static_cast<int>(i)).second) throw error("op '" + a.name + "' is listed twice");
    op_kind k;
    if (!kind_of_type(a.type, k))
      throw error("op '" + a.name + "': unknown type '" + a.type + "' (known: " + known_op_types + ")");
    if (a.output.empty()) throw error("op '" + a.name + "' has no output");
    auto [it, fresh] = producer_of.emplace(a.output, static_cast<int>(i));
    if (!fresh)
      throw error("tensor '" + a.output + "' is the output of both op '" + args_[it->second].name + "' and op '" +
                  a.name + "'");
    const int t = find_tensor(a.output);
    if (t >= 0 && tensors_[t].parameter)
      throw error("op '" + a.name + "': its output '" + a.output + "' is declared a parameter");
  }
  std::vector<int> waiting(args_.size(), 0);
  std::vector<std::vector<int>> users(args_.size());
  for (std::size_t i = 0; i < args_.size(); ++i)
    for (const std::string& in : args_[i].inputs) {
      auto p = producer_of.find(in);
      if (p != producer_of.end()) {
        ++waiting[i];
        users[p->second].push_back(static_cast<int>(i));
      } else if (find_tensor(in) < 0) {
        throw error("op '" + args_[i].name + "': input '" + in + "' is neither a declared tensor nor an op output");
      }
    }
  {
    std::vector<int> ready;  // a min-heap on the listed index keeps the listed order when it is topological
    for (std::size_t i = 0; i < args_.size(); ++i)
      if (!waiting[i]) ready.push_back(static_cast<int>(i));
    std::make_heap(ready.begin(), ready.end(), std::greater<>());
    while (!ready.empty()) {
      std::pop_heap(ready.begin(), ready.end(), std::greater<>());
      const int i = ready.back();
      ready.pop_back();
      order_.push_back(i);
      for (int u : users[i])
        if (--waiting[u] == 0) ready.push_back(u), std::push_heap(ready.begin(), ready.end(), std::greater<>());
    }
    if (order_.size() != args_.size())
      for (std::size_t i = 0; i < args_.size(); ++i)
        if (waiting[i]) throw error("op '" + args_[i].name + "' is on a cycle: ops must form a directed acyclic graph");
  }

  ops_.resize(args_.size());
  for (int i : order_) {
    const op_args& a = args_[i];
    op_desc& o = ops_[i];
    o.name = a.name;
    o.type = a.type;
    kind_of_type(a.type, o.kind);
    for (const std::string& in : a.inputs) o.inputs.push_back(find_tensor(in));
    std::vector<index_t> shape = infer(a, o);
    if (o.kind == op_kind::unary || o.kind == op_kind::binary || o.kind == op_kind::softmax) {
      index_t n = 1;
      for (index_t d : shape) n = checked_mul(n, d, "op '" + a.name + "' output");
      o.flops = static_cast<double>(n);
    } else if (o.kind == op_kind::layernorm) {
      o.flops = 5.0 * static_cast<double>(tensors_[o.inputs[0]].elements);
    } else if (o.kind == op_kind::reduce_sum) {
      o.flops = static_cast<double>(tensors_[o.inputs[0]].elements);
    }
    int t = find_tensor(a.output);
    if (t >= 0) {
      if (tensors_[t].shape != shape)
        throw error("op '" + a.name + "' computes " + detail::shape_text(shape) + " but tensor '" + a.output +
                    "' is declared " + detail::shape_text(tensors_[t].shape));
    } else {
      tensor_desc d;
      d.name = a.output;
      d.shape = shape;
      set_sizes(d);
      t = static_cast<int>(tensors_.size());
      by_name_[a.output] = t;
      tensors_.push_back(std::move(d));
    }
    o.output = t;
    tensors_[t].producer = i;
  }
  for (std::size_t i = 0; i < ops_.size(); ++i)
    for (std::size_t s = 0; s < ops_[i].inputs.size(); ++s)
      tensors_[ops_[i].inputs[s]].consumers.push_back({static_cast<int>(i), static_cast<int>(s)});
  for (tensor_desc& t : tensors_) t.requires_grad = t.parameter;
  for (int i : order_) {
    bool g = false;
    for (int in : ops_[i].inputs) g |= tensors_[in].requires_grad;
    tensors_[ops_[i].output].requires_grad = g;
  }

  std::vector<char> is_output(tensors_.size(), 0);
  for (const output_args& o : outputs_args_) {
    const int t = find_tensor(o.tensor);
    if (t < 0) throw error("outputs: tensor '" + o.tensor + "' does not exist");
    if (is_output[t]) throw error("outputs: tensor '" + o.tensor + "' is listed twice");
    is_output[t] = 1;
    output_desc d;
    d.tensor = t;
    if (o.spec) d.spec = detail::parse_spec_for(*o.spec, tensors_[t].shape.size(), "outputs: tensor '" + o.tensor + "'");
    outputs_.push_back(d);
  }
  finalized_ = true;
}

}  // namespace meshcast::autoshard

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

#include "../core/config.hpp"
#include "../core/error.hpp"
#include "../core/spec.hpp"
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

}  // namespace meshcast::autoshard

// The longer member functions, one file each (each includes this one).
#include "graph_shapes.hpp"
#include "graph_finalize.hpp"

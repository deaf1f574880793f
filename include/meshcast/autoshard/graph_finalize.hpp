// The graph (graph.hpp), part: finalize() resolves names, orders the ops, infers undeclared
// shapes and checks everything, with errors naming the tensor, op or field at fault.
#pragma once

#include <algorithm>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "graph.hpp"

namespace meshcast::autoshard {

namespace detail {
// Names and types reach messages and the tools' tables: no control characters (C0 with NUL, DEL,
// and C1, U+0080-U+009F, which is C2 80..C2 9F in the UTF-8 that the JSON reader checks).
inline void check_name(const std::string& name, const std::string& what) {
  for (std::size_t i = 0; i < name.size(); ++i)
    if (meshcast::detail::ascii_control(static_cast<unsigned char>(name[i])) || meshcast::detail::c1_control_at(name, i))
      throw error(what + " '" + meshcast::detail::printable(name) + "' holds a control character");
}
}  // namespace detail

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
    detail::check_name(d.name, "tensor name");
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
    detail::check_name(a.name, "op name");
    detail::check_name(a.type, "op '" + a.name + "': type");
    detail::check_name(a.output, "op '" + a.name + "': output");
    for (const std::string& in : a.inputs) detail::check_name(in, "op '" + a.name + "': input");
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
    if (t < 0) throw error("outputs: tensor '" + meshcast::detail::printable(o.tensor) + "' does not exist");
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

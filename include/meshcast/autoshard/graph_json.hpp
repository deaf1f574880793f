// The JSON form of a model graph and of a spec assignment (the contract of meshcast-autoshard):
//
//   {"element_bytes": 4, "training": false,
//    "tensors": {"x": {"shape": [32, 1024], "spec": "R,R"}, "w1": {"shape": [1024, 4096], "parameter": true}},
//    "ops": [{"name": "fc1", "type": "matmul", "inputs": ["x", "w1"], "output": "h"},
//            {"name": "act", "type": "gelu", "inputs": ["h"], "output": "a"}],
//    "outputs": {"a": "R,R"}}
//
// "tensors" declares graph inputs, parameters and, optionally, op outputs (whose shapes are then
// checked; undeclared op outputs get the inferred shape). "outputs" maps a tensor to the spec it
// must be delivered in, or to null for any spec (a list of names is accepted too). Op attributes:
// "axis" (softmax, layernorm, reduce_sum), "keepdims" (reduce_sum), "perm" (transpose),
// "shape" (reshape); "dim", "keepdim" and "axes" are accepted for the first three. Members not
// named here are ignored (ignored_graph_members lists them, for a program to warn).
//
// A spec assignment is {"specs": {"x": "R,R", "w1": "R,S0", ...}} with one entry per tensor.
#pragma once

#include <limits>
#include <string>
#include <vector>

#include "../core/detail/json.hpp"
#include "../core/detail/json_members.hpp"
#include "graph.hpp"

namespace meshcast::autoshard {

namespace detail {
inline std::vector<index_t> json_shape(const json::value& v, const std::string& what) {
  std::vector<index_t> s;
  const json::array& a = v.as_array(what);
  for (std::size_t i = 0; i < a.size(); ++i)
    s.push_back(a[i].as_int(what + "[" + std::to_string(i) + "]", 1, std::numeric_limits<index_t>::max()));
  return s;
}
}  // namespace detail

/// Builds (and finalizes) a graph from its JSON form; errors name the member at fault.
inline graph graph_from_json(const json::value& doc) {
  graph g;
  doc.as_object("the graph document");
  if (const json::value* v = doc.find("element_bytes")) g.element_bytes = v->as_int("element_bytes", 1, 1024);
  if (const json::value* v = doc.find("training")) g.training = v->as_bool("training");
  for (const json::member& m : doc.at("tensors", "the graph document").as_object("tensors")) {
    const std::string what = "tensors." + m.first;
    m.second.as_object(what);
    std::vector<index_t> shape = detail::json_shape(m.second.at("shape", what), what + ".shape");
    bool parameter = false;
    if (const json::value* p = m.second.find("parameter")) parameter = p->as_bool(what + ".parameter");
    std::optional<std::string> spec;
    if (const json::value* s = m.second.find("spec"); s && !s->is_null()) spec = s->as_string(what + ".spec");
    g.add_tensor(m.first, std::move(shape), parameter, std::move(spec));
  }
  const json::array& ops = doc.at("ops", "the graph document").as_array("ops");
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const std::string what = "ops[" + std::to_string(i) + "]";
    const json::value& o = ops[i];
    o.as_object(what);
    op_args a;
    a.name = o.at("name", what).as_string(what + ".name");
    const std::string named = what + " ('" + a.name + "')";
    a.type = o.at("type", named).as_string(named + ".type");
    for (const json::value& in : o.at("inputs", named).as_array(named + ".inputs"))
      a.inputs.push_back(in.as_string(named + ".inputs[]"));
    a.output = o.at("output", named).as_string(named + ".output");
    // "dim", "keepdim" and "axes" are accepted for "axis", "keepdims" and "perm" (PyTorch's and
    // NumPy's names).
    auto either = [&](const char* name, const char* alias) {
      const json::value* v = o.find(name);
      return v ? v : o.find(alias);
    };
    if (const json::value* v = either("axis", "dim"))
      a.axis = static_cast<int>(v->as_int(named + ".axis", -max_rank, max_rank));
    if (const json::value* v = either("keepdims", "keepdim")) a.keepdims = v->as_bool(named + ".keepdims");
    if (const json::value* v = either("perm", "axes"))
      for (const json::value& p : v->as_array(named + ".perm"))
        a.perm.push_back(static_cast<int>(p.as_int(named + ".perm[]", 0, max_rank - 1)));
    if (const json::value* v = o.find("shape")) a.shape = detail::json_shape(*v, named + ".shape");
    g.add_op(std::move(a));
  }
  if (const json::value* outs = doc.find("outputs")) {
    if (outs->is_array()) {
      for (const json::value& n : outs->as_array("outputs")) g.add_output(n.as_string("outputs[]"));
    } else {
      for (const json::member& m : outs->as_object("outputs")) {
        if (m.second.is_null()) g.add_output(m.first);
        else g.add_output(m.first, m.second.as_string("outputs." + m.first));
      }
    }
  }
  g.finalize();
  return g;
}

inline graph parse_graph(std::string_view text) { return graph_from_json(json::parse(text)); }

/// The members of a graph document (one graph_from_json accepted) that it does not read, as paths
/// ("tensors.x.sepc", "ops[2].bogus"): ignored, as the format says; a misspelt "spec" drops a
/// constraint, so a program should say so.
inline std::vector<std::string> ignored_graph_members(const json::value& doc) {
  std::vector<std::string> out;
  json::unknown_members(doc, {"element_bytes", "training", "tensors", "ops", "outputs"}, "", out);
  if (const json::value* ts = doc.find("tensors"); ts && ts->is_object())
    for (const json::member& m : ts->as_object("tensors"))
      json::unknown_members(m.second, {"shape", "parameter", "spec"}, "tensors." + meshcast::detail::printable(m.first), out);
  if (const json::value* ops = doc.find("ops"); ops && ops->is_array()) {
    const json::array& a = ops->as_array("ops");
    for (std::size_t i = 0; i < a.size(); ++i)
      json::unknown_members(a[i], {"name", "type", "inputs", "output", "axis", "dim", "keepdims", "keepdim", "perm", "axes",
                                   "shape"},
                            "ops[" + std::to_string(i) + "]", out);
  }
  return out;
}

/// The members of a spec assignment other than "specs" (ignored).
inline std::vector<std::string> ignored_spec_members(const json::value& doc) {
  std::vector<std::string> out;
  json::unknown_members(doc, {"specs"}, "", out);
  return out;
}

/// The spec text of every tensor named in {"specs": {...}}, in the graph's tensor order. Throws
/// naming the tensor when one is missing or unknown, or an entry is not a string.
inline std::vector<std::string> spec_texts_from_json(const graph& g, const json::value& doc) {
  const json::value& specs = doc.at("specs", "the spec assignment");
  std::vector<std::string> out(g.tensors().size());
  std::vector<bool> seen(out.size(), false);
  for (const json::member& m : specs.as_object("specs")) {
    const int t = g.find_tensor(m.first);
    if (t < 0) throw error("specs: tensor '" + meshcast::detail::printable(m.first) + "' is not in the graph");
    out[t] = m.second.as_string("specs." + m.first);
    seen[t] = true;
  }
  for (std::size_t t = 0; t < out.size(); ++t)
    if (!seen[t]) throw error("specs: tensor '" + g.tensors()[t].name + "' has no spec (give one for every tensor)");
  return out;
}

}  // namespace meshcast::autoshard

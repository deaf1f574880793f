// Evaluation of one spec assignment (a spec for every tensor): what it costs under the cost model,
// op by op, without solving anything. Each op runs with its cheapest strategy that produces its
// output in the assigned spec; its inputs are resharded from their assigned specs to what that
// strategy needs. This is also how every solver's answer is reported, so a solver's objective and
// `evaluate` of its specs agree.
//
// The report is ordered for execution: `ops` in a topological order, each with the reshards of its
// inputs (before it), its strategy (iteration split, local compute) and the collectives after it;
// then the reshards that deliver graph outputs; then, when training, the backward pass in reverse.
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "../core/detail/number_text.hpp"
#include "cost_model.hpp"

namespace meshcast::autoshard {

struct op_collective {
  int op = -1;
  bool backward = false;
  collective_step step;
};

struct tensor_reshard {
  int tensor = -1;
  int consumer = -1;        ///< op index, -1 for a graph output's delivery
  bool backward = false;    ///< the gradient's way back (from the needed spec to the produced one)
  spec_value from, to;
  reshard_cost cost;
};

struct assignment_report {
  std::vector<spec_value> specs;      ///< per tensor (canonical: mesh axes of size 1 dropped)
  std::vector<int> strategy;          ///< per op: index into cost_model::strategies(node of its output)
  std::vector<op_collective> collectives;  ///< forward in op order, then backward in reverse op order
  std::vector<tensor_reshard> reshards;    ///< same order
  double compute_s = 0;
  double objective_s = 0;             ///< compute + collectives + reshards
  double memory_bytes = 0;            ///< per device
};

/// Spec of every tensor (graph order) from text; throws naming the tensor when one does not parse,
/// has the wrong rank, uses an axis the mesh lacks, or contradicts the tensor's fixed spec.
inline std::vector<spec_value> parse_assignment(const cost_model& cm, const std::vector<std::string>& texts) {
  const auto& ts = cm.source().tensors();
  if (texts.size() != ts.size())
    throw error("the assignment has " + std::to_string(texts.size()) + " specs for " + std::to_string(ts.size()) +
                " tensors");
  std::vector<spec_value> specs;
  for (std::size_t t = 0; t < ts.size(); ++t) {
    const std::string what = "specs: tensor '" + ts[t].name + "'";
    spec_value s = detail::parse_spec_for(texts[t], ts[t].shape.size(), what);
    check_spec_on_mesh(s, ts[t].shape.size(), cm.mesh(), what);
    s = canonical(s, cm.mesh());
    if (cm.fixed(static_cast<int>(t)) && !(*cm.fixed(static_cast<int>(t)) == s))
      throw error(what + ": spec '" + texts[t] + "' contradicts its fixed spec '" +
                  ts[t].spec->to_string() + "'");
    specs.push_back(s);
  }
  return specs;
}

/// Costs an assignment of canonical specs (one per tensor); throws naming the tensor when its
/// producer cannot produce it in its spec, and when the assignment exceeds the memory limit.
inline assignment_report evaluate(cost_model& cm, const std::vector<spec_value>& specs) {
  const graph& g = cm.source();
  const auto& ts = g.tensors();
  const mesh_model& m = cm.mesh();
  reshard_model& rm = cm.reshards();
  assignment_report r;
  r.specs = specs;
  r.strategy.assign(g.ops().size(), -1);
  std::vector<int> id(ts.size());
  for (std::size_t t = 0; t < ts.size(); ++t) id[t] = rm.spec_id(specs[t]);

  for (int o : g.order()) {
    const op_desc& op = g.ops()[o];
    const int v = cm.node_of(op.output);
    const auto& st = cm.strategies(v);
    double best = infinite_cost;
    for (std::size_t j = 0; j < st.size(); ++j) {
      if (!(st[j].output == specs[op.output])) continue;
      double c = st[j].seconds;
      for (std::size_t s = 0; s < op.inputs.size(); ++s)
        c += cm.round_trip(op.inputs[s], id[op.inputs[s]], rm.spec_id(st[j].inputs[s]));
      if (c < best) best = c, r.strategy[o] = static_cast<int>(j);
    }
    if (r.strategy[o] < 0)
      throw error("specs: tensor '" + ts[op.output].name + "': op '" + op.name + "' (" + op.type +
                  ") cannot produce it in spec '" + specs[op.output].to_string() + "' on this mesh");
  }
  auto add_reshard = [&](int t, int consumer, bool backward, const spec_value& from, const spec_value& to) {
    if (from == to) return;
    tensor_reshard x{t, consumer, backward, from, to, rm.cost(ts[t].shape, from, to)};
    r.objective_s += x.cost.seconds;
    r.reshards.push_back(std::move(x));
  };
  // Forward.
  for (int o : g.order()) {
    const op_desc& op = g.ops()[o];
    const op_strategy& s = cm.strategies(cm.node_of(op.output))[r.strategy[o]];
    for (std::size_t k = 0; k < op.inputs.size(); ++k) add_reshard(op.inputs[k], o, false, specs[op.inputs[k]], s.inputs[k]);
    r.compute_s += s.compute_s;
    for (const collective_step& c : s.forward) r.collectives.push_back({o, false, c});
  }
  for (const output_desc& out : g.outputs())
    if (cm.required(out.tensor)) add_reshard(out.tensor, -1, false, specs[out.tensor], *cm.required(out.tensor));
  // Backward, in reverse.
  if (g.training) {
    for (const output_desc& out : g.outputs())
      if (cm.required(out.tensor) && ts[out.tensor].requires_grad)
        add_reshard(out.tensor, -1, true, *cm.required(out.tensor), specs[out.tensor]);
    for (auto it = g.order().rbegin(); it != g.order().rend(); ++it) {
      const op_desc& op = g.ops()[*it];
      const op_strategy& s = cm.strategies(cm.node_of(op.output))[r.strategy[*it]];
      for (const collective_step& c : s.backward) r.collectives.push_back({*it, true, c});
      for (std::size_t k = 0; k < op.inputs.size(); ++k)
        if (ts[op.inputs[k]].requires_grad) add_reshard(op.inputs[k], *it, true, s.inputs[k], specs[op.inputs[k]]);
    }
  }
  for (const op_collective& c : r.collectives) r.objective_s += c.step.seconds;
  r.objective_s += r.compute_s;
  if (!std::isfinite(r.objective_s))  // every term finite (cost_model.hpp checks), their sum not
    throw error("specs: the assignment costs " + meshcast::detail::number(r.objective_s) + " s in all (compute " +
                meshcast::detail::number(r.compute_s) +
                " s): the sum passes the largest double; the mesh's device flops or axis bandwidths are out of range for this graph");

  // Memory, as the cost model counts it.
  index_t largest = 0;
  int largest_t = -1;
  for (std::size_t t = 0; t < ts.size(); ++t) {
    const index_t b = local_bytes(ts[t].shape, specs[t], m, g.element_bytes);
    const double times = g.training && ts[t].parameter ? 2 : 1;
    r.memory_bytes += static_cast<double>(b) * times;
    if (b > largest) largest = b, largest_t = static_cast<int>(t);
  }
  if (r.memory_bytes > m.memory_bytes * (1 + 1e-12))
    throw error("specs: the assignment needs " + meshcast::detail::number(r.memory_bytes) + " bytes per device, over the limit of " +
                meshcast::detail::number(m.memory_bytes) + " (largest shard: tensor '" + ts[largest_t].name + "', " +
                std::to_string(largest) + " bytes)");
  return r;
}

/// Parses and evaluates in one step.
inline assignment_report evaluate(cost_model& cm, const std::vector<std::string>& texts) {
  return evaluate(cm, parse_assignment(cm, texts));
}

}  // namespace meshcast::autoshard

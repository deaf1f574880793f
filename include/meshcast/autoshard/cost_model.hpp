// The cost model of a graph on a logical mesh, as a pairwise cost graph (problem.hpp) with one
// node per tensor: a graph input or parameter chooses its spec; an op output is chosen through
// the op's strategy (strategies.hpp), which fixes the spec it is produced in.
//
// Costs (seconds):
//   op node     its strategy: compute and the collectives of partial sums (forward, backward)
//   edge        tensor t from its producer to a consumer: reshard(produced spec -> spec the
//               consumer's strategy needs); when training and t needs a gradient, also the
//               gradient's way back, reshard(needed spec -> produced spec)
//   output      a graph output with a required spec: reshard(produced -> required) (and back when
//               training)
// Memory per device: every tensor's largest shard in its spec; parameters twice when training
// (their gradients live at once); reshard copies at consumers are not counted.
//
// Reductions (problem.hpp) the ILP may use on large graphs:
//   merging     an elementwise unary op, softmax or layernorm whose input has no other consumer
//               follows that input's producer: it takes the strategy that keeps the producer's
//               spec (Alpa's merging of ops that follow their operand);
//   coalescing  repeated layers take the same choices: ops whose type, shapes, attributes and
//               producer offsets repeat with a period p, and the parameters only they use.
#pragma once

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "graph.hpp"
#include "problem.hpp"
#include "reshard.hpp"
#include "strategies.hpp"

namespace meshcast::autoshard {

/// Most entries all edge cost tables of one problem may hold together (memory stays bounded).
inline constexpr std::size_t max_table_entries = std::size_t{1} << 26;

class cost_model {
 public:
  /// Builds every table; throws `time_limit_reached` once `limit` has passed.
  cost_model(const graph& g, const mesh_model& m, const deadline& limit = deadline::after(1e9))
      : graph_(&g), mesh_(m), reshards_(m, g.element_bytes) {
    m.validate();
    reshards_.limit_costing(&limit);  // one reshard's planning can take seconds: it stops too
    const auto& ts = g.tensors();
    node_of_.assign(ts.size(), -1);
    for (std::size_t t = 0; t < ts.size(); ++t)
      if (ts[t].producer < 0) add_node(static_cast<int>(t));
    for (int o : g.order()) add_node(g.ops()[o].output);
    fixed_.resize(ts.size());
    for (std::size_t t = 0; t < ts.size(); ++t)
      if (ts[t].spec) {
        check_spec_on_mesh(*ts[t].spec, ts[t].shape.size(), m, "tensor '" + ts[t].name + "'");
        fixed_[t] = canonical(*ts[t].spec, m);
      }
    required_.resize(ts.size());
    for (const output_desc& o : g.outputs())
      if (o.spec) {
        check_spec_on_mesh(*o.spec, ts[o.tensor].shape.size(), m, "outputs: tensor '" + ts[o.tensor].name + "'");
        required_[o.tensor] = canonical(*o.spec, m);
      }
    shape_id_.resize(ts.size());
    for (std::size_t t = 0; t < ts.size(); ++t) shape_id_[t] = reshards_.shape_id(ts[t].shape);

    // Choices of every node.
    problem_.cost.resize(tensor_of_.size());
    problem_.memory.resize(tensor_of_.size());
    problem_.memory_limit = m.memory_bytes;
    choice_spec_.resize(tensor_of_.size());
    strategies_.resize(tensor_of_.size());
    for (std::size_t v = 0; v < tensor_of_.size(); ++v) {
      limit.check("listing sharding strategies");
      const int t = tensor_of_[v];
      const tensor_desc& td = ts[t];
      if (td.producer < 0) {
        std::vector<spec_value> specs = fixed_[t] ? std::vector<spec_value>{*fixed_[t]} : tensor_specs(td.shape, m);
        for (const spec_value& s : specs) {
          choice_spec_[v].push_back(reshards_.spec_id(s));
          problem_.cost[v].push_back(0);
          problem_.memory[v].push_back(static_cast<double>(local_bytes(td.shape, s, m, g.element_bytes)) *
                                       (g.training && td.parameter ? 2 : 1));
        }
      } else {
        const op_desc& o = g.ops()[td.producer];
        for (op_strategy& s : strategies_of(g, o, m)) {
          if (fixed_[t] && !(s.output == *fixed_[t])) continue;
          choice_spec_[v].push_back(reshards_.spec_id(s.output));
          problem_.cost[v].push_back(s.seconds);
          problem_.memory[v].push_back(static_cast<double>(local_bytes(td.shape, s.output, m, g.element_bytes)));
          strategies_[v].push_back(std::move(s));
        }
        if (strategies_[v].empty())
          throw error("tensor '" + td.name + "': op '" + o.name + "' (" + o.type + ") has no strategy producing " +
                      (fixed_[t] ? "its fixed spec '" + fixed_[t]->to_string() + "'" : std::string("it")) +
                      " on this mesh");
      }
      if (required_[t])
        for (std::size_t i = 0; i < choice_spec_[v].size(); ++i) {
          problem_.cost[v][i] += round_trip(t, choice_spec_[v][i], reshards_.spec_id(*required_[t]));
          finite_or_throw(problem_.cost[v][i], t, choice_spec_[v][i], nullptr);
        }
    }
    // Edges: one per (producer, consumer op) pair; a tensor used twice by one op adds both slots.
    std::size_t entries = 0;
    for (int o : g.order()) {
      const op_desc& op = g.ops()[o];
      const int v = node_of_[op.output];
      const std::size_t first_edge = problem_.edges.size();  // this op's edges follow
      for (std::size_t slot = 0; slot < op.inputs.size(); ++slot) {
        limit.check("costing reshards between specs");
        const int t = op.inputs[slot];
        const int u = node_of_[t];
        factor_graph::edge* e = nullptr;
        for (std::size_t x = first_edge; x < problem_.edges.size(); ++x)
          if (problem_.edges[x].u == u) e = &problem_.edges[x];
        if (!e) {
          entries += choice_spec_[u].size() * choice_spec_[v].size();
          if (entries > max_table_entries)
            throw error("the cost tables of this graph on this mesh would hold more than " +
                        std::to_string(max_table_entries) + " entries (at op '" + op.name +
                        "'); use a mesh with fewer axes");
          problem_.edges.push_back({u, v, std::vector<double>(choice_spec_[u].size() * choice_spec_[v].size(), 0.0)});
          e = &problem_.edges.back();
        }
        const std::size_t kv = choice_spec_[v].size();
        for (std::size_t i = 0; i < choice_spec_[u].size(); ++i) {
          limit.check("costing reshards between specs");
          for (std::size_t j = 0; j < kv; ++j) {
            double& c = e->cost[i * kv + j];
            c += round_trip(t, choice_spec_[u][i], reshards_.spec_id(strategies_[v][j].inputs[slot]));
            finite_or_throw(c, t, choice_spec_[u][i], &op);
          }
        }
      }
    }
    reshards_.limit_costing(nullptr);
  }

  const graph& source() const noexcept { return *graph_; }
  const mesh_model& mesh() const noexcept { return mesh_; }
  const factor_graph& problem() const noexcept { return problem_; }
  reshard_model& reshards() noexcept { return reshards_; }

  int node_of(int tensor) const { return node_of_[tensor]; }
  int tensor_of(int node) const { return tensor_of_[node]; }
  /// The spec tensor_of(v) gets under choice i of node v.
  const spec_value& spec(int v, int i) const { return reshards_.spec(choice_spec_[v][i]); }
  /// The strategies of an op node (empty for inputs and parameters), one per choice.
  const std::vector<op_strategy>& strategies(int v) const { return strategies_[v]; }
  const std::optional<spec_value>& fixed(int tensor) const { return fixed_[tensor]; }
  const std::optional<spec_value>& required(int tensor) const { return required_[tensor]; }

  /// Reshard tensor t from one interned spec to another, and the gradient's way back when training.
  double round_trip(int t, int from, int to) {
    double s = reshards_.seconds(shape_id_[t], from, to);
    if (graph_->training && graph_->tensors()[t].requires_grad) s += reshards_.seconds(shape_id_[t], to, from);
    return s;
  }

  /// A reshard past the largest double would read as an impossible choice to every solver (and
  /// be blamed on the fixed specs or the memory limit): the tensor and spec are named instead.
  /// `consumer` is the op the reshard feeds, null for a graph output's required spec; called once
  /// per cost table entry, so nothing is built unless it throws.
  void finite_or_throw(double seconds, int t, int from, const op_desc* consumer) const {
    if (std::isfinite(seconds)) return;
    const std::string into = consumer ? "op '" + consumer->name + "'" : std::string("its required output spec");
    throw error("tensor '" + graph_->tensors()[t].name + "': resharding it from spec '" + reshards_.spec(from).to_string() +
                "' for " + into + " costs " + meshcast::detail::number(seconds) +
                " s, not a finite number of seconds; the mesh's axis bandwidths are out of range for this graph");
  }

  /// Merging of followers (see the header comment).
  reduction merging() const {
    reduction r = reduction::identity(problem_);
    const graph& g = *graph_;
    for (int o : g.order()) {
      const op_desc& op = g.ops()[o];
      if (op.kind != op_kind::unary && op.kind != op_kind::softmax && op.kind != op_kind::layernorm) continue;
      const tensor_desc& in = g.tensors()[op.inputs[0]];
      if (in.producer < 0 || in.consumers.size() != 1 || fixed_[op.output]) continue;
      const int v = node_of_[op.output], p = node_of_[op.inputs[0]];
      std::vector<int> m(choice_spec_[p].size(), -1);
      for (std::size_t i = 0; i < m.size(); ++i)
        for (std::size_t j = 0; j < strategies_[v].size(); ++j)
          if (choice_spec_[v][j] == choice_spec_[p][i] && reshards_.spec(choice_spec_[p][i]) == strategies_[v][j].inputs[0])
            m[i] = static_cast<int>(j);
      // Compose with p's own tie, so every map points at a representative.
      const int root = r.rep[p];
      std::vector<int> composed(choice_spec_[root].size(), -1);
      for (std::size_t i = 0; i < composed.size(); ++i) {
        const int via = r.map[p][i];
        composed[i] = via < 0 ? -1 : m[static_cast<std::size_t>(via)];
      }
      if (std::none_of(composed.begin(), composed.end(), [](int c) { return c >= 0; })) continue;
      r.tie(v, root, composed);
    }
    return r;
  }

  /// Merging, then coalescing of repeated layers over the representatives (see the header).
  /// Layers of up to `max_period` ops are found; throws `time_limit_reached` past the deadline.
  reduction merging_and_coalescing(const deadline& limit = deadline::after(1e9),
                                   std::size_t max_period = 4096) const {
    reduction r = merging();
    const graph& g = *graph_;
    const std::vector<int>& order = g.order();
    const std::size_t n = order.size();
    std::vector<int> position(g.ops().size());
    for (std::size_t i = 0; i < n; ++i) position[order[i]] = static_cast<int>(i);
    // Signature of each op in order: type, attributes, shapes, where each input comes from;
    // interned to integers.
    std::vector<int> sig(n);
    std::unordered_map<std::string, int> interned;
    for (std::size_t i = 0; i < n; ++i) {
      const op_desc& op = g.ops()[order[i]];
      std::string s = op.type + '/' + std::to_string(op.axis) + '/' + std::to_string(op.keepdims);
      for (int p : op.perm) s += ',' + std::to_string(p);
      auto shape = [&](int t) {
        std::string x = "[";
        for (index_t d : g.tensors()[t].shape) x += std::to_string(d) + ',';
        const auto& f = fixed_[t];
        const auto& q = required_[t];
        return x + ']' + (f ? f->to_string() : "") + '/' + (q ? q->to_string() : "");
      };
      s += shape(op.output);
      for (int in : op.inputs) {
        const tensor_desc& t = g.tensors()[in];
        s += '|' + shape(in);
        if (t.producer >= 0) s += "@-" + std::to_string(static_cast<int>(i) - position[t.producer]);
        else s += t.parameter ? "@param" + std::to_string(t.consumers.size()) : "@input" + t.name;
      }
      sig[i] = interned.emplace(std::move(s), static_cast<int>(interned.size())).first->second;
    }
    // The period covering the most ops with at least two repetitions.
    std::size_t best_p = 0, best_start = 0, best_reps = 0;
    for (std::size_t p = 1; p * 2 <= n && p <= max_period; ++p) {
      if (p % 64 == 0) limit.check("looking for repeated layers");
      std::size_t run = 0;
      for (std::size_t i = 0; i + p <= n; ++i) {
        const bool same = i + p < n && sig[i] == sig[i + p];
        if (same) {
          ++run;
          continue;
        }
        // sig[i - run .. i + p) repeats with period p: floor((run + p) / p) copies.
        const std::size_t reps = (run + p) / p;
        if (reps >= 2 && reps * p > best_reps * best_p) best_p = p, best_start = i - run, best_reps = reps;
        run = 0;
      }
    }
    if (best_reps < 2) return r;
    std::vector<std::vector<int>> members(r.rep.size());  // of each representative
    for (std::size_t v = 0; v < r.rep.size(); ++v) members[r.rep[v]].push_back(static_cast<int>(v));
    auto tie_same = [&](int x, int y) {
      // Ties representative y (and all tied to it) to representative x when their choices are the
      // same specs with the same inputs, one for one.
      if (x == y || r.rep[y] != y || r.rep[x] != x) return;
      if (choice_spec_[x] != choice_spec_[y]) return;
      for (std::size_t i = 0; i < strategies_[x].size(); ++i)
        if (strategies_[x][i].inputs != strategies_[y][i].inputs) return;
      for (int v : members[y]) r.tie(v, x, r.map[v]);
      members[x].insert(members[x].end(), members[y].begin(), members[y].end());
      members[y].clear();
    };
    for (std::size_t k = 1; k < best_reps; ++k)
      for (std::size_t j = 0; j < best_p; ++j) {
        const op_desc& a = g.ops()[order[best_start + j]];
        const op_desc& b = g.ops()[order[best_start + k * best_p + j]];
        tie_same(node_of_[a.output], node_of_[b.output]);
        for (std::size_t s = 0; s < a.inputs.size(); ++s) {
          const tensor_desc &ta = g.tensors()[a.inputs[s]], &tb = g.tensors()[b.inputs[s]];
          if (ta.producer < 0 && tb.producer < 0 && ta.parameter && tb.parameter && ta.consumers.size() == 1 &&
              tb.consumers.size() == 1)
            tie_same(node_of_[a.inputs[s]], node_of_[b.inputs[s]]);
        }
      }
    return r;
  }

 private:
  void add_node(int t) {
    node_of_[t] = static_cast<int>(tensor_of_.size());
    tensor_of_.push_back(t);
  }
  const graph* graph_;
  mesh_model mesh_;
  reshard_model reshards_;
  factor_graph problem_;
  std::vector<int> node_of_, tensor_of_, shape_id_;
  std::vector<std::vector<int>> choice_spec_;
  std::vector<std::vector<op_strategy>> strategies_;
  std::vector<std::optional<spec_value>> fixed_, required_;
};

}  // namespace meshcast::autoshard

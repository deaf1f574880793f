// Brute force for the automatic-sharding tests: every spec of a tensor, written apart from the
// library's enumeration; the cheapest valid assignment by trying them all; small random graphs.
#pragma once

#include <algorithm>
#include <cstddef>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <meshcast/autoshard.hpp>

#include "graphs.hpp"

namespace meshcast::autoshard::test {

// Every spec of a tensor on the mesh, written independently of the library's enumeration: each
// mesh axis of size > 1 goes to one dim (at any place in that dim's list) or to none, and a dim
// holds at most as many shards as elements.
inline std::vector<std::string> all_specs(const std::vector<index_t>& shape, const std::vector<index_t>& mesh) {
  std::vector<std::vector<std::vector<int>>> cur{std::vector<std::vector<int>>(shape.size())};
  for (int a = 0; a < static_cast<int>(mesh.size()); ++a) {
    if (mesh[a] == 1) continue;
    std::vector<std::vector<std::vector<int>>> next;
    for (const auto& l : cur) {
      next.push_back(l);
      for (std::size_t d = 0; d < l.size(); ++d) {
        index_t k = mesh[a];
        for (int b : l[d]) k *= mesh[b];
        if (k > shape[d]) continue;
        for (std::size_t pos = 0; pos <= l[d].size(); ++pos) {
          auto n = l;
          n[d].insert(n[d].begin() + static_cast<std::ptrdiff_t>(pos), a);
          next.push_back(n);
        }
      }
    }
    cur = next;
  }
  std::vector<std::string> out;
  for (const auto& l : cur) {
    std::string s;
    for (std::size_t d = 0; d < l.size(); ++d) {
      if (d) s += ',';
      if (l[d].empty()) s += 'R';
      else {
        s += 'S';
        for (int a : l[d]) s += static_cast<char>('0' + a);
      }
    }
    out.push_back(s);
  }
  return out;
}

// The cheapest valid assignment by enumerating them all (odometer, no recursion).
inline double brute_force(const graph& g, const mesh_model& m, std::size_t* valid = nullptr) {
  cost_model cm(g, m);
  const auto& ts = g.tensors();
  std::vector<std::vector<std::string>> choices;
  for (const auto& td : ts) {
    if (td.spec) choices.push_back({td.spec->to_string()});
    else choices.push_back(all_specs(td.shape, m.sizes));
  }
  // Each candidate parsed once (parse_assignment, the text overload's own step): the loop below
  // then costs assignments only, which halves brute force's time.
  std::vector<std::string> firsts(ts.size());
  for (std::size_t i = 0; i < ts.size(); ++i) firsts[i] = choices[i][0];
  std::vector<std::vector<spec_value>> parsed(ts.size());
  for (std::size_t i = 0; i < ts.size(); ++i)
    for (const std::string& c : choices[i]) {
      std::vector<std::string> texts = firsts;
      texts[i] = c;
      parsed[i].push_back(parse_assignment(cm, texts)[i]);
    }
  std::vector<std::size_t> at(ts.size(), 0);
  std::vector<spec_value> specs(ts.size());
  double best = infinite_cost;
  std::size_t count = 0;
  while (true) {
    for (std::size_t i = 0; i < ts.size(); ++i) specs[i] = parsed[i][at[i]];
    try {
      best = std::min(best, evaluate(cm, specs).objective_s);
      ++count;
    } catch (const meshcast::error&) {
      // an op that cannot produce its output in that spec, or over the memory limit
    }
    std::size_t i = 0;
    while (i < at.size() && ++at[i] == choices[i].size()) at[i++] = 0;
    if (i == at.size()) break;
  }
  if (valid) *valid = count;
  return best;
}

// A random small graph: a few ops of every kind over small shapes.
inline graph random_graph(std::mt19937_64& rng, int ops, index_t max_dim) {
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  auto dim = [&] { return index_t{4} << pick(max_dim > 4 ? 2 : 1); };
  graph g;
  g.training = pick(2) == 1;
  struct known {
    std::string name;
    std::vector<index_t> shape;
  };
  std::vector<known> ts, activations;
  int fresh = 0;
  auto tensor = [&](std::vector<index_t> shape, bool parameter, const char* fixed = nullptr) {
    std::string name = (parameter ? "w" : "t") + std::to_string(fresh++);
    g.add_tensor(name, shape, parameter, fixed ? std::optional<std::string>(fixed) : std::nullopt);
    ts.push_back({name, shape});
    if (!parameter) activations.push_back({name, shape});
    return name;
  };
  tensor({dim(), dim()}, false, pick(2) ? "R,R" : nullptr);
  for (int k = 0; k < ops; ++k) {
    const known in = activations[static_cast<std::size_t>(pick(static_cast<int>(activations.size())))];
    const std::string out = "o" + std::to_string(k);
    std::vector<index_t> shape = in.shape;
    op_args a;
    switch (pick(8)) {
      case 0:
      case 1: {  // matmul with a new parameter
        const index_t n = dim();
        const std::string w = tensor({shape.back(), n}, true);
        add(g, "op" + std::to_string(k), "matmul", {in.name, w}, out);
        shape.back() = n;
        break;
      }
      case 2:
        add(g, "op" + std::to_string(k), pick(2) ? "relu" : "exp", {in.name}, out);
        break;
      case 3: {  // add: a tensor of the same shape if there is one, else a broadcast parameter
        std::string other;
        for (const known& x : ts)
          if (x.shape == in.shape && x.name != in.name) other = x.name;
        if (other.empty() || pick(2)) other = tensor({shape.back()}, true);
        add(g, "op" + std::to_string(k), "add", {in.name, other}, out);
        break;
      }
      case 4:
        a.axis = pick(static_cast<int>(shape.size()));
        add(g, "op" + std::to_string(k), pick(2) ? "softmax" : "layernorm", {in.name}, out, a);
        break;
      case 5:
        add(g, "op" + std::to_string(k), "transpose", {in.name}, out);
        std::swap(shape[shape.size() - 1], shape[shape.size() - 2]);
        break;
      case 6:
        a.axis = pick(static_cast<int>(shape.size()));
        a.keepdims = true;
        add(g, "op" + std::to_string(k), "reduce_sum", {in.name}, out, a);
        shape[static_cast<std::size_t>(*a.axis)] = 1;
        break;
      default:  // reshape: split the first dim in two, or merge the first two
        if (shape.size() == 2 && shape[0] >= 4) shape = {2, shape[0] / 2, shape[1]};
        else if (shape.size() == 3) shape = {shape[0] * shape[1], shape[2]};
        a.shape = shape;
        add(g, "op" + std::to_string(k), "reshape", {in.name}, out, a);
        break;
    }
    ts.push_back({out, shape});
    activations.push_back({out, shape});
  }
  if (pick(2)) {
    std::string r(ts.back().shape.size() * 2 - 1, ',');
    for (std::size_t i = 0; i < r.size(); i += 2) r[i] = 'R';
    g.add_output(ts.back().name, r);
  } else {
    g.add_output(ts.back().name);
  }
  g.finalize();
  return g;
}

}  // namespace meshcast::autoshard::test

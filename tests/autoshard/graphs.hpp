// Graph builders for the automatic-sharding tests: a 2-layer MLP and transformer layers (attention
// as matmuls, softmax, layernorm, MLP), the same graphs examples/graphs/ holds as JSON.
#pragma once

#include <string>

#include <meshcast/autoshard.hpp>

namespace meshcast::autoshard::test {

inline void add(graph& g, std::string name, std::string type, std::vector<std::string> inputs, std::string output,
                op_args extra = {}) {
  extra.name = std::move(name);
  extra.type = std::move(type);
  extra.inputs = std::move(inputs);
  extra.output = std::move(output);
  g.add_op(std::move(extra));
}

/// y = gelu(x w1) w2 with x [batch, hidden] fixed replicated, w1 [hidden, ffn], w2 [ffn, hidden].
inline graph mlp(index_t batch, index_t hidden, index_t ffn, bool training, const char* out_spec = "R,R") {
  graph g;
  g.training = training;
  g.add_tensor("x", {batch, hidden}, false, "R,R");
  g.add_tensor("w1", {hidden, ffn}, true);
  g.add_tensor("w2", {ffn, hidden}, true);
  add(g, "fc1", "matmul", {"x", "w1"}, "h");
  add(g, "act", "gelu", {"h"}, "a");
  add(g, "fc2", "matmul", {"a", "w2"}, "y");
  if (out_spec) g.add_output("y", std::string(out_spec));
  else g.add_output("y");
  g.finalize();
  return g;
}

struct transformer_dims {
  index_t batch = 8, seq = 128, model = 1024, heads = 16, ffn = 4096;
};

/// One transformer layer reading `in` and writing `out`; names are prefixed with `p`.
inline void transformer_layer(graph& g, const transformer_dims& d, const std::string& p, const std::string& in,
                              const std::string& out) {
  const index_t dh = d.model / d.heads;
  for (const char* w : {"wq", "wk", "wv", "wo"}) g.add_tensor(p + w, {d.model, d.model}, true);
  g.add_tensor(p + "w1", {d.model, d.ffn}, true);
  g.add_tensor(p + "w2", {d.ffn, d.model}, true);
  op_args ln;
  ln.axis = -1;
  add(g, p + "ln1", "layernorm", {in}, p + "n1", ln);
  for (const char* x : {"q", "k", "v"}) {
    add(g, p + x + "_proj", "matmul", {p + "n1", p + "w" + x}, p + x);
    op_args r;
    r.shape = {d.batch, d.seq, d.heads, dh};
    add(g, p + x + "_heads", "reshape", {p + x}, p + x + "h", r);
    op_args t;
    t.perm = std::string(x) == "k" ? std::vector<int>{0, 2, 3, 1} : std::vector<int>{0, 2, 1, 3};
    add(g, p + x + "_t", "transpose", {p + x + "h"}, p + x + "t", t);
  }
  add(g, p + "scores", "matmul", {p + "qt", p + "kt"}, p + "s");
  add(g, p + "scale", "scale", {p + "s"}, p + "ss");
  op_args sm;
  sm.axis = -1;
  add(g, p + "softmax", "softmax", {p + "ss"}, p + "pr", sm);
  add(g, p + "context", "matmul", {p + "pr", p + "vt"}, p + "c");
  op_args ct;
  ct.perm = {0, 2, 1, 3};
  add(g, p + "c_t", "transpose", {p + "c"}, p + "ct", ct);
  op_args cr;
  cr.shape = {d.batch, d.seq, d.model};
  add(g, p + "c_merge", "reshape", {p + "ct"}, p + "cm", cr);
  add(g, p + "o_proj", "matmul", {p + "cm", p + "wo"}, p + "o");
  add(g, p + "res1", "add", {in, p + "o"}, p + "r1");
  add(g, p + "ln2", "layernorm", {p + "r1"}, p + "n2", ln);
  add(g, p + "fc1", "matmul", {p + "n2", p + "w1"}, p + "h");
  add(g, p + "act", "gelu", {p + "h"}, p + "a");
  add(g, p + "fc2", "matmul", {p + "a", p + "w2"}, p + "m");
  add(g, p + "res2", "add", {p + "r1", p + "m"}, out);
}

/// `layers` transformer layers on x [batch, seq, model] (fixed replicated); output y unconstrained
/// unless `out_spec` is given.
inline graph transformer(int layers, const transformer_dims& d, bool training, const char* out_spec = nullptr) {
  graph g;
  g.training = training;
  g.add_tensor("x", {d.batch, d.seq, d.model}, false, "R,R,R");
  std::string in = "x";
  for (int l = 0; l < layers; ++l) {
    const std::string out = l + 1 == layers ? std::string("y") : std::string("x").append(std::to_string(l + 1));
    transformer_layer(g, d, std::string("l").append(std::to_string(l)).append("."), in, out);
    in = out;
  }
  if (out_spec) g.add_output("y", std::string(out_spec));
  else g.add_output("y");
  g.finalize();
  return g;
}

}  // namespace meshcast::autoshard::test

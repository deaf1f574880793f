// Sharding strategies of each op type: which mesh axes split which dims of the op's iteration
// space, the specs that asks of the inputs, the spec the output is produced in, and what the op
// then costs (compute, and the collectives that reduce partial sums, forward and backward).
//
// Iteration spaces: matmul [batch..., M, N, K] (K contracted); elementwise, softmax, layernorm,
// transpose: the tensor's dims (softmax and layernorm do not split their axis); reduce_sum: the
// input's dims, the reduced one contracted; reshape: one dim per group of dims it merges or splits
// (only the group's leading dim of extent > 1 may be split, by a count that divides it on both
// sides). A dim split k ways holds at least k elements.
//
// A strategy assigns every usable mesh axis to one iteration dim (in every order) or to none
// (replicated compute). Splitting a contracted dim over axes P leaves partial sums: the output
// spec is then the natural one (all-reduce over P), or the natural one with some axes R of P
// appended to output dims (reduce-scatter over R, B = the unscattered buffer, then all-reduce over
// P \ R on the scattered buffer).
//
// Compute: forward flops / (devices that split the iteration space) / device flops. Training adds
// the backward pass: flops x (inputs that need a gradient) at the same split; all-gather of the
// output gradient over R (the reduce-scatter's transpose); and for each input that needs a
// gradient, an all-reduce over the axes that split iteration dims the input does not have (the
// dims it is broadcast over, or contracted away: N for a matmul's left input, batch and M for its
// right one, so that a weight gets its gradient reduced over the axes that split the data it
// meets). Axes that split nothing compute the same gradient on every device: nothing to reduce.
#pragma once

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "../core/detail/number_text.hpp"
#include "collectives.hpp"
#include "graph.hpp"
#include "sharding.hpp"

namespace meshcast::autoshard {

/// An op's iteration space and how its tensors' dims map onto it.
struct op_form {
  std::vector<index_t> extent;                ///< iteration dims
  std::vector<char> splittable;
  std::vector<std::vector<index_t>> divide;   ///< extents a shard count of that dim must divide
  std::vector<std::vector<int>> in_dims;      ///< per input, per tensor dim: iteration dim or -1 (kept whole)
  std::vector<int> out_dims;                  ///< per output dim: iteration dim or -1
};

inline op_form form_of(const graph& g, const op_desc& o) {
  const auto& ts = g.tensors();
  const auto& out = ts[o.output].shape;
  const int ro = static_cast<int>(out.size());
  op_form f;
  auto identity = [&](const std::vector<index_t>& shape) {
    f.extent = shape;
    f.splittable.assign(shape.size(), 1);
    f.divide.assign(shape.size(), {});
  };
  // Input dims right-aligned on the first `n` iteration dims; a dim of extent 1 against a larger
  // iteration extent is broadcast (-1).
  auto aligned = [&](const std::vector<index_t>& in, int in_count, int n) {
    std::vector<int> m;
    for (int j = 0; j < in_count; ++j) {
      const int it = n - in_count + j;
      m.push_back(in[j] == 1 && f.extent[it] != 1 ? -1 : it);
    }
    return m;
  };
  switch (o.kind) {
    case op_kind::matmul: {
      const auto &a = ts[o.inputs[0]].shape, &b = ts[o.inputs[1]].shape;
      const int nb = ro - 2, ra = static_cast<int>(a.size()), rb = static_cast<int>(b.size());
      identity(out);
      f.extent.push_back(a.back());  // K
      f.splittable.push_back(1);
      f.divide.push_back({});
      f.in_dims.push_back(aligned(a, ra - 2, nb));
      f.in_dims[0].push_back(nb);
      f.in_dims[0].push_back(nb + 2);
      f.in_dims.push_back(aligned(b, rb - 2, nb));
      f.in_dims[1].push_back(nb + 2);
      f.in_dims[1].push_back(nb + 1);
      for (int d = 0; d < ro; ++d) f.out_dims.push_back(d);
      break;
    }
    case op_kind::binary:
      identity(out);
      for (int i : o.inputs) {
        const auto& s = ts[i].shape;
        f.in_dims.push_back(aligned(s, static_cast<int>(s.size()), ro));
      }
      for (int d = 0; d < ro; ++d) f.out_dims.push_back(d);
      break;
    case op_kind::unary:
    case op_kind::softmax:
    case op_kind::layernorm:
      identity(out);
      if (o.kind != op_kind::unary) f.splittable[o.axis] = 0;
      f.in_dims.emplace_back();
      for (int d = 0; d < ro; ++d) f.in_dims[0].push_back(d), f.out_dims.push_back(d);
      break;
    case op_kind::reduce_sum: {
      const auto& in = ts[o.inputs[0]].shape;
      identity(in);
      f.in_dims.emplace_back();
      for (int d = 0; d < static_cast<int>(in.size()); ++d) {
        f.in_dims[0].push_back(d);
        if (d == o.axis) {
          if (o.keepdims) f.out_dims.push_back(-1);
        } else {
          f.out_dims.push_back(d);
        }
      }
      break;
    }
    case op_kind::transpose: {
      const auto& in = ts[o.inputs[0]].shape;
      identity(in);
      f.in_dims.emplace_back();
      for (int d = 0; d < static_cast<int>(in.size()); ++d) f.in_dims[0].push_back(d);
      for (int p : o.perm) f.out_dims.push_back(p);
      break;
    }
    case op_kind::reshape: {
      const auto& in = ts[o.inputs[0]].shape;
      const int ri = static_cast<int>(in.size());
      f.in_dims.emplace_back(ri, -1);
      f.out_dims.assign(ro, -1);
      int i = 0, j = 0;
      while (i < ri || j < ro) {
        // One group: dims [i, i2) of the input and [j, j2) of the output with equal products.
        int i2 = i, j2 = j;
        index_t pi = 1, pj = 1;
        if (i2 < ri) pi *= in[i2++];
        if (j2 < ro) pj *= out[j2++];
        while (pi != pj) {
          if (pi < pj) pi *= in[i2++];
          else pj *= out[j2++];
        }
        // Trailing dims of extent 1 join the group.
        if (i2 == ri || j2 == ro) {
          while (i2 < ri) ++i2;
          while (j2 < ro) ++j2;
        }
        const int it = static_cast<int>(f.extent.size());
        f.extent.push_back(pi);
        f.splittable.push_back(1);
        f.divide.emplace_back();
        for (int k = i; k < i2; ++k)
          if (in[k] > 1) {
            f.in_dims[0][k] = it;
            f.divide.back().push_back(in[k]);
            break;
          }
        for (int k = j; k < j2; ++k)
          if (out[k] > 1) {
            f.out_dims[k] = it;
            f.divide.back().push_back(out[k]);
            break;
          }
        if (f.divide.back().empty()) f.splittable.back() = 0;
        i = i2, j = j2;
      }
      break;
    }
  }
  return f;
}

/// One way to run an op.
struct op_strategy {
  axis_lists iteration;               ///< mesh axes splitting each iteration dim
  spec_value output;                  ///< the spec the output tensor is produced in (canonical)
  std::vector<spec_value> inputs;     ///< the spec each input must arrive in (canonical)
  double compute_s = 0;               ///< forward (+ backward when training)
  std::vector<collective_step> forward, backward;
  double seconds = 0;                 ///< compute and every collective
};

namespace detail {
inline spec_value project(const axis_lists& it, const std::vector<int>& dims) {
  axis_lists l(dims.size());
  for (std::size_t d = 0; d < dims.size(); ++d)
    if (dims[d] >= 0) l[d] = it[static_cast<std::size_t>(dims[d])];
  return spec_of_lists(l);
}
}  // namespace detail

/// Upper limit on the strategies of one op (the mesh's axis count drives it).
inline constexpr std::size_t max_strategies = 20000;

/// Every strategy of op `o` (fixed output specs filter them later). Distinct (output, inputs)
/// pairs only, each with its cheapest cost.
inline std::vector<op_strategy> strategies_of(const graph& g, const op_desc& o, const mesh_model& m) {
  const op_form f = form_of(g, o);
  const auto& ts = g.tensors();
  const tensor_desc& out = ts[o.output];
  const index_t eb = g.element_bytes;
  const std::vector<int> axes = usable_axes(m);
  std::vector<char> contracted(f.extent.size(), 1);
  for (int d : f.out_dims)
    if (d >= 0) contracted[d] = 0;
  std::vector<index_t> out_extent(out.shape.begin(), out.shape.end());
  std::map<std::string, std::size_t> seen;
  std::vector<op_strategy> result;
  const std::string what = "op '" + o.name + "'";

  for (const axis_lists& it : assignments(axes, m, f.extent, f.splittable, axis_lists(f.extent.size()))) {
    bool ok = true;
    index_t split = 1;
    for (std::size_t d = 0; d < it.size() && ok; ++d) {
      index_t k = 1;
      for (int a : it[d]) k *= m.sizes[a];
      for (index_t x : f.divide[d]) ok &= x % k == 0;
      split *= k;
    }
    if (!ok) continue;
    const spec_value natural = detail::project(it, f.out_dims);
    std::vector<int> partial;
    for (std::size_t d = 0; d < it.size(); ++d)
      if (contracted[d]) partial.insert(partial.end(), it[d].begin(), it[d].end());
    std::sort(partial.begin(), partial.end());
    std::vector<spec_value> inputs;
    for (const auto& dims : f.in_dims) inputs.push_back(detail::project(it, dims));

    double compute = o.flops / static_cast<double>(split) / m.device_flops;
    int grads = 0;
    for (int i : o.inputs) grads += ts[i].requires_grad ? 1 : 0;
    const bool backward = g.training && out.requires_grad;
    if (backward) compute += o.flops * grads / static_cast<double>(split) / m.device_flops;

    // Output variants: partial axes appended to output dims (reduce-scatter) or all-reduced.
    axis_lists base(out.shape.size());
    for (std::size_t d = 0; d < base.size(); ++d)
      for (int k = 0; k < natural.dims[d].axis_count; ++k) base[d].push_back(natural.dims[d].axes[k]);
    std::vector<char> takes(base.size(), 0);
    for (std::size_t d = 0; d < base.size(); ++d) takes[d] = f.out_dims[d] >= 0;
    for (const axis_lists& variant : assignments(partial, m, out_extent, takes, base)) {
      // A reduce-scatter gives each member a part of the partial tile it holds: scattering a dim
      // already split needs the finer chunks nested in the coarser, which the chunk rule gives
      // when the extent divides by the finer count (batch 5 split 2 then 4 ways: [2, 4) straddles
      // [0, 3) and [3, 5)).
      bool nested = true;
      for (std::size_t d = 0; d < variant.size() && nested; ++d) {
        if (base[d].empty() || variant[d].size() == base[d].size()) continue;
        index_t k = 1;
        for (int a : variant[d]) k *= m.sizes[a];
        nested = out_extent[d] % k == 0;
      }
      if (!nested) continue;
      op_strategy s;
      s.iteration = it;
      s.output = spec_of_lists(variant);
      s.inputs = inputs;
      s.compute_s = compute;
      std::vector<int> scattered, reduced;
      for (int a : partial) {
        bool used = false;
        for (const auto& l : variant) used |= std::find(l.begin(), l.end(), a) != l.end();
        (used ? scattered : reduced).push_back(a);
      }
      const index_t natural_bytes = local_bytes(out.shape, natural, m, eb);
      if (!scattered.empty()) s.forward.push_back(make_step(m, collective::reduce_scatter, scattered, natural_bytes));
      if (!reduced.empty())
        s.forward.push_back(make_step(m, collective::all_reduce, reduced, local_bytes(out.shape, s.output, m, eb)));
      if (backward) {
        if (!scattered.empty()) s.backward.push_back(make_step(m, collective::all_gather, scattered, natural_bytes));
        for (std::size_t i = 0; i < o.inputs.size(); ++i) {
          if (!ts[o.inputs[i]].requires_grad) continue;
          std::vector<char> has(it.size(), 0);
          for (int d : f.in_dims[i])
            if (d >= 0) has[d] = 1;
          std::vector<int> q;
          for (std::size_t d = 0; d < it.size(); ++d)
            if (!has[d]) q.insert(q.end(), it[d].begin(), it[d].end());
          std::sort(q.begin(), q.end());
          if (!q.empty())
            s.backward.push_back(make_step(m, collective::all_reduce, q,
                                           local_bytes(ts[o.inputs[i]].shape, inputs[i], m, eb)));
        }
      }
      double collectives = 0;
      for (const auto& c : s.forward) collectives += c.seconds;
      for (const auto& c : s.backward) collectives += c.seconds;
      s.seconds = s.compute_s + collectives;
      // A finite device and finite axes can still give a cost past the largest double (1e300
      // flops on 1e-10 flop/s): the solvers would read it as an impossible choice and blame the
      // fixed specs or the memory limit, so the input that overflowed is named here.
      if (!std::isfinite(s.seconds))
        throw error(what + " (" + o.type + "): producing spec '" + s.output.to_string() + "' costs " +
                    meshcast::detail::number(s.compute_s) + " s of compute (" + meshcast::detail::number(o.flops) +
                    " flops on devices of " + meshcast::detail::number(m.device_flops) + " flop/s) and " +
                    meshcast::detail::number(collectives) +
                    " s of collectives: not a finite number of seconds; the mesh's device flops or axis bandwidths are out of range for this graph");
      std::string key = s.output.to_string();
      for (const spec_value& in : s.inputs) key += '|' + in.to_string();
      auto [pos, fresh] = seen.emplace(key, result.size());
      if (fresh) {
        result.push_back(std::move(s));
        if (result.size() > max_strategies)
          throw error(what + ": more than " + std::to_string(max_strategies) +
                      " sharding strategies on this mesh; use fewer mesh axes");
      } else if (s.seconds < result[pos->second].seconds) {
        result[pos->second] = std::move(s);
      }
    }
  }
  return result;
}

}  // namespace meshcast::autoshard

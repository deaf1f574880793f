// meshcast-pipeline-mpi's transfers: one per edge and direction, with its tensor (the file's, or an
// activation sized so that the network model predicts the edge's time) and its times.
#pragma once

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include <meshcast/mpi.hpp>
#include <meshcast/pipeline.hpp>

namespace pipeline_mpi {
using namespace meshcast;
namespace pl = meshcast::pipeline;

struct transfer_spec {
  index_t edge = 0;                  // the description's edge (the lists' numbering)
  index_t file_edge = 0;             // its name in output: the file's edge (a batch's first tensor)
  pl::pass_kind pass = pl::pass_kind::forward;
  index_t sender = 0, receiver = 0;  // stages
  pl::tensor_edge tensor;            // the forward tensor (the edge's source mesh to its destination)
  std::vector<pl::tensor_edge> rest; // the file's other tensors between the same stages (one batch)
  bool from_file = false;            // the file gave the tensor
  double stated_s = 0, predicted_s = 0;
  index_t bytes = 0;
};

inline pl::tensor_edge activation(index_t k, index_t cols) {
  return {dynamic_shape({8 * k, cols}), 4, parse_mesh(std::to_string(k)), dynamic_spec("S0,R"), parse_mesh(std::to_string(k)),
          dynamic_spec("R,S0")};
}

/// The activation whose reshard the model predicts closest to `seconds` (at least K columns).
inline pl::tensor_edge sized_activation(index_t k, double seconds, const pl::network_model& net, bool backward) {
  auto predict = [&](index_t cols) { return pl::reshard_time_s(activation(k, cols), net, backward); };
  index_t lo = k, hi = k;
  if (!(seconds > predict(lo))) return activation(k, lo);
  const index_t most = (index_t{1} << 31) / (8 * k * 4);
  while (predict(hi) < seconds) {
    lo = hi;
    if (hi >= most) throw error("a transfer of " + std::to_string(seconds) + " s needs a tensor larger than 2 GiB");
    hi = std::min(most, hi * 2);
  }
  while (hi - lo > 1) {  // predict(lo) < seconds <= predict(hi)
    const index_t mid = lo + (hi - lo) / 2;
    (predict(mid) < seconds ? lo : hi) = mid;
  }
  return activation(k, seconds - predict(lo) < predict(hi) - seconds ? lo : hi);
}

/// Every tensor a transfer sends: its tensor and the rest of its batch.
inline std::vector<const pl::tensor_edge*> batch_of(const transfer_spec& t) {
  std::vector<const pl::tensor_edge*> all{&t.tensor};
  for (const pl::tensor_edge& x : t.rest) all.push_back(&x);
  return all;
}

inline std::vector<pl::tensor_edge> batch_copy(const transfer_spec& t) {
  std::vector<pl::tensor_edge> all{t.tensor};
  all.insert(all.end(), t.rest.begin(), t.rest.end());
  return all;
}

inline index_t tensor_bytes(const pl::tensor_edge& t) {
  index_t b = t.element_bytes;
  for (int i = 0; i < t.shape.rank(); ++i) b *= t.shape.extent(i);
  return b;
}

inline std::string extents_text(const dynamic_shape& s) {
  std::string out;
  for (int i = 0; i < s.rank(); ++i) {
    if (i) out += 'x';
    out += std::to_string(s.extent(i));
  }
  return out;
}

/// One transfer per edge and direction: its tensor, and the edge's time (the reshard's predicted
/// time for tensors given in the file, which becomes that edge's time in file.d).
inline std::vector<transfer_spec> transfer_specs(pl::parsed_pipeline& file, index_t k, double unit,
                                                 const pl::network_model& net) {
  pl::description& d = file.d;
  std::vector<transfer_spec> specs;
  for (std::size_t e = 0; e < d.edges.size(); ++e) {
    pl::edge& x = d.edges[e];
    const std::vector<pl::tensor_edge>& given = file.tensors[e];
    const std::string at = "edges[" + std::to_string(file.file_edge(e)) + "]";
    for (const pl::tensor_edge& g : given) {
      if (g.element_bytes != 1 && g.element_bytes != 2 && g.element_bytes != 4 && g.element_bytes != 8)
        throw error(at + ": element_bytes is " + std::to_string(g.element_bytes) +
                    "; an executed tensor has elements of 1, 2, 4 or 8 bytes");
      if (g.src_mesh.size() != k || g.dst_mesh.size() != k)
        throw error(at + ": its meshes have " + std::to_string(g.src_mesh.size()) + " and " +
                    std::to_string(g.dst_mesh.size()) + " devices but every stage has " + std::to_string(k) +
                    " ranks (--ranks-per-stage)");
    }
    for (index_t p = 0; p < d.passes(); ++p) {
      transfer_spec t;
      t.edge = static_cast<index_t>(e);
      t.file_edge = static_cast<index_t>(file.file_edge(e));
      t.pass = p ? pl::pass_kind::backward : pl::pass_kind::forward;
      t.sender = p ? x.to : x.from;
      t.receiver = p ? x.from : x.to;
      const bool back = p == 1;
      if (!given.empty()) {
        t.tensor = given[0];
        t.rest.assign(given.begin() + 1, given.end());
        t.from_file = true;
        t.predicted_s = pl::reshard_time_s(batch_copy(t), net, back);
        // The stated time of a tensor edge is its prediction under this run's model.
        if (back && !x.backward_time) x.backward_time = t.predicted_s / unit;
        if (!back) x.time = t.predicted_s / unit;
        t.stated_s = (back ? x.back() : x.time) * unit;
      } else {
        t.stated_s = (back ? x.back() : x.time) * unit;
        t.tensor = sized_activation(k, t.stated_s, net, back);
        t.predicted_s = pl::reshard_time_s(t.tensor, net, back);
      }
      t.bytes = 0;
      for (const pl::tensor_edge* y : batch_of(t)) t.bytes += tensor_bytes(*y);
      specs.push_back(std::move(t));
    }
  }
  return specs;
}

}  // namespace pipeline_mpi

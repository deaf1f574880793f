// meshcast-pipeline-mpi's runners: one resharder (or batch_resharder) per edge and direction on this
// rank, built over the edge's communicator and type-erased.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <new>
#include <span>
#include <string>
#include <vector>

#include <meshcast/api/benchmark_job.hpp>
#include <meshcast/mpi.hpp>
#include <meshcast/pipeline.hpp>

#include "transfers.hpp"

namespace pipeline_mpi {
using namespace meshcast;
namespace pl = meshcast::pipeline;

/// One resharder of one edge and direction on this rank, type-erased.
struct runner {
  MPI_Comm comm = MPI_COMM_NULL;
  std::function<void()> run;
};

template <class T, class S>
std::function<void()> make_runner(MPI_Comm comm, const transfer_spec& t, const reshard_options& o, S strategy, int rank) {
  const pl::tensor_edge& x = t.tensor;
  const dynamic_layout fwd_src(x.src_mesh, x.src_spec, x.shape), fwd_dst(x.dst_mesh, x.dst_spec, x.shape);
  const bool back = t.pass == pl::pass_kind::backward;
  auto r = std::make_shared<resharder<greedy, S>>(comm, back ? fwd_dst : fwd_src, back ? fwd_src : fwd_dst, sizeof(T), o,
                                                  greedy{}, strategy);
  auto in = std::make_shared<std::vector<T>>(r->source_elements());
  auto out = std::make_shared<std::vector<T>>(r->destination_elements());
  for (std::size_t i = 0; i < in->size(); ++i) (*in)[i] = static_cast<T>(i * 2654435761u + static_cast<unsigned>(rank));
  return [r, in, out] { (*r)(*in, *out); };
}

// Several tensors between two stages: one batch_resharder, one schedule.
template <class S>
std::function<void()> make_batch_runner(MPI_Comm comm, const transfer_spec& t, const reshard_options& o, S strategy) {
  const bool back = t.pass == pl::pass_kind::backward;
  std::vector<tensor_layouts> layouts;
  for (const pl::tensor_edge* x : batch_of(t)) {
    const dynamic_layout fwd_src(x->src_mesh, x->src_spec, x->shape), fwd_dst(x->dst_mesh, x->dst_spec, x->shape);
    layouts.push_back(tensor_layouts{(back ? fwd_dst : fwd_src).value(), (back ? fwd_src : fwd_dst).value(),
                                     static_cast<std::size_t>(x->element_bytes)});
  }
  auto r = std::make_shared<batch_resharder<greedy, S>>(comm, layouts, o, greedy{}, strategy);
  // Each tensor's sources hold every element's index; the first run is checked element by element.
  int me = 0;  // the device id: this rank's place in the edge's communicator
  MPI_Comm_rank(comm, &me);
  auto data = std::make_shared<std::vector<detail::checked_buffers>>();
  for (std::size_t k = 0; k < layouts.size(); ++k) data->emplace_back(r->plans()[k], me, r->source_elements(k), r->destination_elements(k));
  auto run = [r, data] {
    std::vector<std::span<const std::byte>> ins;
    std::vector<std::span<std::byte>> outs;
    for (detail::checked_buffers& b : *data) ins.emplace_back(b.in), outs.emplace_back(b.out);
    (*r)(ins, outs);
  };
  for (detail::checked_buffers& b : *data) b.clear();
  run();
  std::uint64_t wrong = 0;
  for (const detail::checked_buffers& b : *data) wrong += b.wrong();
  wrong = bounded_allreduce(comm, wrong, MPI_SUM, o.timeout_s, "checking a batch edge");
  if (wrong) throw error("edges[" + std::to_string(t.file_edge) + "]: the batch of " + std::to_string(layouts.size()) +
                         " tensors delivered " + std::to_string(wrong) + " wrong elements");
  return run;
}

inline std::function<void()> build_runner(MPI_Comm comm, const transfer_spec& t, const reshard_options& o, const std::string& strategy,
                                   int rank) {
  try {
    if (!t.rest.empty())
      return visit_strategy(strategy, [&](auto s) -> std::function<void()> { return make_batch_runner(comm, t, o, s); });
    return visit_strategy(strategy, [&](auto s) -> std::function<void()> {
      switch (t.tensor.element_bytes) {
        case 1: return make_runner<std::uint8_t>(comm, t, o, s, rank);
        case 2: return make_runner<std::uint16_t>(comm, t, o, s, rank);
        case 4: return make_runner<std::uint32_t>(comm, t, o, s, rank);
        case 8: return make_runner<std::uint64_t>(comm, t, o, s, rank);
        default: throw error("edges[" + std::to_string(t.file_edge) + "]: element_bytes must be 1, 2, 4 or 8 to be executed");
      }
    });
  } catch (const instance_too_large& e) {  // names the strategy, tensor and task, not the edge
    throw instance_too_large("edges[" + std::to_string(t.file_edge) + "]: " + e.what());
  } catch (const std::bad_alloc&) {  // the shards or the schedule: "std::bad_alloc" named no edge
    throw error("edges[" + std::to_string(t.file_edge) + "]: its shards and schedule do not fit in this rank's memory");
  }
}

}  // namespace pipeline_mpi

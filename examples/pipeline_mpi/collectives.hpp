// meshcast-pipeline-mpi's collectives on MPI_COMM_WORLD and the edges' communicators, each bounded
// in time, and the instruction lists' wire format for broadcasting them.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <meshcast/mpi.hpp>
#include <meshcast/pipeline.hpp>

namespace pipeline_mpi {
using namespace meshcast;
namespace pl = meshcast::pipeline;

// ---- waiting without taking the cores from ranks that have work --------------------------------

// The buffers of an operation given up on are kept, not freed, by bounded_wait: a late rank may
// still complete it.
inline void sleepy_barrier(MPI_Comm comm, double timeout_s, const char* what) {
  MPI_Request r = MPI_REQUEST_NULL;
  detail::mpi_check(MPI_Ibarrier(comm, &r), "MPI_Ibarrier");
  bounded_wait(r, timeout_s, what);
}
inline double allreduce_max(MPI_Comm comm, double v, double timeout_s) {
  std::vector<double> in{v}, out{0.0};
  MPI_Request r = MPI_REQUEST_NULL;
  detail::mpi_check(MPI_Iallreduce(in.data(), out.data(), 1, MPI_DOUBLE, MPI_MAX, comm, &r), "MPI_Iallreduce");
  bounded_wait(r, timeout_s, "reducing times", in, out);
  return out[0];
}
template <class T>
void broadcast_vector(std::vector<T>& v, int root, double timeout_s, const char* what) {
  long long n = static_cast<long long>(v.size());
  bounded_broadcast(MPI_COMM_WORLD, &n, sizeof n, root, timeout_s, what);
  // One message's count is an int: past it every rank refuses alike (the count wrapped negative).
  if (n < 0 || n > std::numeric_limits<int>::max() / static_cast<long long>(sizeof(T)))
    throw error(std::string(what) + ": " + std::to_string(n) + " values of " + std::to_string(sizeof(T)) +
                " bytes are more than one MPI message holds (2^31 - 1 bytes); fewer policies or a smaller pipeline");
  v.resize(static_cast<std::size_t>(n));
  bounded_broadcast(MPI_COMM_WORLD, v.data(), static_cast<int>(n * static_cast<long long>(sizeof(T))), root, timeout_s, what);
}

// ---- lists on the wire --------------------------------------------------------------------------

inline void put_lists(std::vector<std::int64_t>& w, const pl::lists& l) {
  w.push_back(static_cast<std::int64_t>(l.size()));
  for (const pl::stage_list& s : l) {
    w.push_back(static_cast<std::int64_t>(s.size()));
    for (const pl::instruction& x : s)
      w.insert(w.end(), {static_cast<std::int64_t>(x.op), x.mb, x.edge, static_cast<std::int64_t>(x.pass), x.peer});
  }
}
inline pl::lists get_lists(const std::vector<std::int64_t>& w, std::size_t& at) {
  pl::lists l(static_cast<std::size_t>(w.at(at++)));
  for (pl::stage_list& s : l) {
    s.resize(static_cast<std::size_t>(w.at(at++)));
    for (pl::instruction& x : s) {
      x.op = static_cast<pl::op_kind>(w.at(at));
      x.mb = w.at(at + 1);
      x.edge = w.at(at + 2);
      x.pass = static_cast<pl::pass_kind>(w.at(at + 3));
      x.peer = w.at(at + 4);
      at += 5;
    }
  }
  return l;
}

}  // namespace pipeline_mpi

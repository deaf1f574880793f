// The definitions behind batch_core.hpp. Header-only mode includes this from <meshcast/mpi.hpp>;
// libmeshcast compiles it once in compiled mode (src/mpi.cpp).
#pragma once

#include <mpi.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "../../core/detail/failure_of.hpp"
#include "../core_handle_impl.hpp"
#include "../front_end.hpp"
#include "batch_core.hpp"
#include "channel.hpp"
#include "collectives_impl.hpp"

namespace meshcast::detail {

/// A duplicate of the caller's communicator, freed with the state: meshcast's messages never meet
/// the application's (a pending MPI_ANY_TAG receive of its own once took one of ours).
class own_communicator {
 public:
  own_communicator(MPI_Comm comm, double timeout_s) : comm_(bounded_dup(comm, timeout_s)) {}
  own_communicator(own_communicator&& other) noexcept : comm_(std::exchange(other.comm_, MPI_COMM_NULL)) {}
  ~own_communicator() {  // a resharder may outlive MPI_Finalize (declared before it in main): then nothing to free
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (comm_ != MPI_COMM_NULL && !finalized) MPI_Comm_free(&comm_);
  }
  own_communicator(const own_communicator&) = delete;
  own_communicator& operator=(const own_communicator&) = delete;
  MPI_Comm get() const noexcept { return comm_; }
  /// Never frees it: a failed run's late messages may still arrive, and MPI reuses a freed
  /// communicator's context for the next one, where they would match that one's receives (a
  /// new resharder then read a dead run's data). Kept until the process ends, like the buffers.
  void keep() noexcept { comm_ = MPI_COMM_NULL; }

 private:
  MPI_Comm comm_;
};

// The state is the front end written once for every transport, here over MPI, on a communicator
// of its own (declared first: built before the front end, freed after it).
struct mpi_batch_state {
  own_communicator comm;
  std::optional<front_end<mpi_channel>> fe;
  explicit mpi_batch_state(own_communicator c) : comm(std::move(c)) {}
  void start(std::vector<tensor_layouts> tensors, const reshard_options& options, const erased_policies& policies) {
    try {
      fe.emplace(mpi_channel{comm.get(), channel_timeout_s(options.timeout_s), channel_solve_s(options.time_limit_s)},
                 std::move(tensors), options, policies);
    } catch (const timeout_error&) {
      comm.keep();  // the ranks it gave up on may still send to it
      throw;
    } catch (const error&) {
      throw;  // every rank agreed on it: nothing is left in flight
    } catch (...) {
      comm.keep();
      throw;
    }
  }
  ~mpi_batch_state() {
    if (fe && fe->failed()) comm.keep();
  }
};

// The state is allocated once the communicator is duplicated, and every rank learns whether each
// got one before the front end's first collective: one rank out of memory alone had left the
// others to wait out the timeout in the duplication.
inline mpi_batch_state* new_mpi_batch_state(MPI_Comm c, std::vector<tensor_layouts> tensors, const reshard_options& options,
                                            const erased_policies& policies) {
  const double timeout_s = channel_timeout_s(options.timeout_s);
  own_communicator comm(c, timeout_s);
  std::unique_ptr<mpi_batch_state> state;
  const std::string problem = failure_of([&] { state.reset(new mpi_batch_state(std::move(comm))); }, "making a resharder");
  try {
    agree_or_throw(state ? state->comm.get() : comm.get(), problem, timeout_s);
  } catch (const timeout_error&) {
    (state ? state->comm : comm).keep();
    throw;
  }
  state->start(std::move(tensors), options, policies);
  return state.release();
}

MESHCAST_INLINE batch_core::batch_core(MPI_Comm comm, std::vector<tensor_layouts> tensors, const reshard_options& options,
                                       const erased_policies& policies)
    : core_handle(new_mpi_batch_state(comm, std::move(tensors), options, policies)) {}

}  // namespace meshcast::detail

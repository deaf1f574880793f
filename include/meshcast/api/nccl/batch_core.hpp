// The type-independent part of the NCCL front end: `nccl_batch_core`, which plans, solves, shares
// and runs a batch over an NCCL communicator. Declarations only: batch_core_impl.hpp defines it,
// inline in header-only mode and once in libmeshcast-nccl when MESHCAST_COMPILED_NCCL is set
// (core/compiled.hpp), so that a program resharding over NCCL parses neither planner, solver
// nor executor. Needs <nccl.h> and <cuda_runtime.h>, for the communicator and stream types.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstddef>
#include <vector>

#include "../../core/compiled.hpp"
#include "../../exec/backend/nccl_group_transfers.hpp"
#include "../../layout/tensor_layouts.hpp"
#include "../core_handle.hpp"
#include "../policies.hpp"
#include "../reshard_options.hpp"

namespace meshcast::detail {

struct nccl_batch_state;  // batch_core_impl.hpp: kept out of view so that includers parse none of it
#if defined(MESHCAST_COMPILED_NCCL)
extern template class core_handle<nccl_batch_state>;  // instantiated in libmeshcast-nccl (src/nccl.cpp)
#endif

/// A batch resharder's state over an NCCL communicator, whatever its policies: the front end
/// written once for every transport (../front_end.hpp) over NCCL's channel (channel.hpp), behind
/// a pointer (../core_handle.hpp). Built collectively, it plans, has rank 0 solve (through
/// `policies`), shares the schedule over the communicator and keeps the executor and its
/// buffers; its runs go on `stream` in groups of at most `group_transfers` transfers. Every
/// misuse is a meshcast::error on every rank.
class nccl_batch_core : public core_handle<nccl_batch_state> {
 public:
  MESHCAST_NCCL_INLINE nccl_batch_core(ncclComm_t comm, cudaStream_t stream, std::vector<tensor_layouts> tensors,
                                       const reshard_options& options, const erased_policies& policies,
                                       std::size_t group_transfers);
};

}  // namespace meshcast::detail

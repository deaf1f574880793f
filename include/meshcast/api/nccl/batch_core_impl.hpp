// The definitions behind batch_core.hpp. Header-only mode includes this from <meshcast/nccl.hpp>;
// libmeshcast-nccl compiles it once when MESHCAST_COMPILED_NCCL is set (src/nccl.cpp).
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstddef>
#include <optional>
#include <utility>
#include <vector>

#include "../core_handle_impl.hpp"
#include "../front_end.hpp"
#include "batch_core.hpp"
#include "channel.hpp"

namespace meshcast::detail {

// The state is the front end written once for every transport, here over NCCL's channel on the
// caller's communicator and stream (an optional, as core_handle asks of every State).
struct nccl_batch_state {
  std::optional<front_end<nccl_channel>> fe;
  nccl_batch_state(ncclComm_t comm, cudaStream_t stream, std::vector<tensor_layouts> tensors, const reshard_options& options,
                   const erased_policies& policies, std::size_t group_transfers) {
    fe.emplace(nccl_channel(comm, stream, group_transfers, channel_timeout_s(options.timeout_s), options.nccl_nonblocking,
                            channel_solve_s(options.time_limit_s)),
               std::move(tensors), options, policies);
  }
};

MESHCAST_NCCL_INLINE nccl_batch_core::nccl_batch_core(ncclComm_t comm, cudaStream_t stream, std::vector<tensor_layouts> tensors,
                                                      const reshard_options& options, const erased_policies& policies,
                                                      std::size_t group_transfers)
    : core_handle(new nccl_batch_state(comm, stream, std::move(tensors), options, policies, group_transfers)) {}

}  // namespace meshcast::detail

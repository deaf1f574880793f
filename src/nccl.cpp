// libmeshcast-nccl, the compiled mode's library for NCCL (core/compiled.hpp): the NCCL front
// end's code that does not depend on a program's types, defined once, and the default policies
// instantiated (as libmeshcast does for MPI; the instantiations are the same, so a program may
// link both). Built with MESHCAST_COMPILED_NCCL, like the programs that link it.
#ifndef MESHCAST_COMPILED_NCCL
#error "src/nccl.cpp builds libmeshcast-nccl: compile it with MESHCAST_COMPILED_NCCL defined (the meshcast::compiled_nccl target does)."
#endif

#include <meshcast/api/nccl.hpp>
#include <meshcast/api/nccl/batch_core_impl.hpp>
#include <meshcast/api/policies_impl.hpp>

namespace meshcast::detail {

template class core_handle<nccl_batch_state>;
template void solve_erased<greedy, auto_strategy>(const erased_policies&, std::span<const plan>, const network&,
                                                  const reshard_options&, schedule&);
template std::string_view policy_name<greedy, auto_strategy>(bool);

}  // namespace meshcast::detail

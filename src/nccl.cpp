// libmeshcast-nccl, the compiled mode's library for NCCL (core/compiled.hpp): the NCCL front
// end's code that does not depend on a program's types, defined once (the default policies are
// libmeshcast-policies', src/policies.cpp, which libmeshcast links too, so a program may link
// both). Built with MESHCAST_COMPILED_NCCL, like the programs that link it.
#ifndef MESHCAST_COMPILED_NCCL
#error "src/nccl.cpp builds libmeshcast-nccl: compile it with MESHCAST_COMPILED_NCCL defined (the meshcast::compiled_nccl target does)."
#endif

#include <meshcast/api/nccl.hpp>
#include <meshcast/api/nccl/batch_core_impl.hpp>

namespace meshcast::detail {

template class core_handle<nccl_batch_state>;

}  // namespace meshcast::detail

// libmeshcast, the compiled mode's library (core/compiled.hpp): the MPI front end's code that does
// not depend on a program's types, defined once (the default policies are libmeshcast-policies',
// src/policies.cpp). Built with MESHCAST_COMPILED, like the programs that link it, so that both
// see the same declarations.
#ifndef MESHCAST_COMPILED
#error "src/mpi.cpp builds libmeshcast: compile it with MESHCAST_COMPILED defined (the meshcast::compiled target does)."
#endif

#include <meshcast/api/mpi.hpp>
#include <meshcast/api/mpi/batch_core_impl.hpp>

namespace meshcast::detail {

template class core_handle<mpi_batch_state>;

}  // namespace meshcast::detail

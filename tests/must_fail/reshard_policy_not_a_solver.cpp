// expect: The Solver of a reshard must model meshcast::solver
// errors: 1
// The front ends erase the one call's policies through erase_policies (api/policies.hpp), as
// meshcast::reshard<Solver> does: a type that is no solver fails with the sentence alone, not with
// the solver's call and its name after it.
#include <meshcast/api/policies_impl.hpp>
#ifdef MESHCAST_MISUSE
struct not_a_solver {};
using chosen = not_a_solver;
#else
using chosen = meshcast::greedy;
#endif
int main() { return meshcast::detail::erase_policies<chosen, meshcast::auto_strategy>().solve ? 0 : 1; }

// expect: The Strategy of a reshard must model meshcast::strategy
// errors: 1
// As reshard_policy_not_a_solver.cpp, for the strategy: one error, the sentence.
#include <meshcast/api/policies_impl.hpp>
#ifdef MESHCAST_MISUSE
struct not_a_strategy {
  static constexpr const char* name = "not_a_strategy";
};
using chosen = not_a_strategy;
#else
using chosen = meshcast::auto_strategy;
#endif
int main() { return meshcast::detail::erase_policies<meshcast::greedy, chosen>().solve ? 0 : 1; }

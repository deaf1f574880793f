// libmeshcast-policies: the default policies (greedy under auto) instantiated once, for both
// compiled-mode libraries (libmeshcast and libmeshcast-nccl link it), so that a program linking
// both holds one explicit instantiation of each, as the standard asks. Needs neither MPI nor CUDA.
#ifndef MESHCAST_COMPILED
#error "src/policies.cpp builds libmeshcast-policies: compile it with MESHCAST_COMPILED defined (its targets do)."
#endif

#include <meshcast/api/policies.hpp>
#include <meshcast/api/policies_impl.hpp>

namespace meshcast::detail {

template void solve_erased<greedy, auto_strategy>(const erased_policies&, std::span<const plan>, const network&,
                                                  const reshard_options&, schedule&);
template std::string_view policy_name<greedy, auto_strategy>(bool);

}  // namespace meshcast::detail

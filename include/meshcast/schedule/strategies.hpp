// The built-in strategies as a type list, and the choice of one by name at run time. A user's
// strategy joins by appending: `append_t<builtin_strategies, mine>`.
#pragma once

#include <string_view>

#include "../core/registry.hpp"
#include "strategy/auto.hpp"
#include "strategy/broadcast.hpp"
#include "strategy/send_recv.hpp"
#include "strategy/send_recv_allgather.hpp"

namespace meshcast {

using builtin_strategies = type_list<send_recv, send_recv_allgather, broadcast, auto_strategy>;

/// Calls `f(S{})` for the strategy of `List` named `name` and returns what it returns; throws
/// `meshcast::error` "unknown strategy 'x' (expected send_recv, send_recv_allgather, broadcast or auto)".
template <class List = builtin_strategies, class F>
decltype(auto) visit_strategy(std::string_view name, F&& f) {
  return visit_by_name<List>("strategy", name, static_cast<F&&>(f));
}

}  // namespace meshcast

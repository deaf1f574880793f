// All built-in strategies, and the choice of one by name at run time (for command-line tools).
#pragma once

#include <string>
#include <string_view>

#include "error.hpp"
#include "strategy/broadcast.hpp"
#include "strategy/send_recv.hpp"
#include "strategy/send_recv_allgather.hpp"

namespace meshcast {

/// Calls `f(Strategy{})` for the strategy named `name`; throws naming it if there is none.
template <class F>
decltype(auto) visit_strategy(std::string_view name, F&& f) {
  if (name == send_recv::name) return f(send_recv{});
  if (name == send_recv_allgather::name) return f(send_recv_allgather{});
  if (name == broadcast::name) return f(broadcast{});
  throw error("unknown strategy '" + std::string(name) + "' (expected send_recv, send_recv_allgather or broadcast)");
}

}  // namespace meshcast

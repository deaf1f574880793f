// Open registries: the built-in lists, one error contract, a user's policy appended.
#include <doctest/doctest.h>

#include <string>

#include <meshcast/meshcast.hpp>

#include "support/thrown.hpp"

using namespace meshcast;
using meshcast::testing::thrown;

namespace {

struct first_option_in_order {  // a user's solver
  static constexpr std::string_view name = "first_option_in_order";
  const char* supports(const instance&) const { return nullptr; }
  solver_result solve(const instance& in, const solver_options&) const {
    solver_result r;
    for (const auto& u : in.units)
      for (const op& o : u.options[0].ops) r.ops.push_back(o);
    return r;
  }
};
static_assert(solver<first_option_in_order>);
}  // namespace

TEST_CASE("registry: built-in names are generated from the lists") {
  CHECK(names_text<builtin_solvers>() ==
        "naive, alpa_least_loaded, alpa_greedy, alpa_dfs, greedy, branch_and_bound or open_shop");
  CHECK(names_text<builtin_strategies>() == "send_recv, send_recv_allgather, broadcast or auto");
  CHECK(has_name<builtin_solvers>("greedy"));
  CHECK(!has_name<builtin_solvers>("Greedy"));
  static_assert(has_name<builtin_strategies>("broadcast"));
}

TEST_CASE("registry: one error contract for every kind of policy") {
  CHECK(thrown([] { visit_solver("fastest", [](auto) {}); }) ==
        "unknown solver 'fastest' (expected naive, alpa_least_loaded, alpa_greedy, alpa_dfs, greedy, branch_and_bound or "
        "open_shop)");
  CHECK(thrown([] { visit_strategy("pigeon", [](auto) {}); }) ==
        "unknown strategy 'pigeon' (expected send_recv, send_recv_allgather, broadcast or auto)");
  CHECK(thrown([] { visit_solver(std::string("a\nb"), [](auto) {}); }).find("unknown solver 'a\\x0ab'") == 0);
  CHECK(thrown([] { visit_solver("", [](auto) {}); }).find("unknown solver ''") == 0);
}

TEST_CASE("registry: visiting returns the callee's value, for every name of the list") {
  for (std::string_view n : names_of(builtin_solvers{}))
    CHECK(visit_solver(n, [](auto s) { return std::string(decltype(s)::name); }) == n);
  for (std::string_view n : names_of(builtin_strategies{}))
    CHECK(visit_strategy(n, [](auto s) { return std::string(decltype(s)::name); }) == n);
}

TEST_CASE("registry: a user's solver appended to the list is chosen by name and solves") {
  using mine = append_t<builtin_solvers, first_option_in_order>;
  static_assert(mine::size == builtin_solvers::size + 1);
  CHECK(names_text<mine>().ends_with("open_shop or first_option_in_order"));
  const plan p = make_plan(dynamic_layout(dynamic_mesh{4}, dynamic_spec("S0,R"), dynamic_shape{64, 64}),
                           dynamic_layout(dynamic_mesh{4}, dynamic_spec("R,S0"), dynamic_shape{64, 64}),
                           {.element_bytes = 4, .devices = device_map::same()});
  const network net = network::uniform(default_hosts(4, 4, 1), network::gbit_per_s(10), network::gbit_per_s(100), 1e-5);
  const instance in = make_instance(p, net, send_recv{});
  const schedule s = visit_solver<mine>("first_option_in_order", [&](auto solver) { return solve(in, solver); });
  CHECK(s.solver == "first_option_in_order");
  CHECK(!s.transfers.empty());
  CHECK(s.makespan_s >= s.lower_bound_s * (1 - 1e-9));
}

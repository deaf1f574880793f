// Dispatching (solver/dispatch.hpp): the chosen options re-sequenced op by op. Over random batches
// and every strategy: the result is a valid answer for its instance, the ordered model over it in
// its order gives exactly the dispatcher's makespan, and starts never decrease; greedy keeps
// whichever of it and its list ends sooner (dispatching is not always shorter). On a convoy (each sender's bundles go to every
// receiving host) it reaches the bound where the unit-by-unit list does not.
#include <doctest/doctest.h>

#include <meshcast/meshcast.hpp>

#include <random>
#include <vector>

using namespace meshcast;

namespace {
std::vector<plan> random_plans(std::mt19937_64& rng, int tensors) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const char* src_specs[] = {"S0,S1", "S1,R", "R,S0", "S01,R", "R,R", "S0,R"};
  const char* dst_specs[] = {"S0,R", "R,S0", "R,R", "S0,S1", "S1,S0", "R,S1"};
  std::vector<plan> plans;
  for (int k = 0; k < tensors; ++k) {
    const dynamic_shape shape{pick(1, 40), pick(1, 30)};
    plans.push_back(make_plan(dynamic_layout(dynamic_mesh{2, 2}, dynamic_spec(src_specs[pick(0, 5)]), shape),
                              dynamic_layout(dynamic_mesh{2, 2}, dynamic_spec(dst_specs[pick(0, 5)]), shape),
                              {.element_bytes = 4, .device_count = 8}));
  }
  return plans;
}
}  // namespace

TEST_CASE("dispatch: a valid answer whose ordered model is its own; greedy keeps the shorter") {
  std::mt19937_64 rng(5);
  const network net = network::uniform(default_hosts(8, 4, 2), network::gbit_per_s(10), network::gbit_per_s(800), 20e-6, 1);
  auto each_strategy = [](auto&& f) {
    f(send_recv{});
    f(send_recv_allgather{});
    f(broadcast{});
    f(auto_strategy{});
  };
  for (int round = 0; round < 20; ++round) {
    const std::vector<plan> plans = random_plans(rng, 2 + round % 12);
    std::vector<std::shared_ptr<const plan>> shared;
    for (const plan& p : plans) shared.push_back(std::make_shared<const plan>(p));
    for (std::size_t bundle : {std::size_t{0}, std::size_t{4096}})
      each_strategy([&](auto st) {
        CAPTURE(round);
        CAPTURE(bundle);
        CAPTURE(std::string(decltype(st)::name));
        const instance in = make_instance(shared, std::make_shared<const network>(net), st, {.bundle_bytes = bundle});
        greedy g;
        g.search_limit_s = 0;
        const greedy::outcome best = g.search(in, {});
        double makespan = -1;
        std::vector<op> ops = dispatch(in, best.order, best.choice, &makespan);
        REQUIRE(!ops.empty());
        CHECK_NOTHROW(validate_solution(in, ops, "dispatch"));
        for (std::size_t i = 1; i < ops.size(); ++i) CHECK(ops[i].start >= ops[i - 1].start);
        schedule s = make_schedule(in, ops);
        simulate(s, net, in.resources);
        CHECK(s.makespan_s == doctest::Approx(makespan).epsilon(1e-12));
        const schedule kept = solve(in, g);
        CHECK(kept.makespan_s <= std::min(makespan, best.makespan) * (1 + 1e-12));
      });
  }
}

TEST_CASE("dispatch: a convoy of point-to-point bundles ends at the bound") {
  // 16 tensors from 2 hosts (FSDP rows) to 2 replicas of a tensor-parallel engine: every source
  // device sends its rows to one device on each receiving host.
  std::vector<plan> plans;
  for (int k = 0; k < 16; ++k)
    plans.push_back(make_plan(dynamic_layout(dynamic_mesh{2, 2}, dynamic_spec("S01,R"), dynamic_shape{64, 32}),
                              dynamic_layout(dynamic_mesh{2, 2}, dynamic_spec("R,S1"), dynamic_shape{64, 32}),
                              {.element_bytes = 4, .device_count = 8}));
  const network net = network::uniform(default_hosts(8, 4, 2), network::gbit_per_s(1), network::gbit_per_s(800), 10e-6, 1);
  const schedule s = solve_batch(plans, net, send_recv{}, greedy{}, {.bucket_bytes = 8192});
  CHECK(s.makespan_s <= s.lower_bound_s * 1.01);
}

// The packed timing of an instance (schedule/op_timing.hpp) and what greedy builds on it. Over
// random batches, every strategy, replica splitting, bundles, eager connections and chains with
// partial holds: each op_timing reads as its op; a list schedule over the packed form places
// every unit as one over the ops does (written here with the clocks over the ops themselves); and
// the answer of greedy's local search, which starts moves from stored clocks and drops them once
// they pass the best, is the list it names, placed from scratch.
#include <doctest/doctest.h>

#include <meshcast/meshcast.hpp>

#include <limits>
#include <memory>
#include <numeric>
#include <random>
#include <vector>

using namespace meshcast;

namespace {

struct timing_case {
  std::vector<std::shared_ptr<const plan>> plans;
  std::shared_ptr<const network> net;
};

timing_case make_timing_case(std::mt19937_64& rng, int round) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const char* specs[] = {"S0,S1", "S1,R", "R,S0", "S01,R", "R,R", "S0,R", "S1,S0", "R,S1"};
  const int meshes[][2] = {{2, 2}, {2, 4}, {4, 2}, {1, 4}, {3, 2}};
  const auto& s = meshes[pick(0, 4)];
  const auto& d = meshes[pick(0, 4)];
  const index_t devices = s[0] * s[1] + d[0] * d[1];
  timing_case c;
  for (int k = 0, tensors = 1 + round % 5; k < tensors; ++k) {
    const dynamic_shape shape{pick(1, 32) * 4, pick(1, 24) * 6};
    c.plans.push_back(std::make_shared<const plan>(
        make_plan(dynamic_layout(dynamic_mesh{s[0], s[1]}, dynamic_spec(specs[pick(0, 7)]), shape),
                  dynamic_layout(dynamic_mesh{d[0], d[1]}, dynamic_spec(specs[pick(0, 7)]), shape),
                  {.element_bytes = 4, .device_count = devices})));
  }
  network net = network::uniform(default_hosts(devices, devices, pick(1, 4)), network::gbit_per_s(pick(1, 100)),
                                 network::gbit_per_s(800), pick(0, 50) * 1e-6, 1);
  if (round % 2 == 0) net.with_eager_bytes(index_t{1} << pick(8, 20));
  c.net = std::make_shared<const network>(net);
  return c;
}

// Calls f(instance) for every strategy and option mix of the case.
template <class F>
void each_instance(const timing_case& c, F&& f) {
  auto with = [&](auto strategy) {
    for (int mix = 0; mix < 4; ++mix) {
      CAPTURE(std::string(decltype(strategy)::name));
      CAPTURE(mix);
      f(make_instance(c.plans, c.net, strategy, {.split_replicas = (mix & 1) != 0, .bundle_bytes = (mix & 2) ? 4096u : 0u}));
    }
  };
  with(send_recv{});
  with(send_recv_allgather{});
  with(broadcast{});
  with(auto_strategy{});
}

// The list schedule over the ops themselves: each unit in turn takes the option that finishes
// earliest (ties: the sender whose egress is free earliest), as greedy documents it.
double list_over_ops(const instance& in, const std::vector<std::size_t>& order, std::vector<std::size_t>& choice) {
  choice.assign(in.units.size(), 0);
  resource_clock clock(in.resources.size());
  trial_clock trial(in.resources.size());
  for (std::size_t u : order) {
    const unit& un = in.units[u];
    std::size_t best = 0;
    double best_finish = 0, best_tie = 0;
    for (std::size_t k = 0; k < un.options.size(); ++k) {
      const double finish = trial.finish(un.options[k].ops, clock);
      const double tie =
          un.options[k].sender >= 0 ? clock.free_at(in.resources.egress(in.net->port_of(un.options[k].sender))) : 0;
      if (k == 0 || finish < best_finish - 1e-15 || (finish <= best_finish + 1e-15 && tie < best_tie))
        best = k, best_finish = finish, best_tie = tie;
    }
    choice[u] = best;
    clock.place_option(un.options[best].ops);
  }
  return clock.makespan();
}

}  // namespace

TEST_CASE("instance_timing: every op_timing reads as its op") {
  std::mt19937_64 rng(17);
  std::size_t ops = 0, brief = 0, slotted = 0;
  for (int round = 0; round < 12; ++round) {
    CAPTURE(round);
    each_instance(make_timing_case(rng, round), [&](const instance& in) {
      const instance_timing timing(in);
      for (std::size_t u = 0; u < in.units.size(); ++u)
        for (std::size_t k = 0; k < in.units[u].options.size(); ++k) {
          const option& o = in.units[u].options[k];
          const std::span<const op_timing> packed = timing.ops(u, k);
          REQUIRE(packed.size() == o.ops.size());
          CHECK(timing.sender_egress(u, k) == (o.sender >= 0 ? in.resources.egress(in.net->port_of(o.sender)) : -1));
          for (std::size_t i = 0; i < packed.size(); ++i) {
            const op& x = o.ops[i];
            const op_timing& t = packed[i];
            ++ops, brief += x.holds_briefly(), slotted += x.connection >= 0;
            REQUIRE(std::vector<int>(t.resources.begin(), t.resources.end()) == x.resources);
            CHECK(t.duration == x.duration);
            CHECK(t.after == x.after);
            CHECK(t.connection == x.connection);
            CHECK(t.eager == x.eager);
            for (std::size_t r = 0; r < x.resources.size(); ++r) {
              CHECK(t.held_from(r) == x.held_from(r));
              CHECK(t.held_until(r) == x.held_until(r));
              CHECK(t.held_for(r) == x.held_for(r));
            }
          }
        }
    });
  }
  // The cases hold what the packed form treats apart: partial holds (chains) and connections.
  CHECK(ops > 1000);
  CHECK(brief > 0);
  CHECK(slotted > 0);
}

TEST_CASE("greedy's list schedule over the packed timing places every unit as over the ops") {
  std::mt19937_64 rng(23);
  for (int round = 0; round < 12; ++round) {
    CAPTURE(round);
    each_instance(make_timing_case(rng, round), [&](const instance& in) {
      std::vector<std::size_t> order(in.units.size());
      std::iota(order.begin(), order.end(), 0);
      for (int shuffle = 0; shuffle < 3; ++shuffle) {
        std::vector<std::size_t> theirs, ours;
        const double expected = list_over_ops(in, order, theirs);
        CHECK(greedy::list_schedule(in, order, &ours) == expected);  // the same double, not close to it
        CHECK(ours == theirs);
        std::shuffle(order.begin(), order.end(), rng);
      }
    });
  }
}

TEST_CASE("greedy's local search answers with the list it names, placed from scratch") {
  std::mt19937_64 rng(29);
  greedy g;
  g.search_patience = 4096;  // many moves, many of them taken: the stored clocks change often
  g.search_placements = std::size_t{1} << 16;
  std::size_t searched = 0;
  for (int round = 0; round < 10; ++round) {
    CAPTURE(round);
    each_instance(make_timing_case(rng, round), [&](const instance& in) {
      const greedy::outcome best = g.search(in, {.seed = static_cast<std::uint64_t>(round)});
      std::vector<std::size_t> choice;
      CHECK(greedy::list_schedule(in, best.order, &choice, &best.forced) == best.makespan);
      CHECK(choice == best.choice);
      searched += in.units.size() > 1;
    });
  }
  CHECK(searched > 100);
}

// Pipeline stages: descriptions, compute orders, the simulator of the pinned semantics, and every
// policy's lists checked by an independent checker (complete, dependencies in list order, no
// deadlock, times and makespan equal to an independent re-simulation).
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <type_traits>

#include <meshcast/pipeline.hpp>

#include "support/pipeline_checker.hpp"
#include "support/random_pipelines.hpp"
#include "support/thrown.hpp"

using namespace meshcast;
using namespace meshcast::pipeline;
using meshcast::testing::thrown;
using meshcast::testing::check_pipeline_lists;

namespace {

const schedule_kind all_schedules[] = {schedule_kind::forward_only, schedule_kind::gpipe, schedule_kind::one_f_one_b,
                                       schedule_kind::eager_1f1b};
const stream_mode all_streams[] = {stream_mode::shared, stream_mode::separate};

/// Runs every built-in policy; checks each one's lists independently; returns them by name. The
/// policies get a generous time limit, so that list_scheduling finishes by its iteration counts
/// (its result is then the same alone and as optimal's seed, on slow builds too); optimal's
/// search is bounded by `search_s`.
std::map<std::string, timeline> all_policies(const description& d, double search_s = 0.2) {
  std::map<std::string, timeline> out;
  policy_options o;
  o.time_limit_s = 60;
  for (const char* name : {"prior_first", "later_first", "rounds", "list_scheduling", "optimal"}) {
    timeline t = visit_policy(name, [&](auto p) {
      if constexpr (std::is_same_v<decltype(p), optimal>) p.search_limit_s = search_s;
      return order(d, p, o);
    });
    INFO("policy ", name, ", schedule ", to_string(d.schedule), ", streams ", to_string(d.streams));
    CHECK(check_pipeline_lists(d, t.stages, t.makespan) == "");
    CHECK(t.makespan >= t.lower_bound - 1e-9);
    out[name] = std::move(t);
  }
  return out;
}

}  // namespace

TEST_CASE("pipeline: compute orders follow the schedules") {
  description d = meshcast::testing::chain_pipeline(4, 6);
  auto text = [&](index_t s) {
    std::string out;
    for (const instruction& x : compute_order(d, s)) out += std::string(to_string(x.op)) + std::to_string(x.mb) + " ";
    return out;
  };
  CHECK(text(0) == "F0 F1 F2 F3 F4 F5 ");
  d.schedule = schedule_kind::gpipe;
  CHECK(text(3) == "F0 F1 F2 F3 F4 F5 B0 B1 B2 B3 B4 B5 ");
  d.schedule = schedule_kind::one_f_one_b;  // stage i: min(m, n - i) forwards before the first B
  CHECK(text(0) == "F0 F1 F2 F3 B0 F4 B1 F5 B2 B3 B4 B5 ");
  CHECK(text(2) == "F0 F1 B0 F2 B1 F3 B2 F4 B3 F5 B4 B5 ");
  CHECK(text(3) == "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 ");
  d.schedule = schedule_kind::eager_1f1b;  // stage i: min(m, 2(n - i) - 1) warm-up forwards
  CHECK(text(0) == "F0 F1 F2 F3 F4 F5 B0 B1 B2 B3 B4 B5 ");
  CHECK(text(2) == "F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 B4 B5 ");
  CHECK(text(3) == "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 ");
  for (schedule_kind k : all_schedules) {
    d.schedule = k;
    for (index_t s = 0; s < 4; ++s) {
      std::string mine;
      for (auto [kind, mb] : meshcast::testing::expected_computes(d, s)) {
        mine += kind;
        mine += std::to_string(mb);
        mine += ' ';
      }
      CHECK(text(s) == mine);
    }
  }
}

TEST_CASE("pipeline: descriptions are validated, naming the bad input") {
  description d = meshcast::testing::chain_pipeline(4, 8);
  CHECK_NOTHROW(validate(d));
  auto with = [&](auto change) {
    description x = d;
    change(x);
    return thrown([&] { validate(x); });
  };
  CHECK(with([](description& x) { x.stages.clear(); }).find("stages must list at least one stage") == 0);
  CHECK(with([](description& x) { x.stages[1].forward = -1; }).find("stages[1].forward is -1") == 0);
  CHECK(with([](description& x) { x.stages[2].forward = std::nan(""); }).find("stages[2].forward is nan") == 0);
  CHECK(with([](description& x) { x.stages[2].forward = INFINITY; }).find("stages[2].forward is inf") == 0);
  CHECK(with([](description& x) {
          x.schedule = schedule_kind::gpipe;
          x.stages[0].backward = -2;
        }).find("stages[0].backward") == 0);
  CHECK(with([](description& x) { x.edges[2].to = 7; }).find("edges[2].to is 7, outside [0, 3]") == 0);
  CHECK(with([](description& x) { x.edges[1].from = -1; }).find("edges[1].from is -1") == 0);
  CHECK(with([](description& x) { x.edges[1] = {2, 1, 1}; }).find("edges[1].to is 1 but must be greater than .from (2)") == 0);
  CHECK(with([](description& x) { x.edges[1] = {1, 1, 1}; }).find("edges[1].to is 1") == 0);
  CHECK(with([](description& x) { x.edges.push_back({1, 2, 5}); }).find("edges[3] repeats edges[1] (1 -> 2)") == 0);
  CHECK(with([](description& x) { x.edges[0].time = -0.5; }).find("edges[0].time is -0.5") == 0);
  CHECK(with([](description& x) { x.edges[0].backward_time = std::nan(""); }).find("edges[0].backward_time is nan") == 0);
  CHECK(with([](description& x) { x.microbatches = 0; }).find("microbatches is 0, outside [1, 100000]") == 0);
  CHECK(with([](description& x) { x.microbatches = 100001; }).find("microbatches is 100001") == 0);
  CHECK(with([](description& x) { x.stages.resize(5000); }).find("stages lists 5000 stages") == 0);
  // Times each finite that add up past a double (list_scheduling read out of bounds on them).
  CHECK(with([](description& x) { x.stages[0].forward = x.stages[1].forward = 1e308; })
            .find("the stages' and edges' times add up to inf over " + std::to_string(d.microbatches) + " microbatches") == 0);
  CHECK(with([](description& x) { x.edges[0].time = 1e308; x.microbatches = 2; }).find("the stages' and edges' times") == 0);
  CHECK_NOTHROW(validate([&] {
    description x = d;
    x.stages[0].forward = 1e300;
    return x;
  }()));
  // The instruction cap: 4096 stages, a dense DAG and many microbatches overflow it, checked.
  CHECK(with([](description& x) {
          x.stages.resize(200);
          x.edges.clear();
          for (index_t a = 0; a < 200; ++a)
            for (index_t b = a + 1; b < 200; ++b) x.edges.push_back({a, b, 1});
          x.microbatches = 100000;
        }).find("the pipeline has ") == 0);
  // The count goes through the library's one checked arithmetic.
  CHECK(thrown([] {
          description x;
          x.stages.resize(3);
          x.microbatches = std::numeric_limits<index_t>::max() / 2;
          (void)instruction_count(x);
        }) == "the number of instructions does not fit in 64 bits");
}

TEST_CASE("pipeline: the simulator follows the pinned semantics on a hand-computed case") {
  // Two stages, F = 2 on stage 0 and 3 on stage 1, one transfer of 1, two microbatches.
  description d;
  d.stages = {{2, 0}, {3, 0}};
  d.microbatches = 2;
  d.edges = {{0, 1, 1}};
  auto F = [](index_t j) { return instruction::compute(op_kind::forward, j); };
  auto S = [](index_t j) { return instruction::transfer(op_kind::send, 0, pass_kind::forward, j, 1); };
  auto R = [](index_t j) { return instruction::transfer(op_kind::recv, 0, pass_kind::forward, j, 0); };
  lists l = {{F(0), S(0), F(1), S(1)}, {R(0), F(0), R(1), F(1)}};
  // shared: F0 [0,2], c0 [2,3], stage 0: F1 [3,5]; stage 1: F0 [3,6]; c1 [6,7]; F1 [7,10].
  simulation r = simulate(d, l);
  REQUIRE(!r.deadlock);
  CHECK(r.makespan == 10);
  CHECK(l[0][2].start == 3);
  CHECK(l[0][3].start == 6);
  CHECK(l[1][3].start == 7);
  CHECK(check_pipeline_lists(d, l, r.makespan) == "");
  // separate: stage 0 computes F1 while sending c0: F1 [2,4]; c1 waits for stage 1's
  // communication stream only: [4,5]; F0 on stage 1 [3,6], F1 [6,9].
  d.streams = stream_mode::separate;
  r = simulate(d, l);
  REQUIRE(!r.deadlock);
  CHECK(l[0][2].start == 2);
  CHECK(l[0][3].start == 4);
  CHECK(l[1][3].start == 6);
  CHECK(r.makespan == 9);
  CHECK(check_pipeline_lists(d, l, r.makespan) == "");
}

TEST_CASE("pipeline: lists that deadlock are reported, never timed") {
  // Stages 0 and 1 exchange two transfers of different edges in opposite orders: 0 -> 2 -> 1
  // style crossing through three stages.
  description d;
  d.stages = {{1, 0}, {1, 0}, {1, 0}};
  d.microbatches = 1;
  d.edges = {{0, 1, 1}, {0, 2, 1}, {1, 2, 1}};
  auto F = [](index_t j) { return instruction::compute(op_kind::forward, j); };
  auto S = [](index_t e, index_t peer) { return instruction::transfer(op_kind::send, e, pass_kind::forward, 0, peer); };
  auto R = [](index_t e, index_t peer) { return instruction::transfer(op_kind::recv, e, pass_kind::forward, 0, peer); };
  // Stage 0 sends to 2 before 1; stage 2 receives from 1 before 0; stage 1 needs 0's data first.
  lists l = {{F(0), S(1, 2), S(0, 1)}, {R(0, 0), F(0), S(2, 2)}, {R(2, 1), R(1, 0), F(0)}};
  for (stream_mode s : all_streams) {
    d.streams = s;
    lists copy = l;
    simulation r = simulate(d, copy);
    CHECK(r.deadlock);
    CHECK(r.problem.find("the lists deadlock") == 0);
    CHECK(r.problem.find("stage 0 at send of microbatch 0 on edges[1]") != std::string::npos);
    CHECK_THROWS_AS(simulate_or_throw(graph(d), copy), deadlock_error);
  }
  // The same transfers in a consistent order run.
  lists ok = {{F(0), S(0, 1), S(1, 2)}, {R(0, 0), F(0), S(2, 2)}, {R(1, 0), R(2, 1), F(0)}};
  simulation r = simulate(d, ok);
  CHECK(!r.deadlock);
  CHECK(check_pipeline_lists(d, ok, r.makespan) == "");
  // A send before the compute that produces its data waits for it: with shared streams, forever.
  d.streams = stream_mode::shared;
  lists early = {{S(0, 1), F(0), S(1, 2)}, {R(0, 0), F(0), S(2, 2)}, {R(1, 0), R(2, 1), F(0)}};
  CHECK(simulate(d, early).deadlock);
}

TEST_CASE("pipeline: lists that are not lists of the pipeline are refused, naming the entry") {
  description d = meshcast::testing::chain_pipeline(2, 2);
  lists good = prior_first{}.order(graph(d)).stages;
  auto problem = [&](auto change) {
    lists l = good;
    change(l);
    return thrown([&] { simulate(d, l); });
  };
  CHECK(problem([](lists& l) { l.pop_back(); }).find("the lists name 1 stages") == 0);
  CHECK(problem([](lists& l) { l[0].pop_back(); }).find("the send of microbatch 1 on edges[0] (forward) is missing from stage 0") == 0);
  CHECK(problem([](lists& l) { l[1].push_back(l[1][0]); }).find("stages[1][4]: this transfer appears twice") == 0);
  CHECK(problem([](lists& l) { l[0][1].peer = 0; }).find("stages[0][1]: peer is 0") == 0);
  CHECK(problem([](lists& l) { std::swap(l[0][0], l[0][2]); }).find("stages[0][0]: F of microbatch 1 where the schedule puts F of microbatch 0") == 0);
  CHECK(problem([](lists& l) { l[0][1].edge = 3; }).find("stages[0][1]: edge 3 does not exist") == 0);
  CHECK(problem([](lists& l) { l[1][0].mb = 9; }).find("stages[1][0]: microbatch 9 is outside [0, 1]") == 0);
  CHECK(problem([](lists& l) { l[0][1].op = op_kind::recv; }).find("stages[0][1]: this recv belongs to stage 1") == 0);
  CHECK(problem([](lists& l) { l[0][0].op = op_kind::backward; }).find("stages[0][0]: B in a forward_only pipeline") == 0);
}

TEST_CASE("pipeline: every policy on random DAG pipelines, every schedule, both stream modes") {
  meshcast::testing::random_pipeline_source gen(20240611);
  int cases = 0;
  for (int round = 0; round < 6; ++round)
    for (schedule_kind k : all_schedules)
      for (stream_mode s : all_streams) {
        const index_t n = gen.uniform(2, 7), m = gen.uniform(1, 5);
        description d = gen.dag(n, m, k, s, 0.35);
        INFO("case ", cases, ": ", n, " stages, ", m, " microbatches, ", d.edges.size(), " edges");
        auto r = all_policies(d, 0.5);
        const double best_fixed =
            std::min({r["prior_first"].makespan, r["later_first"].makespan, r["rounds"].makespan});
        CHECK(r["list_scheduling"].makespan <= best_fixed);
        for (auto& [name, t] : r) CHECK(r["optimal"].makespan <= t.makespan);
        if (r["optimal"].proven_optimal) CHECK(r["optimal"].lower_bound == r["optimal"].makespan);
        ++cases;
      }
}

TEST_CASE("pipeline: fuzz: random pipelines, all policies, all schedules, both stream modes") {
  // Larger and sparser than the case above; zero times included; optimal mostly stops at its limit.
  meshcast::testing::random_pipeline_source gen(7);
  for (int round = 0; round < 40; ++round) {
    const schedule_kind k = all_schedules[gen.uniform(0, 3)];
    const stream_mode s = all_streams[gen.uniform(0, 1)];
    const index_t n = gen.uniform(1, 12), m = gen.uniform(1, 8);
    description d = gen.dag(n, m, k, s, gen.uniform(0, 4) * 0.1);
    INFO("round ", round, ": ", n, " stages, ", m, " microbatches, ", d.edges.size(), " edges, ", to_string(k), ", ",
         to_string(s));
    auto r = all_policies(d, 0.3);
    for (auto& [name, t] : r) CHECK(r["optimal"].makespan <= t.makespan);
  }
}

TEST_CASE("pipeline: a chain with shared streams: rounds keeps the communication phase at 2 units, prior_first grows") {
  // The seed's case: compute 2 units, a transfer 1 unit. The transfers whose data was computed
  // at step p (c01 of microbatch p, c12 of microbatch p - 1, ...) form the communication phase
  // of step p; in the steady state (every edge busy) it spans, from its first start to its last
  // end, 2 units under rounds for every n, and n - 1 units under prior_first (each stage's send
  // waits for its receive from the stage before).
  for (index_t n : {3, 4, 5, 6, 8, 12, 16, 24, 32}) {
    const index_t m = 2 * n;
    description d = meshcast::testing::chain_pipeline(n, m);
    auto phase = [&](const timeline& t) {
      std::map<index_t, std::pair<double, double>> span;  // step -> (first start, last end)
      for (index_t s = 0; s < n; ++s)
        for (const instruction& x : t.stages[s])
          if (x.op == op_kind::send) {
            auto [it, fresh] = span.try_emplace(x.mb + s, x.start, x.end);
            if (!fresh) it->second = {std::min(it->second.first, x.start), std::max(it->second.second, x.end)};
          }
      double lo = INFINITY, hi = 0;
      for (auto [step, sp] : span)
        if (step >= n - 2 && step < m) lo = std::min(lo, sp.second - sp.first), hi = std::max(hi, sp.second - sp.first);
      return std::make_pair(lo, hi);
    };
    const timeline r = order(d, rounds{}), p = order(d, prior_first{}), best = order(d, list_scheduling{});
    INFO("n = ", n);
    CHECK(phase(r) == std::make_pair(2.0, 2.0));
    CHECK(phase(p) == std::make_pair(double(n - 1), double(n - 1)));
    if (n > 3) CHECK(r.makespan < p.makespan);  // with 3 stages the phase is 2 units under both
    CHECK(best.makespan <= r.makespan);
    CHECK(check_pipeline_lists(d, r.stages, r.makespan) == "");
    CHECK(check_pipeline_lists(d, p.stages, p.makespan) == "");
  }
}

TEST_CASE("pipeline: the seed's U-Nets: no fixed rule is right") {
  using meshcast::testing::unet_pipeline;
  // 4 stages with a (0, 3) skip (the seed's c14): taking the later stage first (c14 before c12)
  // beats prior_first; optimal is proven.
  for (index_t m : {2, 4, 8}) {
    auto r = all_policies(unet_pipeline(4, m, {{0, 3}}), 30.0);  // proven in milliseconds (release)
    INFO("4 stages, m = ", m);
    CHECK(r["later_first"].makespan < r["prior_first"].makespan);
    CHECK(r["optimal"].proven_optimal);
    CHECK(r["list_scheduling"].makespan == r["optimal"].makespan);
  }
  // 6 stages with (0, 5) and (1, 4) skips (the seed's c16, c25): stage 1 is busy (c01, c12, c14),
  // and neither fixed rule is optimal: optimal is strictly better than both.
  for (index_t m : {2, 4}) {
    auto r = all_policies(unet_pipeline(6, m, {{0, 5}, {1, 4}}), 30.0);
    INFO("6 stages, m = ", m);
    CHECK(r["optimal"].proven_optimal);
    CHECK(r["optimal"].makespan < r["later_first"].makespan);
    CHECK(r["optimal"].makespan < r["prior_first"].makespan);
    CHECK(r["optimal"].makespan < r["rounds"].makespan);
    CHECK(r["list_scheduling"].makespan == r["optimal"].makespan);
  }
  // The pinned figures of one case each (F = 2, transfer 1, forward only, shared streams, m = 4).
  auto four = all_policies(unet_pipeline(4, 4, {{0, 3}}), 30.0);
  CHECK(four["prior_first"].makespan == 26);
  CHECK(four["later_first"].makespan == 24);
  CHECK(four["optimal"].makespan == 23);
  auto six = all_policies(unet_pipeline(6, 4, {{0, 5}, {1, 4}}), 30.0);
  CHECK(six["prior_first"].makespan == 38);
  CHECK(six["later_first"].makespan == 35);
  CHECK(six["optimal"].makespan == 32);
}

TEST_CASE("pipeline: rounds keeps its time limit on a dense phase, one transfer a round past it") {
  // Every one of the first n stages sends to every one of the last n: one phase of n^2 transfers,
  // whose colouring (alternating paths) took 18.7 s at n = 900 under a 0.1 s limit (found by review).
  description d;
  const index_t n = 120;
  d.stages.assign(static_cast<std::size_t>(2 * n), stage{1, 0});
  for (index_t i = 0; i < n; ++i)
    for (index_t j = n; j < 2 * n; ++j) d.edges.push_back({i, j, 1});
  const timeline coloured = order(d, rounds{}, {.time_limit_s = 60});
  const timeline in_order = order(d, rounds{}, {.time_limit_s = 0});  // expired at once: the fallback
  CHECK(coloured.makespan > 0);  // both valid lists: order simulates them (a deadlock throws)
  CHECK(std::isfinite(in_order.makespan));
  std::vector<std::pair<int, int>> ends;
  for (const edge& e : d.edges) ends.emplace_back(static_cast<int>(e.from), static_cast<int>(e.to));
  const meshcast::detail::deadline gone(0);
  const std::vector<int> c = meshcast::detail::edge_colouring(ends, static_cast<int>(2 * n), &gone);
  REQUIRE(c.size() == ends.size());
  for (std::size_t i = 0; i < c.size(); ++i) CHECK(c[i] == static_cast<int>(i));
  const std::vector<int> full = meshcast::detail::edge_colouring(ends, static_cast<int>(2 * n));
  CHECK(*std::max_element(full.begin(), full.end()) == n - 1);  // Koenig: as many colours as the degree
}

TEST_CASE("pipeline: the bubble fraction") {
  description d = meshcast::testing::chain_pipeline(2, 1, 2, 1);  // F0 [0,2], c [2,3], F0 [3,5]
  timeline t = order(d, prior_first{});
  CHECK(t.makespan == 5);
  CHECK(t.compute == 4);
  CHECK(t.bubble_fraction == doctest::Approx(1 - 4.0 / (2 * 5)));
  description zero = meshcast::testing::chain_pipeline(2, 1, 0, 0);
  CHECK(order(zero, rounds{}).bubble_fraction == 0);
  // Near the largest double, stages x makespan overflowed and the fraction read 1 (found by review).
  CHECK(bubble_fraction(4e307, 5, 1e308) == doctest::Approx(0.92));
  CHECK(bubble_fraction(4e307, 5, 1e308) < 1);
  CHECK(bubble_fraction(1, 0, 1) == 0);
}

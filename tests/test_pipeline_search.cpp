// The optimal policy against brute force: on tiny pipelines, every set of lists that keeps the
// compute order (each transfer anywhere after its producing compute on the sender and before its
// consuming compute on the receiver) is enumerated and simulated; optimal must find the best and
// prove it. The search's reductions are also checked against the search without them.
#include <doctest/doctest.h>

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include <meshcast/pipeline.hpp>

#include "support/pipeline_checker.hpp"
#include "support/random_pipelines.hpp"

using namespace meshcast;
using namespace meshcast::pipeline;

namespace {

/// Every ordering of one stage's entries that keeps its computes in order, each send after its
/// producing compute and each receive before its consuming compute.
std::vector<stage_list> stage_orders(const stage_list& entries) {
  // Sort to a canonical first permutation of indices, then walk all permutations.
  std::vector<std::size_t> idx(entries.size());
  for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  auto compute_pos = [&](const std::vector<std::size_t>& p, op_kind k, index_t mb) {
    for (std::size_t i = 0; i < p.size(); ++i)
      if (entries[p[i]].op == k && entries[p[i]].mb == mb) return i;
    return p.size();
  };
  std::vector<stage_list> out;
  do {
    bool ok = true;
    std::size_t last_compute = 0;
    bool seen_compute = false;
    for (std::size_t i = 0; i < idx.size() && ok; ++i) {
      const instruction& x = entries[idx[i]];
      if (x.is_compute()) {
        // computes keep their relative order (the entries list them in schedule order)
        if (seen_compute && idx[i] < last_compute) ok = false;
        last_compute = idx[i];
        seen_compute = true;
        continue;
      }
      const op_kind k = x.pass == pass_kind::forward ? op_kind::forward : op_kind::backward;
      const std::size_t c = compute_pos(idx, k, x.mb);
      if (x.op == op_kind::send ? c > i : c < i) ok = false;
    }
    if (!ok) continue;
    stage_list l;
    for (std::size_t i : idx) l.push_back(entries[i]);
    out.push_back(std::move(l));
  } while (std::next_permutation(idx.begin(), idx.end()));
  return out;
}

/// The best makespan over all valid deadlock-free lists (every combination of stage orders), or
/// -1 when there are too many combinations.
double brute_force(const description& d, std::size_t& combinations) {
  const graph g(d);
  lists base = prior_first{}.order(g).stages;  // the entries of every stage
  std::vector<std::vector<stage_list>> options;
  double product = 1;
  for (const stage_list& s : base) {
    options.push_back(stage_orders(s));
    product *= static_cast<double>(options.back().size());
  }
  combinations = 0;
  if (product > 200000) return -1;  // too many to enumerate here
  std::vector<std::size_t> pick(options.size(), 0);
  double best = std::numeric_limits<double>::infinity();
  combinations = 0;
  while (true) {
    lists l;
    for (std::size_t s = 0; s < options.size(); ++s) l.push_back(options[s][pick[s]]);
    ++combinations;
    simulation r = simulate(g, l);
    if (!r.deadlock) best = std::min(best, r.makespan);
    std::size_t s = 0;
    while (s < pick.size() && ++pick[s] == options[s].size()) pick[s++] = 0;
    if (s == pick.size()) break;
  }
  return best;
}

}  // namespace

TEST_CASE("pipeline: optimal agrees with brute force on tiny pipelines") {
  meshcast::testing::random_pipeline_source gen(99);
  int checked = 0, total_combinations = 0;
  const schedule_kind kinds[] = {schedule_kind::forward_only, schedule_kind::gpipe, schedule_kind::one_f_one_b,
                                 schedule_kind::eager_1f1b};
  for (int round = 0; round < 60 && checked < 40; ++round) {
    const schedule_kind k = kinds[round % 4];
    const stream_mode s = round % 8 < 4 ? stream_mode::shared : stream_mode::separate;
    const index_t n = gen.uniform(2, 3), m = k == schedule_kind::forward_only ? gen.uniform(1, 3) : gen.uniform(1, 2);
    description d = gen.dag(n, m, k, s, 0.5);
    // Keep the enumeration small: at most 8 entries on a stage.
    std::size_t widest = 0;
    for (const stage_list& l : prior_first{}.order(graph(d)).stages) widest = std::max(widest, l.size());
    if (widest > 8) continue;
    std::size_t combinations = 0;
    const double best = brute_force(d, combinations);
    if (best < 0) continue;
    policy_options o;
    o.time_limit_s = 60;  // a ceiling: the search ends once it has proven the optimum
    const timeline t = order(d, optimal{}, o);
    optimal plain;
    plain.reductions = false;
    const timeline u = order(d, plain, o);
    INFO("round ", round, ": ", n, " stages, ", m, " microbatches, ", d.edges.size(), " edges, ", to_string(k), ", ",
         to_string(s), ", ", combinations, " list sets");
    CHECK(t.proven_optimal);
    CHECK(u.proven_optimal);
    CHECK(t.makespan == best);
    CHECK(u.makespan == best);
    CHECK(meshcast::testing::check_pipeline_lists(d, t.stages, t.makespan) == "");
    ++checked;
    total_combinations += static_cast<int>(combinations);
  }
  CHECK(checked >= 30);
  MESSAGE("brute force: ", checked, " pipelines, ", total_combinations, " list sets simulated");
}

TEST_CASE("pipeline: the search's reductions never change the optimum") {
  // Small pipelines where the search without reductions still finishes: forced moves, commuting
  // appends and dominance must give the same proven optimum.
  meshcast::testing::random_pipeline_source gen(5);
  int compared = 0;
  for (int round = 0; round < 40; ++round) {
    const schedule_kind k = round % 2 ? schedule_kind::forward_only : schedule_kind::one_f_one_b;
    const stream_mode s = round % 4 < 2 ? stream_mode::shared : stream_mode::separate;
    description d = gen.dag(gen.uniform(2, 4), gen.uniform(1, 3), k, s, 0.4);
    policy_options o;
    o.time_limit_s = 2;
    optimal plain;
    plain.reductions = false;
    const timeline a = order(d, optimal{}, o), b = order(d, plain, o);
    if (!a.proven_optimal || !b.proven_optimal) continue;
    INFO("round ", round);
    CHECK(a.makespan == b.makespan);
    ++compared;
  }
  CHECK(compared >= 25);
}

TEST_CASE("pipeline: optimal proves small pipelines and is never worse than the other policies") {
  using meshcast::testing::chain_pipeline;
  using meshcast::testing::unet_pipeline;
  const description cases[] = {
      chain_pipeline(4, 4),
      chain_pipeline(8, 8),
      chain_pipeline(4, 4, 2, 1, schedule_kind::one_f_one_b),
      unet_pipeline(4, 4, {{0, 3}}, 2, 1, schedule_kind::one_f_one_b),
      unet_pipeline(6, 4, {{0, 5}, {1, 4}}, 2, 1, schedule_kind::forward_only, stream_mode::separate),
      unet_pipeline(6, 4, {{0, 5}, {1, 4}}, 2, 1, schedule_kind::gpipe, stream_mode::separate),
  };
  for (const description& d : cases) {
    policy_options o;
    o.time_limit_s = 60;  // a ceiling: the search ends once it has proven the optimum
    const timeline best = order(d, optimal{}, o);
    INFO(d.stage_count(), " stages, ", d.microbatches, " microbatches, ", to_string(d.schedule), ", ", to_string(d.streams));
    CHECK(best.proven_optimal);
    for (const char* name : {"prior_first", "later_first", "rounds", "list_scheduling"})
      CHECK(best.makespan <= visit_policy(name, [&](auto p) { return order(d, p, o).makespan; }));
  }
}

// The search pruned within an absolute 1e-9 whenever the makespan was below 1: with every time in
// units of 1e-10 it "proved" 8.6e-9 where 8.3e-9 is reachable. Times come in any unit.
TEST_CASE("pipeline: optimal's proof does not depend on the unit of time") {
  const description d = from_json(std::string_view(
      R"({"stages": [{"forward": 2, "backward": 4}, {"forward": 3, "backward": 1}, {"forward": 3, "backward": 4},
                     {"forward": 2, "backward": 2}, {"forward": 3, "backward": 1}],
          "microbatches": 4, "schedule": "1f1b", "streams": "shared",
          "edges": [{"from": 0, "to": 1, "time": 2}, {"from": 0, "to": 4, "time": 3}, {"from": 1, "to": 2, "time": 3},
                    {"from": 2, "to": 3, "time": 2}, {"from": 3, "to": 4, "time": 2}]})"));
  description scaled = d;
  for (auto& s : scaled.stages) s.forward *= 1e-10, s.backward *= 1e-10;
  for (auto& e : scaled.edges) {
    e.time *= 1e-10;
    if (e.backward_time) *e.backward_time *= 1e-10;
  }
  policy_options o;
  o.time_limit_s = 60;  // proves within a second; the limit only guards a regression
  const timeline a = order(d, optimal{}, o);
  const timeline b = order(scaled, optimal{}, o);
  REQUIRE(a.proven_optimal);
  CHECK(a.makespan == doctest::Approx(83));
  CHECK(b.makespan == doctest::Approx(a.makespan * 1e-10).epsilon(1e-9));
  CHECK(b.lower_bound <= b.makespan);
}

// Pipeline ordering policies: by name, a user's own appended, and their time limits.
#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <string>
#include <string_view>

#include <meshcast/pipeline.hpp>

#include "support/pipeline_checker.hpp"
#include "support/random_pipelines.hpp"
#include "support/thrown.hpp"

using namespace meshcast;
using namespace meshcast::pipeline;
using meshcast::testing::thrown;
using meshcast::testing::check_pipeline_lists;

namespace {
/// A policy a user adds: reverse order of prior_first's phases is not valid in general, so this
/// one takes rounds' lists and marks nothing.
struct user_policy {
  static constexpr std::string_view name = "user_rounds";
  policy_result order(const graph& g, const policy_options& o) const { return rounds{}.order(g, o); }
};
static_assert(policy<user_policy>);
static_assert(policy<optimal> && policy<list_scheduling> && policy<prior_first> && policy<rounds>);
}  // namespace

TEST_CASE("pipeline: policies by name; a user's policy appended to the list") {
  CHECK(policy_names() == "list_scheduling, prior_first, later_first, rounds or optimal");
  CHECK(thrown([] { visit_policy("fastest", [](auto) {}); }) ==
        "unknown policy 'fastest' (expected list_scheduling, prior_first, later_first, rounds or optimal)");
  CHECK(thrown([] { visit_policy(std::string("a\nb"), [](auto) {}); }).find("unknown policy 'a\\x0ab'") == 0);
  using mine = with_policies<builtin_policies, user_policy>;
  CHECK(policy_names<mine>() == "list_scheduling, prior_first, later_first, rounds, optimal or user_rounds");
  CHECK(!has_policy("user_rounds"));
  CHECK(has_policy<mine>("user_rounds"));
  description d = meshcast::testing::chain_pipeline(5, 4);
  timeline t = visit_policy<mine>("user_rounds", [&](auto p) { return order(d, p); });
  CHECK(t.policy == "user_rounds");
  CHECK(t.makespan == order(d, rounds{}).makespan);
  std::string seen;
  visit_policy<mine>("optimal", [&](auto p) { seen = std::string(decltype(p)::name); });
  CHECK(seen == "optimal");
}

TEST_CASE("pipeline: a time limit that is not a number in [0, 1e6] s is an error naming it, not a clock overflow") {
  // Before, a limit of 1e300 s or infinity was converted to the clock's integer ticks unchecked.
  meshcast::testing::random_pipeline_source gen(5);
  const description d = gen.dag(4, 4, schedule_kind::one_f_one_b, stream_mode::shared);
  const double inf = std::numeric_limits<double>::infinity();
  for (double bad : {std::nan(""), inf, -inf, -1.0, 1e6 + 1, 1e300}) {
    CAPTURE(bad);
    policy_options o;
    o.time_limit_s = bad;
    for (const std::string name : {"list_scheduling", "optimal"}) {
      CAPTURE(name);
      CHECK(thrown([&] { visit_policy(name, [&](auto p) { return order(d, p, o); }); })
                .find("policy_options::time_limit_s") != std::string::npos);
    }
    if (bad < 0) continue;  // a negative search limit means "none"
    optimal p;
    p.search_limit_s = bad;
    CHECK(thrown([&] { (void)order(d, p, policy_options{}); }).find("optimal::search_limit_s") != std::string::npos);
  }
  for (double good : {0.0, 1e6}) {  // the ends of the range are taken
    policy_options o;
    o.time_limit_s = good;
    CHECK(thrown([&] { (void)order(d, list_scheduling{}, o); }) == "");
  }
}

TEST_CASE("pipeline: searches honour their time limits, first construction included") {
  // 32 stages, a dense DAG, 64 microbatches, 1f1b: a large search space.
  meshcast::testing::random_pipeline_source gen(3);
  description d = gen.dag(32, 64, schedule_kind::one_f_one_b, stream_mode::shared, 0.2);
  // What every policy run does besides its search: the first (linear) construction, its
  // simulation, the lower bound; measured here so that the check holds on slow builds too.
  const auto b0 = std::chrono::steady_clock::now();
  const timeline base = order(d, prior_first{});
  const double fixed = std::chrono::duration<double>(std::chrono::steady_clock::now() - b0).count();
  for (double limit : {0.05, 0.3}) {
    policy_options o;
    o.time_limit_s = limit;
    for (const std::string name : {"list_scheduling", "optimal"}) {
      const auto begin = std::chrono::steady_clock::now();
      timeline t = visit_policy(name, [&](auto p) { return order(d, p, o); });
      const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
      INFO(name, " limit ", limit, " took ", took, " (one linear construction: ", fixed, ")");
      CHECK(took < limit + 3 * fixed + 0.25);
      CHECK(t.makespan <= base.makespan);
      CHECK(!t.proven_optimal);
      CHECK(check_pipeline_lists(d, t.stages, t.makespan) == "");
    }
  }
}

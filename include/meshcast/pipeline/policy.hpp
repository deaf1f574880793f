// The ordering-policy concept: the schedule fixes each stage's compute order; a policy decides
// where each stage's sends and receives go in its list.
#pragma once

#include <concepts>
#include <cstdint>
#include <string_view>

#include "graph.hpp"
#include "instructions.hpp"

namespace meshcast::pipeline {

struct policy_options {
  double time_limit_s = 1.0;  ///< for the searching policies; every search stops by then
  std::uint64_t seed = 1;     ///< for the randomised ones
};

/// What a policy hands back: every stage's list (times need not be set: `order` simulates them).
struct policy_result {
  lists stages;
  bool proven_optimal = false;  ///< no deadlock-free lists with this compute order finish sooner
  double bound = 0;             ///< a lower bound on the makespan the policy proved (0 if none)
};

/// A policy `P` has a `name` and `order(g, options)`, which must return complete lists of the
/// pipeline `g` describes that keep the schedule's compute order and cannot deadlock (lists
/// projected from one order of all operations that respects the dependencies qualify: see
/// `graph::project`). `order` must return by `options.time_limit_s`.
template <class P>
concept policy = requires(const P& p, const graph& g, const policy_options& o) {
  { P::name } -> std::convertible_to<std::string_view>;
  { p.order(g, o) } -> std::same_as<policy_result>;
};

}  // namespace meshcast::pipeline

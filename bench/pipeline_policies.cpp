// Makespan per ordering policy on chains, U-Nets and random DAG pipelines of 4 to 32 stages, with
// the policies' solve times. Prints a Markdown table (docs/pipeline.md).
//
// usage: meshcast-bench-pipeline [--time-limit-ms N] [--quick]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include <meshcast/pipeline.hpp>

#include "flags.hpp"

using namespace meshcast;
using namespace meshcast::pipeline;

namespace {

description base(index_t m, schedule_kind k, stream_mode s) {
  description d;
  d.microbatches = m;
  d.schedule = k;
  d.streams = s;
  return d;
}

/// Chain: every stage computes F = 2 (B = 4) per microbatch, every transfer takes 1.
description chain(index_t n, index_t m, schedule_kind k, stream_mode s) {
  description d = base(m, k, s);
  for (index_t i = 0; i < n; ++i) d.stages.push_back({2, 4});
  for (index_t i = 0; i + 1 < n; ++i) d.edges.push_back({i, i + 1, 1});
  return d;
}

/// U-Net: a chain plus a skip from every encoder stage i to its decoder stage n - 1 - i (the
/// seed's 6-stage case has (0, 5) and (1, 4)); skips carry 1, chain transfers 1.
description unet(index_t n, index_t m, schedule_kind k, stream_mode s) {
  description d = chain(n, m, k, s);
  for (index_t i = 0; i + 1 < n - 1 - i; ++i)
    if (n - 1 - i != i + 1) d.edges.push_back({i, n - 1 - i, 1});
  return d;
}

/// Random DAG: compute 1..4 (backward twice), chain edges always, each other pair with
/// probability 3 / n, transfer times 0.5..2.
description random_dag(index_t n, index_t m, schedule_kind k, stream_mode s, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> compute(1, 4), transfer(1, 4);
  std::uniform_real_distribution<double> u(0, 1);
  description d = base(m, k, s);
  for (index_t i = 0; i < n; ++i) {
    const double f = compute(rng);
    d.stages.push_back({f, 2 * f});
  }
  for (index_t a = 0; a < n; ++a)
    for (index_t b = a + 1; b < n; ++b)
      if (b == a + 1 || u(rng) < 3.0 / static_cast<double>(n)) d.edges.push_back({a, b, 0.5 * transfer(rng)});
  return d;
}

struct row {
  std::string family;
  description d;
};

}  // namespace

constexpr const char* usage =
    "usage: meshcast-bench-pipeline [--time-limit-ms N] [--quick]\n";

int main(int argc, char** argv) {
  double limit_ms = 2000;
  bool quick = false;
  try {
    const meshcast_bench::flags f(argc, argv, {"--time-limit-ms"}, {"--quick"});
    if (f.help()) {
      std::fputs(usage, stdout);
      return 0;
    }
    limit_ms = f.real("--time-limit-ms", limit_ms, 0, meshcast::max_time_limit_s * 1000);
    quick = f.has("--quick");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "meshcast-bench-pipeline: %s\n%s", e.what(), usage);
    return 2;
  }
  const auto fo = schedule_kind::forward_only, ofob = schedule_kind::one_f_one_b, eager = schedule_kind::eager_1f1b;
  const auto shared = stream_mode::shared, separate = stream_mode::separate;
  std::vector<row> rows;
  const std::vector<index_t> sizes = quick ? std::vector<index_t>{4, 8} : std::vector<index_t>{4, 8, 16, 32};
  for (index_t n : sizes) rows.push_back({"chain", chain(n, 2 * n, fo, shared)});
  for (index_t n : sizes) rows.push_back({"chain", chain(n, 8, ofob, shared)});
  for (index_t n : sizes) rows.push_back({"chain", chain(n, 8, ofob, separate)});
  for (index_t n : quick ? std::vector<index_t>{4, 6} : std::vector<index_t>{4, 6, 8, 16, 32}) {
    rows.push_back({"U-Net", unet(n, 8, fo, shared)});
    rows.push_back({"U-Net", unet(n, 8, ofob, shared)});
    rows.push_back({"U-Net", unet(n, 8, eager, separate)});
  }
  std::uint64_t seed = 1;
  for (index_t n : sizes) {
    rows.push_back({"random DAG", random_dag(n, 8, fo, shared, seed++)});
    rows.push_back({"random DAG", random_dag(n, 8, ofob, shared, seed++)});
    rows.push_back({"random DAG", random_dag(n, 8, ofob, separate, seed++)});
  }

  policy_options o;
  o.time_limit_s = limit_ms / 1000;
  std::printf("| pipeline | stages | mb | schedule | streams | edges | prior_first | later_first | rounds | "
              "list_scheduling | optimal | lower bound | list_scheduling ms | optimal ms |\n");
  std::printf("|---|---:|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  int wins = 0, ties = 0, at_optimal = 0, proven = 0;
  double sum_ratio = 0;
  for (const row& r : rows) {
    const description& d = r.d;
    const timeline pf = order(d, prior_first{}, o), lf = order(d, later_first{}, o), ro = order(d, rounds{}, o);
    const timeline ls = order(d, list_scheduling{}, o), op = order(d, optimal{}, o);
    std::printf("| %s | %lld | %lld | %s | %s | %zu | %.6g | %.6g | %.6g | %.6g | %.6g%s | %.6g | %.1f | %.0f |\n",
                r.family.c_str(), static_cast<long long>(d.stage_count()), static_cast<long long>(d.microbatches),
                std::string(to_string(d.schedule)).c_str(), std::string(to_string(d.streams)).c_str(), d.edges.size(),
                pf.makespan, lf.makespan, ro.makespan, ls.makespan, op.makespan, op.proven_optimal ? " *" : "",
                op.lower_bound, ls.solve_ms, op.solve_ms);
    std::fflush(stdout);
    const double fixed = std::min({pf.makespan, lf.makespan, ro.makespan});
    wins += ls.makespan < fixed;
    ties += ls.makespan == fixed;
    at_optimal += ls.makespan == op.makespan;
    proven += op.proven_optimal;
    sum_ratio += ls.makespan / fixed;
  }
  std::printf("\n%zu pipelines: list_scheduling beats the best fixed rule on %d, ties on %d, loses on %d "
              "(mean makespan ratio to the best fixed rule %.3f); equals optimal's makespan on %d; optimal "
              "proven on %d.\n",
              rows.size(), wins, ties, static_cast<int>(rows.size()) - wins - ties, sum_ratio / static_cast<double>(rows.size()),
              at_optimal, proven);
  return 0;
}

// The solver suite: makespan / lower bound and solve time of every solver and strategy on Alpa's
// resharding cases, the 1-to-m broadcast sweep, the seed's 2-host -> 3-host case and synthetic
// 64- and 256-host cases. Prints Markdown: a summary table, then every run.
//
//   meshcast-solver-suite [--time-limit-ms N] [--quick]
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <meshcast/meshcast.hpp>
#if MESHCAST_HAS_CBC
#include <meshcast/solver/ilp.hpp>
#endif

#include "flags.hpp"

using namespace meshcast;

namespace {

struct bench_case {
  std::string name;
  std::string shape, src_mesh, src_spec, dst_mesh, dst_spec;
  index_t devices_per_host;
};

struct run {
  std::string solver;
  bool split;
  double makespan, bound, ms;
  bool ours;
};

std::vector<bench_case> cases(bool quick) {
  const std::string t = "1024x1024x512";
  std::vector<bench_case> c = {
      {"alpa 1: (2,4)->(2,4) S0,R,R->S0,R,R", t, "2x4", "S0,R,R", "2x4", "S0,R,R", 4},
      {"alpa 2: (2,4)->(2,4) R,R,R->S0,R,R", t, "2x4", "R,R,R", "2x4", "S0,R,R", 4},
      {"alpa 3: (2,4)->(2,4) R,S0,R->S0,R,R", t, "2x4", "R,S0,R", "2x4", "S0,R,R", 4},
      {"alpa 4: (2,4)->(2,4) R,S01,R->S01,R,R", t, "2x4", "R,S01,R", "2x4", "S01,R,R", 4},
      {"alpa 5: (2,4)->(2,4) S1,R,R->S0,R,R", t, "2x4", "S1,R,R", "2x4", "S0,R,R", 4},
      {"alpa 6: (2,4)->(2,4) R,S0,R->R,R,S0", t, "2x4", "R,S0,R", "2x4", "R,R,S0", 4},
      {"alpa 7: (2,4)->(3,4) S0,R,R->S0,R,R (3072x1024x170)", "3072x1024x170", "2x4", "S0,R,R", "3x4", "S0,R,R", 4},
      {"alpa 8: (1,4)->(2,4) S1,R,R->R,R,R", t, "1x4", "S1,R,R", "2x4", "R,R,R", 4},
  };
  for (auto [a, b] : std::vector<std::pair<int, int>>{{1, 2}, {1, 3}, {1, 4}, {2, 2}, {3, 2}, {4, 2}})
    c.push_back({"1-to-m: 1 GiB to (" + std::to_string(a) + "," + std::to_string(b) + ") R", "268435456", "1", "R",
                 std::to_string(a) + "x" + std::to_string(b), "R", b});
  c.push_back({"seed: 2 hosts -> 3 hosts, (2,4) R,S1,R -> (3,4) S0,R,R", t, "2x4", "R,S1,R", "3x4", "S0,R,R", 4});
  if (!quick) {
    c.push_back({"synthetic: 64 hosts (64,4) S1,R -> (64,4) S0,R", "16384x4096", "64x4", "S1,R", "64x4", "S0,R", 4});
    c.push_back({"synthetic: 256 hosts (256,4) S1,R -> (256,4) S0,R", "16384x4096", "256x4", "S1,R", "256x4", "S0,R", 4});
    c.push_back({"synthetic: 64 hosts (64,4) S0,S1 -> (64,4) S1,S0", "16384x4096", "64x4", "S0,S1", "64x4", "S1,S0", 4});
  }
  return c;
}

}  // namespace

constexpr const char* usage =
    "usage: meshcast-solver-suite [--time-limit-ms N] [--quick]\n";

int main(int argc, char** argv) {
  solver_options options;
  bool quick = false;
  try {
    const meshcast_bench::flags f(argc, argv, {"--time-limit-ms"}, {"--quick"});
    if (f.help()) {
      std::fputs(usage, stdout);
      return 0;
    }
    if (f.has("--time-limit-ms")) options.time_limit_s = f.real("--time-limit-ms", 0, 0, max_time_limit_s * 1000) / 1000;
    quick = f.has("--quick");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "meshcast-solver-suite: %s\n%s", e.what(), usage);
    return 2;
  }
  std::vector<std::string> summary, detail;
  char line[512];
  for (const bench_case& c : cases(quick)) {
    dynamic_shape shape = parse_shape(c.shape);
    plan p = make_plan(dynamic_layout(parse_mesh(c.src_mesh), dynamic_spec(c.src_spec), shape),
                       dynamic_layout(parse_mesh(c.dst_mesh), dynamic_spec(c.dst_spec), shape));
    network net = network::alpa_testbed(
        default_hosts(p.device_count, static_cast<index_t>(p.src_devices.size()), c.devices_per_host));
    double best_ours_any = 1e300, least_bound = 1e300;
    std::string cells;
    for (const char* strategy_name : {"send_recv", "send_recv_allgather", "broadcast"}) {
      std::vector<run> runs;
      visit_strategy(strategy_name, [&](auto st) {
        for (bool split : {false, true}) {
          instance in = make_instance(p, net, st, split);
          auto record = [&](auto solver, bool ours) {
            if (solver.supports(in)) return;
            schedule s = solve(in, solver, options);
            runs.push_back({s.solver, split, s.makespan_s, s.lower_bound_s, s.solve_ms, ours});
          };
          if (!split) {
            record(naive{}, false);
            record(alpa_least_loaded{}, false);
            record(alpa_greedy{}, false);
            record(alpa_dfs{}, false);
          }
          record(greedy{}, true);
          record(branch_and_bound{}, true);
          record(open_shop{}, true);
#if MESHCAST_HAS_CBC
          std::size_t size = 0;
          for (const unit& u : in.units) size += u.options.size() * u.options[0].ops.size();
          if (size <= 400) record(ilp{}, true);
#endif
        }
      });
      double best_alpa = 1e300, best_ours = 1e300, bound = 0;
      for (const run& r : runs) {
        (r.ours ? best_ours : best_alpa) = std::min(r.ours ? best_ours : best_alpa, r.makespan);
        bound = std::max(bound, r.bound);  // the split instance's bound is the weaker one
      }
      double split_bound = 1e300;
      for (const run& r : runs) split_bound = std::min(split_bound, r.bound);
      for (const run& r : runs) {
        std::snprintf(line, sizeof line, "| %s | %s | %s%s | %.4f | %.4f | %.3f | %.1f |", c.name.c_str(), strategy_name,
                      r.solver.c_str(), r.split ? " +split" : "", r.makespan, r.bound, r.makespan / r.bound, r.ms);
        detail.push_back(line);
      }
      std::snprintf(line, sizeof line, " %.3f / %.3f |", best_alpa / split_bound, best_ours / split_bound);
      cells += line;
      best_ours_any = std::min(best_ours_any, best_ours);
      least_bound = std::min(least_bound, split_bound);
    }
    std::snprintf(line, sizeof line, "| %s | %.4f |%s %.3f |", c.name.c_str(), least_bound, cells.c_str(),
                  best_ours_any / least_bound);
    summary.push_back(line);
    std::fprintf(stderr, "done: %s\n", c.name.c_str());
  }
  std::printf("Makespan / lower bound (ordered model, Alpa testbed: 4 GPUs and one 10 Gbit/s NIC per host). "
              "Each strategy cell: best of Alpa's algorithms / best of ours; the bound is the strategy's bound "
              "with replica splitting. Search time limit %.0f ms.\n\n",
              options.time_limit_s * 1000);
  std::printf("| case | best bound (s) | send_recv | send_recv_allgather | broadcast | ours, best strategy |\n");
  std::printf("|---|---:|---:|---:|---:|---:|\n");
  for (const auto& s : summary) std::printf("%s\n", s.c_str());
  std::printf("\n| case | strategy | solver | makespan (s) | bound (s) | ratio | solve (ms) |\n");
  std::printf("|---|---|---|---:|---:|---:|---:|\n");
  for (const auto& d : detail) std::printf("%s\n", d.c_str());
}

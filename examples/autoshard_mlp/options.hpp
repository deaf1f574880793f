// meshcast-autoshard-mlp-mpi (../autoshard_mlp_mpi.cpp), part: the command line.
// Included once, by that program's one translation unit: its names stay in an unnamed namespace.
#pragma once

#include "basics.hpp"

namespace {

// ---- options ---------------------------------------------------------------------------------

struct options {
  std::string mesh_text;
  index_t batch = 32, hidden = 512, ffn = 2048;
  std::string activation = "gelu", x_spec = "R,R", y_spec = "R,R";
  std::string graph_path, specs_path, solver;
  double time_limit_s = 60, memory_mib = std::numeric_limits<double>::infinity();
  std::vector<double> gbps, latency_us;
  double gflops = 0;
  int repeat = 5, blas_threads = 1;
  double tolerance = 1e-4;
  std::vector<std::pair<std::string, std::string>> expect;  // tensor, specs
  bool corrupt = false;
};

void usage(std::FILE* out) {
  std::fprintf(out,
               "usage: mpiexec -n N meshcast-autoshard-mlp-mpi [options]\n"
               "  --mesh AxB               logical mesh, as many devices as ranks (default: N, 1-D)\n"
               "  --batch B --hidden H --ffn F   the MLP x[B,H] @ w1[H,F] -> act -> @ w2[F,H] -> y\n"
               "                           (default 32, 512, 2048)\n"
               "  --activation NAME        relu, gelu, silu, tanh, sigmoid, identity, ... (default gelu)\n"
               "  --x-spec S               x's fixed spec, or 'free' (default R,R)\n"
               "  --y-spec S               spec y must be delivered in, or 'any' (default R,R)\n"
               "  --graph GRAPH.json       run this forward graph instead (2-D matmul, elementwise unary,\n"
               "                           same-shape add/sub/mul/maximum/minimum)\n"
               "  --specs SPECS.json       run this assignment {\"specs\": {tensor: spec}} instead of solving\n"
               "  --solver NAME            %s (default %s)\n"
               "  --time-limit S           solver time limit (default 60, at most 999940)\n"
               "  --memory-mib X           memory limit per device for the solver (default: none)\n"
               "  --axis-gbps X[,Y]        axis bandwidths, Gbit/s (default: measured by all-reduces)\n"
               "  --axis-latency-us X[,Y]  axis latencies, microseconds (default: measured)\n"
               "  --device-gflops X        device speed, GFLOP/s (default: measured by a timed sgemm)\n"
               "  --repeat N               timed runs after a warm-up (default 5)\n"
               "  --blas-threads N         threads of the BLAS per rank, where it can be set (default 1)\n"
               "  --tolerance T            largest error / largest magnitude accepted (default 1e-4)\n"
               "  --expect-spec T=S1[|S2]  fail (exit 1) unless tensor T gets one of these specs (repeatable)\n"
               "  --corrupt                add 1 to the first element of the last rank's tile of the first\n"
               "                           parameter (shows that the check catches a wrong result)\n"
               "Exit status: 0 when every output matches the single-process result, 1 when not (or an\n"
               "--expect-spec fails), 2 on bad input.\n",
               as::sharding_solver_names,
#if MESHCAST_HAS_CBC
               "ilp"
#else
               "dp, greedy where dp does not apply"
#endif
  );
}

// A count is decimal digits only (docs/limits.md), as in the other tools: "1e3", "+5", "64.0" are
// refused (they were read as reals and taken when whole).
index_t parse_count(const std::string& flag, const std::string& text, index_t low, index_t high) {
  const std::optional<std::int64_t> v = !text.empty() && text[0] == '-' ? std::nullopt : meshcast_cli::whole_integer(text);
  if (!v || *v < low || *v > high)
    throw error(flag + " '" + meshcast::detail::printable(text) + "' must be a whole number in " + std::to_string(low) + ".." + std::to_string(high));
  return static_cast<index_t>(*v);
}

options parse_options(int argc, char** argv, bool& help) {
  options o;
  std::string mlp_flag;  // the last flag that describes the built-in MLP, which --graph replaces
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw error("flag " + meshcast::detail::printable(arg) + " needs a value");
      return argv[++i];
    };
    constexpr index_t big = index_t{1} << 20;
    if (arg == "--batch" || arg == "--hidden" || arg == "--ffn" || arg == "--activation" || arg == "--x-spec" || arg == "--y-spec")
      mlp_flag = arg;
    if (arg == "--help" || arg == "-h") help = true;
    else if (arg == "--mesh") o.mesh_text = meshcast_cli::parse_name(arg, next());
    else if (arg == "--batch") o.batch = parse_count(arg, next(), 1, big);
    else if (arg == "--hidden") o.hidden = parse_count(arg, next(), 1, big);
    else if (arg == "--ffn") o.ffn = parse_count(arg, next(), 1, big);
    else if (arg == "--activation") o.activation = meshcast_cli::parse_name(arg, next());
    else if (arg == "--x-spec") o.x_spec = meshcast_cli::parse_name(arg, next());
    else if (arg == "--y-spec") o.y_spec = meshcast_cli::parse_name(arg, next());
    else if (arg == "--graph") o.graph_path = meshcast_cli::parse_name(arg, next());
    else if (arg == "--specs") o.specs_path = meshcast_cli::parse_name(arg, next());
    else if (arg == "--solver") o.solver = meshcast_cli::parse_name(arg, next());
    else if (arg == "--time-limit") {
      o.time_limit_s = parse_number(arg, next());
      // The ranks wait for rank 0's solve 60 s longer than its limit, within the longest wait.
      if (!(o.time_limit_s > 0 && o.time_limit_s <= mc::max_time_limit_s - 60))
        throw error("--time-limit must be positive and at most " + std::to_string(static_cast<long long>(mc::max_time_limit_s - 60)) + " s");
    } else if (arg == "--memory-mib") {
      o.memory_mib = parse_number(arg, next());
      if (!(o.memory_mib > 0)) throw error("--memory-mib must be positive");
    } else if (arg == "--axis-gbps") o.gbps = parse_list(arg, next());
    else if (arg == "--axis-latency-us") o.latency_us = parse_list(arg, next());
    else if (arg == "--device-gflops") {
      o.gflops = parse_number(arg, next());
      if (!(o.gflops > 0)) throw error("--device-gflops must be positive");
    } else if (arg == "--repeat") o.repeat = static_cast<int>(parse_count(arg, next(), 1, 1000));
    else if (arg == "--blas-threads") o.blas_threads = static_cast<int>(parse_count(arg, next(), 1, 256));
    else if (arg == "--tolerance") {
      o.tolerance = parse_number(arg, next());
      if (!(o.tolerance > 0)) throw error("--tolerance must be positive");
    } else if (arg == "--corrupt") {
      o.corrupt = true;
    } else if (arg == "--expect-spec") {
      const std::string v = next();
      const auto eq = v.find('=');
      if (eq == std::string::npos || eq == 0) throw error("--expect-spec '" + meshcast::detail::printable(v) + "' is not TENSOR=SPEC");
      o.expect.emplace_back(v.substr(0, eq), v.substr(eq + 1));
    } else throw error("unknown argument '" + meshcast::detail::printable(arg) + "' (see --help)");
  }
  if (!o.specs_path.empty() && !o.solver.empty()) throw error("--specs and --solver exclude each other");
  if (!o.graph_path.empty() && !mlp_flag.empty())
    throw error(mlp_flag + " describes the built-in MLP, which --graph replaces: give one or the other");
  return o;
}

}  // namespace

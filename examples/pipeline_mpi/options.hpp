// meshcast-pipeline-mpi's flags: what they hold, the usage text, and parsing them.
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include <meshcast/mpi.hpp>
#include <meshcast/pipeline.hpp>

#include "cli/plan_options.hpp"
#include "cli/schedule_options.hpp"
#include "compute.hpp"

namespace pipeline_mpi {
using namespace meshcast;
namespace pl = meshcast::pipeline;

struct flags {
  std::string file;
  std::vector<std::string> policies;
  index_t ranks_per_stage = 1;
  double time_unit_s = 0;  // 0: the file's time_unit_s
  compute_kind compute = compute_kind::spin;
  int repeat = 3;
  bool json = false;
  pl::policy_options policy;
  double search_limit_s = -1;
  double timeout_s = 60;
  double tie = 0.02;
  bool size_by_measured = false;
  // network overrides (the file's "network", else network_model's defaults, then these)
  std::optional<double> nic_gbps, nic_efficiency, intra_gbps, latency_us;
  std::optional<int> nics_per_host;
  std::optional<index_t> devices_per_host;
  std::optional<std::string> strategy;
  std::optional<bool> split_replicas;
  std::optional<execution> mode;
  bool help = false;
};

inline void usage(std::FILE* out) {
  std::fprintf(out,
               "usage: mpiexec -n <stages x K> meshcast-pipeline-mpi FILE.json [flags]\n"
               "  --policy A[,B...]      policies to run (%s; default %s)\n"
               "  --ranks-per-stage K    ranks per stage mesh (default 1): stage s = ranks [sK, (s+1)K)\n"
               "  --time-unit-ms U       one time unit of the description = U ms (default: the file's time_unit_s)\n"
               "  --compute KIND         spin (default), sleep or matmul\n"
               "  --repeat N             runs per policy, interleaved; the best is reported (default 3)\n"
               "  --tie F                simulated makespans within a fraction F are ties in the ranking (default 0.02)\n"
               "  --size-by model|measured  size each activation so that the model predicts its edge's time\n"
               "                         (default), or resize it until it takes that time here, alone\n"
               "  --json                 print one JSON object on rank 0's stdout instead of the report\n"
               "  --time-limit-ms N, --search-limit-ms N, --seed N   as meshcast-pipeline\n"
               "  --timeout-s S          give up on a peer after S seconds without progress (default 60)\n"
               "network model (the file's \"network\", else its defaults; these override):\n"
               "  --nic-gbps G --nic-efficiency F --intra-gbps G --latency-us L --nics-per-host N\n"
               "  --devices-per-host D (default K: each stage on its own host) --strategy S --mode ordered|concurrent\n"
               "  --split-replicas / --no-split-replicas\n"
               "JSON: {\"file\", \"stages\", \"ranks_per_stage\", \"microbatches\", \"schedule\", \"streams\", \"time_unit_s\",\n"
               "  \"clock_error_s\", \"compute\", \"size_by\", [\"matmul_product_s\",] \"network\": {...}, \"transfers\": [{\"edge\",\n"
               "  \"pass\", \"from\", \"to\", \"shape\", \"bytes\", \"tensor_from_file\", \"tensors\", \"stated_s\", \"predicted_s\", \"alone_s\"}], \"policies\": [{\"policy\", \"simulated_s\", \"measured_s\",\n"
               "  \"runs_s\", \"resimulated_s\", \"measured_over_simulated\", \"measured_over_resimulated\",\n"
               "  \"compute_over_stated\", \"transfers_over_stated\", \"proven_optimal\", \"stages\":\n"
               "  [[{\"op\", \"mb\", \"edge\", \"pass\", \"peer\", \"sim_start\", \"sim_end\", \"start\", \"end\"}]]}],\n"
               "  \"ranking\": {\"simulated\", \"measured\", \"pairs\", \"agreeing_pairs\", \"ties\", \"agree\"}}; times in seconds;\n"
               "  a ratio over a time of 0 (nothing stated or simulated) is null (\"-\" in the text report).\n",
               pl::policy_names().c_str(), std::string(pl::default_policy::name).c_str());
}

inline std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  std::size_t a = 0;
  while (true) {
    const std::size_t b = s.find(',', a);
    out.push_back(s.substr(a, b == std::string::npos ? std::string::npos : b - a));
    if (b == std::string::npos) break;
    a = b + 1;
  }
  return out;
}

inline flags parse_flags(int argc, char** argv) {
  flags f;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw error("flag " + detail::printable(arg) + " needs a value");
      return argv[++i];
    };
    auto real = [&](double lo, double hi) { return cli::parse_real(arg, next(), lo, hi); };
    if (arg == "--policy") {
      for (const std::string& p : split_commas(next())) {
        if (!pl::has_policy(p)) pl::visit_policy(p, [](auto) {});  // throws naming the policies
        f.policies.push_back(p);
      }
    } else if (arg == "--ranks-per-stage") f.ranks_per_stage = cli::parse_count(arg, next(), 1, 4096);
    else if (arg == "--time-unit-ms") f.time_unit_s = real(1e-6, 1e6) / 1000;
    else if (arg == "--compute") {
      const std::string c = next();
      if (c == "spin") f.compute = compute_kind::spin;
      else if (c == "sleep") f.compute = compute_kind::sleep;
      else if (c == "matmul") f.compute = compute_kind::matmul;
      else throw error("--compute '" + detail::printable(c) + "' is not spin, sleep or matmul");
    } else if (arg == "--repeat") f.repeat = static_cast<int>(cli::parse_count(arg, next(), 1, 1000));
    else if (arg == "--tie") f.tie = real(0, 1);
    else if (arg == "--size-by") {
      const std::string v = next();
      if (v != "model" && v != "measured") throw error("--size-by '" + detail::printable(v) + "' is not model or measured");
      f.size_by_measured = v == "measured";
    }
    else if (arg == "--json") f.json = true;
    else if (arg == "--time-limit-ms") f.policy.time_limit_s = real(0, 1e9) / 1000;
    else if (arg == "--search-limit-ms") f.search_limit_s = real(0, 1e9) / 1000;
    else if (arg == "--seed") f.policy.seed = cli::parse_u64(arg, next());
    else if (arg == "--timeout-s") f.timeout_s = real(0.001, max_time_limit_s);
    else if (arg == "--nic-gbps") f.nic_gbps = real(8e-9, 8e6);  // the network model's range
    else if (arg == "--nic-efficiency") f.nic_efficiency = real(1e-3, 1);  // the network model's range
    else if (arg == "--intra-gbps") f.intra_gbps = real(8e-9, 8e6);
    else if (arg == "--latency-us") f.latency_us = real(0, 3.6e9);
    else if (arg == "--nics-per-host") f.nics_per_host = static_cast<int>(cli::parse_count(arg, next(), 1, 64));
    else if (arg == "--devices-per-host") f.devices_per_host = cli::parse_count(arg, next(), 1, pl::max_edge_mesh_devices);
    else if (arg == "--strategy") {
      f.strategy = cli::parse_name(arg, next());
      visit_strategy(*f.strategy, [](auto) {});  // throws naming the strategies
    } else if (arg == "--mode") f.mode = meshcast_cli::parse_mode(arg, next());
    else if (arg == "--split-replicas") f.split_replicas = true;
    else if (arg == "--no-split-replicas") f.split_replicas = false;
    else if (arg == "--help" || arg == "-h") f.help = true;
    else if (!arg.empty() && arg[0] == '-') throw error("unknown flag '" + detail::printable(arg) + "'");
    else if (f.file.empty()) f.file = arg;
    else throw error("one pipeline file only ('" + detail::printable(f.file) + "' and '" + detail::printable(arg) + "' given)");
  }
  if (f.policies.empty()) f.policies.push_back(std::string(pl::default_policy::name));
  if (!f.help && f.file.empty()) throw error("missing the pipeline file (see --help)");
  return f;
}

}  // namespace pipeline_mpi

// What rank 0 prints: the rankings' agreement and, per transfer and policy, the stated, predicted,
// simulated, measured and re-simulated times; as text or (--json) one JSON object.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <meshcast/pipeline.hpp>

#include "cli/json_writer.hpp"
#include "clock.hpp"
#include "compute.hpp"
#include "options.hpp"
#include "report.hpp"
#include "transfers.hpp"

namespace pipeline_mpi {
using namespace meshcast;
namespace pl = meshcast::pipeline;

// A ratio as the text report prints it: "-" where it is no figure (ratio_or_nan).
inline std::string ratio_text(double x) {
  if (!std::isfinite(x)) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", x);
  return buf;
}

/// The report on rank 0's stdout, after resimulate().
inline void print_report(const flags& f, const pl::description& d, index_t k, double unit, const clock_estimate& clock_est,
                         const matmul_state& mm, const pl::network_model& net, const std::vector<transfer_spec>& specs,
                         const std::vector<double>& alone, const std::vector<policy_report>& reports) {
  // The lists number the description's edges; output names the file's (specs: one per edge and pass).
  auto file_edge = [&](index_t e) { return specs.at(static_cast<std::size_t>(e * d.passes())).file_edge; };
  std::vector<double> sim_s, meas_s;
  for (const policy_report& r : reports) {
    sim_s.push_back(r.simulated.makespan * unit);
    meas_s.push_back(r.runs[r.best]);
  }
  // Pairs the simulator orders (beyond the tie tolerance) and whether the measurements agree.
  int pairs = 0, agreeing = 0, ties = 0;
  for (std::size_t a = 0; a < reports.size(); ++a)
    for (std::size_t b = a + 1; b < reports.size(); ++b) {
      const double lo = std::min(sim_s[a], sim_s[b]), hi = std::max(sim_s[a], sim_s[b]);
      if (hi <= lo * (1 + f.tie)) {
        ++ties;
        continue;
      }
      ++pairs;
      if ((sim_s[a] < sim_s[b]) == (meas_s[a] < meas_s[b])) ++agreeing;
    }
  if (f.json) {
    cli::json_writer j;
    j.begin_object();
    j.key("file").value(f.file);
    j.key("stages").value(static_cast<long long>(d.stage_count()));
    j.key("ranks_per_stage").value(static_cast<long long>(k));
    j.key("microbatches").value(static_cast<long long>(d.microbatches));
    j.key("schedule").value(std::string(pl::to_string(d.schedule)));
    j.key("streams").value(std::string(pl::to_string(d.streams)));
    j.key("time_unit_s").exact(unit);
    j.key("clock_error_s").exact(clock_est.error_s);
    j.key("compute").value(to_string(f.compute));
    j.key("size_by").value(f.size_by_measured ? "measured" : "model");
    if (f.compute == compute_kind::matmul) j.key("matmul_product_s").exact(mm.product_s);
    j.key("network").begin_object();
    j.key("nic_gbps").exact(net.nic_gbps).key("nic_efficiency").exact(net.nic_efficiency);
    j.key("intra_gbps").exact(net.intra_gbps).key("latency_us").exact(net.latency_us);
    j.key("nics_per_host").value(static_cast<long long>(net.nics_per_host));
    j.key("devices_per_host").value(static_cast<long long>(net.devices_per_host));
    j.key("strategy").value(net.strategy).key("split_replicas").boolean(net.split_replicas);
    j.key("mode").value(std::string(meshcast::to_string(net.mode)));
    j.end_object();
    j.key("transfers").begin_array();
    for (std::size_t i = 0; i < specs.size(); ++i) {
      const transfer_spec& t = specs[i];
      j.begin_object().key("edge").value(static_cast<long long>(t.file_edge));
      j.key("pass").value(std::string(pl::to_string(t.pass)));
      j.key("from").value(static_cast<long long>(t.sender)).key("to").value(static_cast<long long>(t.receiver));
      j.key("shape").value(extents_text(t.tensor.shape)).key("bytes").value(static_cast<long long>(t.bytes));
      j.key("tensor_from_file").boolean(t.from_file);
      j.key("tensors").value(static_cast<long long>(1 + t.rest.size()));
      j.key("stated_s").exact(t.stated_s).key("predicted_s").exact(t.predicted_s).key("alone_s").exact(alone[i]);
      j.end_object();
    }
    j.end_array();
    j.key("policies").begin_array();
    for (std::size_t i = 0; i < reports.size(); ++i) {
      const policy_report& r = reports[i];
      j.begin_object().key("policy").value(r.name);
      j.key("simulated_s").exact(sim_s[i]).key("measured_s").exact(meas_s[i]);
      j.key("runs_s").begin_array();
      for (double x : r.runs) j.exact(x);
      j.end_array();
      j.key("resimulated_s").exact(r.resimulated);
      j.key("measured_over_simulated").exact(ratio_or_nan(meas_s[i], sim_s[i]));
      j.key("measured_over_resimulated").exact(ratio_or_nan(meas_s[i], r.resimulated));
      j.key("compute_over_stated").exact(r.compute_ratio).key("transfers_over_stated").exact(r.transfer_ratio);
      j.key("proven_optimal").boolean(r.simulated.proven_optimal);
      j.key("stages").begin_array();
      for (std::size_t s = 0; s < r.measured_stages.size(); ++s) {
        j.begin_array();
        for (std::size_t q = 0; q < r.measured_stages[s].size(); ++q) {
          const pl::instruction& x = r.measured_stages[s][q];
          const pl::instruction& y = r.simulated.stages[s][q];
          j.begin_object().key("op").value(std::string(pl::to_string(x.op)));
          if (x.is_transfer()) j.key("edge").value(static_cast<long long>(file_edge(x.edge)));
          j.key("mb").value(static_cast<long long>(x.mb));
          if (x.is_transfer()) {
            j.key("pass").value(std::string(pl::to_string(x.pass)));
            j.key("peer").value(static_cast<long long>(x.peer));
          }
          j.key("sim_start").exact(y.start * unit).key("sim_end").exact(y.end * unit);
          j.key("start").exact(x.start).key("end").exact(x.end);
          j.end_object();
        }
        j.end_array();
      }
      j.end_array();
      j.end_object();
    }
    j.end_array();
    j.key("ranking").begin_object();
    j.key("simulated").value(ranking_text(reports, sim_s, f.tie));
    j.key("measured").value(ranking_text(reports, meas_s, f.tie));
    j.key("pairs").value(static_cast<long long>(pairs)).key("agreeing_pairs").value(static_cast<long long>(agreeing));
    j.key("ties").value(static_cast<long long>(ties)).key("agree").boolean(agreeing == pairs);
    j.end_object();
    j.end_object();
    std::printf("%s\n", j.str().c_str());
  } else {
    std::printf("meshcast-pipeline-mpi: %s: %lld stages x %lld ranks, %lld microbatches, %s, %s streams, %zu edges; "
                "time unit %.6g ms, compute %s\n",
                f.file.c_str(), static_cast<long long>(d.stage_count()), static_cast<long long>(k),
                static_cast<long long>(d.microbatches), std::string(pl::to_string(d.schedule)).c_str(),
                std::string(pl::to_string(d.streams)).c_str(), d.edges.size(), unit * 1e3, to_string(f.compute));
    std::printf("  network model: NIC %.6g Gbit/s x %.4g payload, latency %.6g us, intra-host %.6g Gbit/s, %lld devices per "
                "host, %s, %s mode\n",
                net.nic_gbps, net.nic_efficiency, net.latency_us, net.intra_gbps, static_cast<long long>(net.devices_per_host),
                net.strategy.c_str(), std::string(meshcast::to_string(net.mode)).c_str());
    for (std::size_t i = 0; i < specs.size(); ++i) {
      const transfer_spec& t = specs[i];
      std::printf("  edges[%lld] %s (stage %lld -> %lld): %s x %lld B = %lld B%s; stated %.3f ms, predicted %.3f ms, "
                  "alone %.3f ms\n",
                  static_cast<long long>(t.file_edge), std::string(pl::to_string(t.pass)).c_str(),
                  static_cast<long long>(t.sender), static_cast<long long>(t.receiver), extents_text(t.tensor.shape).c_str(),
                  static_cast<long long>(t.tensor.element_bytes), static_cast<long long>(t.bytes),
                  t.from_file ? " (the file's tensor)" : "", t.stated_s * 1e3, t.predicted_s * 1e3, alone[i] * 1e3);
    }
    for (std::size_t i = 0; i < reports.size(); ++i) {
      const policy_report& r = reports[i];
      std::string runs;
      for (double x : r.runs) {
        char buf[32];
        std::snprintf(buf, sizeof buf, " %.4f", x);
        runs += buf;
      }
      std::printf("  %-16s simulated %.4f s (%.6g units), measured %.4f s (x%s; runs%s), re-simulated with the "
                  "measured durations %.4f s (measured x%s; computes x%s, transfers x%s of the stated time)\n",
                  r.name.c_str(), sim_s[i], r.simulated.makespan, meas_s[i], ratio_text(ratio_or_nan(meas_s[i], sim_s[i])).c_str(),
                  runs.c_str(), r.resimulated, ratio_text(ratio_or_nan(meas_s[i], r.resimulated)).c_str(),
                  ratio_text(r.compute_ratio).c_str(), ratio_text(r.transfer_ratio).c_str());
    }
    std::printf("  ranking, simulated: %s\n", ranking_text(reports, sim_s, f.tie).c_str());
    std::printf("  ranking, measured:  %s\n", ranking_text(reports, meas_s, f.tie).c_str());
    std::printf("  the measurements order %d of the %d pairs the simulator orders as it does (%d ties within %.3g%%): %s\n",
                agreeing, pairs, ties, f.tie * 100, agreeing == pairs ? "the rankings agree" : "the rankings DISAGREE");
  }
  std::fflush(stdout);
}

}  // namespace pipeline_mpi

// Printing a schedule: the "schedule" JSON object, a Chrome trace, and the human summary.
#pragma once

#include <cstdio>
#include <string>

#include <meshcast/meshcast.hpp>

#include "json_writer.hpp"

namespace meshcast::cli {

/// The "schedule" object. Given the network, an op that holds some NIC direction for less than the
/// whole op (a chain, whose sender is free once it has sent) lists `holds`: one
/// {"host", "dir", "start_s", "end_s"} per NIC direction it uses, which replaces the op's whole
/// interval for those directions.
inline void write_schedule(json_writer& j, const schedule& s, const network* net = nullptr) {
  j.begin_object();
  j.key("solver").value(s.solver);
  j.key("strategy").value(s.strategy);
  j.key("mode").value(std::string(to_string(s.mode)));
  j.key("makespan_s").value(s.makespan_s);
  j.key("lower_bound_s").value(s.lower_bound_s);
  j.key("physical_bound_s").value(s.physical_bound_s);
  j.key("solve_ms").value(s.solve_ms);
  j.key("ops").begin_array();
  for (std::size_t i = 0; i < s.transfers.size(); ++i) {
    const transfer& o = s.transfers[i];
    const transfer_model& m = s.model[i];
    j.begin_object();
    j.key("kind").value(std::string(to_string(o.kind)));
    j.key("task").value(static_cast<long long>(o.task));
    j.key("region").begin_array();
    for (int d = 0; d < o.region.rank; ++d)
      j.begin_array().value(static_cast<long long>(o.region[d].lo)).value(static_cast<long long>(o.region[d].hi)).end_array();
    j.end_array();
    j.key("bytes").value(static_cast<long long>(o.bytes));
    j.key("sender").value(static_cast<long long>(o.sender));
    j.key("receivers").int_array(o.receivers);
    j.key("waits_for").int_array(o.waits_for);
    j.key("egress_hosts").int_array(m.egress_hosts);
    j.key("ingress_hosts").int_array(m.ingress_hosts);
    j.key("start_s").value(m.start);
    j.key("end_s").value(m.end);
    // When the sender's NIC egress and send lane are free again (a chain's: once it has sent).
    double sender_free = m.holds_briefly() ? m.start : m.end;
    for (std::size_t k = 0; k < m.resources.size() && m.holds_briefly(); ++k)
      if (m.holders[k] == o.sender) sender_free = std::max(sender_free, m.start + m.held_until(k));
    j.key("sender_free_s").value(sender_free);
    if (o.piece_bytes > 0) j.key("piece_bytes").value(static_cast<long long>(o.piece_bytes));
    if (net && m.holds_briefly()) {
      const int ports = net->port_count();
      j.key("holds").begin_array();
      for (std::size_t k = 0; k < m.resources.size(); ++k) {
        const int r = m.resources[k];
        if (r >= 2 * ports) continue;  // a lane, not a NIC direction
        j.begin_object();
        j.key("host").value(static_cast<long long>(net->port_host(r % ports)));
        j.key("dir").value(r < ports ? "egress" : "ingress");
        j.key("start_s").value(m.start + m.held_from(k));
        j.key("end_s").value(std::min(m.end, m.start + m.held_until(k)));
        j.end_object();
      }
      j.end_array();
    }
    j.end_object();
  }
  j.end_array();
  j.end_object();
}

/// Chrome trace-event JSON: one process per host, one track per NIC direction (and one for
/// intra-host copies), one complete event per transfer on every track it occupies.
inline void write_trace(const std::string& path, const schedule& s, const network& net, const resource_space& rs) {
  json_writer j;
  j.begin_object().key("displayTimeUnit").value("ms").key("traceEvents").begin_array();
  auto meta = [&](const char* what, index_t pid, long long tid, const std::string& name) {
    j.begin_object().key("ph").value("M").key("name").value(what).key("pid").value(static_cast<long long>(pid));
    j.key("tid").value(tid).key("args").begin_object().key("name").value(name).end_object().end_object();
  };
  for (index_t h = 0; h < net.host_count(); ++h) {
    meta("process_name", h, 0, "host " + std::to_string(h));
    for (int n = 0; n < net.nic_count(h); ++n) {
      meta("thread_name", h, 2 * n, "NIC " + std::to_string(n) + " egress");
      meta("thread_name", h, 2 * n + 1, "NIC " + std::to_string(n) + " ingress");
    }
    meta("thread_name", h, 1000, "intra-host");
  }
  auto event = [&](const transfer& o, const transfer_model& m, index_t pid, long long tid) {
    j.begin_object().key("ph").value("X").key("cat").value(std::string(to_string(o.kind)));
    j.key("name").value("task " + std::to_string(o.task) + " " + std::to_string(o.sender) + "->" +
                        (o.receivers.size() == 1 ? std::to_string(o.receivers[0]) : std::to_string(o.receivers.size()) + " devices"));
    j.key("pid").value(static_cast<long long>(pid)).key("tid").value(tid);
    j.key("ts").value(m.start * 1e6).key("dur").value((m.end - m.start) * 1e6);
    j.key("args").begin_object().key("bytes").value(static_cast<long long>(o.bytes)).key("region").value(o.region.to_string());
    j.end_object().end_object();
  };
  for (std::size_t i = 0; i < s.transfers.size(); ++i) {
    const transfer_model& m = s.model[i];
    bool nic = false;
    for (int r : m.resources) {
      if (!rs.is_port(r)) continue;
      nic = true;
      int port = rs.port_of(r);
      index_t h = net.port_host(port);
      event(s.transfers[i], m, h, 2LL * (port - net.first_port(h)) + (rs.is_egress(r) ? 0 : 1));
    }
    if (!nic) event(s.transfers[i], m, net.host_of(s.transfers[i].sender), 1000);
  }
  j.end_array().end_object();
  write_file(path, j.str() + '\n', "trace file");
}

inline void print_schedule_summary(std::FILE* out, const schedule& s) {
  std::fprintf(out, "  schedule: solver %s, strategy %s, %s execution, %zu transfers\n", s.solver.c_str(), s.strategy.c_str(),
               std::string(to_string(s.mode)).c_str(), s.transfers.size());
  std::fprintf(out, "    makespan %.6g s (%s model), its lower bound %.6g s, gap %.2f%%%s\n", s.makespan_s,
               std::string(to_string(s.mode)).c_str(), s.lower_bound_s, 100 * s.gap(), s.proven_optimal ? ", proven optimal" : "");
  std::fprintf(out, "    physical bound of the network %.6g s (makespan / physical bound %.3f)\n", s.physical_bound_s,
               s.physical_bound_s > 0 ? s.makespan_s / s.physical_bound_s : 0.0);
  std::fprintf(out, "    solve time %.3f ms\n", s.solve_ms);
}

}  // namespace meshcast::cli

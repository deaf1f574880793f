// Printing a plan: the JSON object of meshcast-plan --json, and the human summary.
#pragma once

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include <meshcast/meshcast.hpp>

#include "json_writer.hpp"

namespace meshcast::cli {

/// Writes the plan's fields (shape ... tasks) into an object the caller has opened.
inline void write_plan_fields(json_writer& j, const plan& p, const std::vector<index_t>& host_of) {
  j.key("shape").int_array(std::span(p.src.shape.values.data(), static_cast<std::size_t>(p.src.shape.rank)));
  j.key("element_bytes").value(static_cast<long long>(p.element_bytes));
  auto side = [&](const char* name, const layout_value& l, const std::vector<index_t>& devices) {
    j.key(name).begin_object();
    j.key("mesh").int_array(std::span(l.mesh.values.data(), static_cast<std::size_t>(l.mesh.rank)));
    j.key("spec").value(l.spec.to_string());
    j.key("devices").int_array(devices);
    j.end_object();
  };
  side("src", p.src, p.src_devices);
  side("dst", p.dst, p.dst_devices);
  j.key("host_of").int_array(host_of);
  j.key("tasks").begin_array();
  for (const auto& t : p.tasks) {
    j.begin_object();
    j.key("region").begin_array();
    for (int d = 0; d < t.region.rank; ++d) {
      j.begin_array().value(static_cast<long long>(t.region[d].lo)).value(static_cast<long long>(t.region[d].hi));
      j.end_array();
    }
    j.end_array();
    j.key("bytes").value(static_cast<long long>(t.bytes));
    j.key("senders").int_array(p.senders(t));
    j.key("receivers").int_array(p.receivers(t));
    j.end_object();
  }
  j.end_array();
}

inline std::string human_bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) b /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, u ? "%.1f %s" : "%.0f %s", b, units[u]);
  return buf;
}

/// Per host: bytes its receivers need that no device on the host holds (each region counted once
/// per host, whatever the strategy), and bytes that only this host's devices can send.
struct host_traffic {
  std::vector<index_t> must_receive, sole_sender;
};

inline host_traffic traffic_by_host(const plan& p, const std::vector<index_t>& host_of) {
  index_t hosts = host_of.empty() ? 0 : *std::max_element(host_of.begin(), host_of.end()) + 1;
  host_traffic t{std::vector<index_t>(hosts, 0), std::vector<index_t>(hosts, 0)};
  std::vector<index_t> seen(hosts, -1), holds(hosts, -1);
  for (std::size_t i = 0; i < p.tasks.size(); ++i) {
    auto senders = p.senders(i);
    for (index_t s : senders) holds[host_of[s]] = static_cast<index_t>(i);
    for (index_t r : p.receivers(i)) {
      index_t h = host_of[r];
      if (holds[h] == static_cast<index_t>(i) || seen[h] == static_cast<index_t>(i)) continue;
      seen[h] = static_cast<index_t>(i);
      t.must_receive[h] += p.tasks[i].bytes;
    }
    index_t h0 = host_of[senders.front()];
    bool one_host = std::all_of(senders.begin(), senders.end(), [&](index_t s) { return host_of[s] == h0; });
    bool someone_remote = false;
    for (index_t r : p.receivers(i)) someone_remote |= host_of[r] != h0;
    if (one_host && someone_remote) t.sole_sender[h0] += p.tasks[i].bytes;
  }
  return t;
}

inline void print_summary(std::FILE* out, const plan& p, const std::vector<index_t>& host_of) {
  std::fprintf(out, "meshcast plan: tensor %s, %lld-byte elements (%s)\n", p.src.shape.to_string().c_str(),
               static_cast<long long>(p.element_bytes),
               human_bytes(static_cast<double>(p.src.whole().volume() * p.element_bytes)).c_str());
  auto side = [&](const char* name, const layout_value& l, const std::vector<index_t>& ids) {
    // A run of consecutive ids reads "4..7"; any other list is written out (the first 16 of it).
    bool run = true;
    for (std::size_t i = 1; i < ids.size(); ++i) run &= ids[i] == ids[0] + static_cast<index_t>(i);
    std::string shown = run ? std::to_string(ids.front()) + ".." + std::to_string(ids.back()) : "";
    for (std::size_t i = 0; !run && i < ids.size() && i < 16; ++i) shown += (i ? "," : "") + std::to_string(ids[i]);
    if (!run && ids.size() > 16) shown += ",... (" + std::to_string(ids.size()) + " devices)";
    std::fprintf(out, "  %-11s mesh %-7s spec %-8s devices %s\n", name, l.mesh.to_string().c_str(),
                 l.spec.to_string().c_str(), shown.c_str());
  };
  side("source", p.src, p.src_devices);
  side("destination", p.dst, p.dst_devices);
  // Summed as a double: a plan whose every task fits may deliver more than 2^63 bytes in all
  // (plan::total_bytes refuses that; the summary stopped half-printed).
  double delivered = 0;
  for (const send_task& t : p.tasks) delivered += static_cast<double>(t.bytes) * static_cast<double>(p.receivers(t).size());
  std::fprintf(out, "  %zu tasks delivering %s (summed over receivers)\n", p.tasks.size(), human_bytes(delivered).c_str());
  if (!p.tasks.empty()) {
    auto it = std::max_element(p.tasks.begin(), p.tasks.end(),
                               [](const send_task& a, const send_task& b) { return a.bytes < b.bytes; });
    std::fprintf(out, "  largest task: %s region %s, %zu sender(s), %zu receiver(s)\n",
                 human_bytes(static_cast<double>(it->bytes)).c_str(), it->region.to_string().c_str(),
                 p.senders(*it).size(), p.receivers(*it).size());
  }
  host_traffic t = traffic_by_host(p, host_of);
  std::fprintf(out, "  per host: in = bytes it needs and does not hold; out = bytes only it can send\n");
  std::fprintf(out, "  %6s %14s %14s\n", "host", "in (B)", "out (B)");
  for (std::size_t h = 0; h < t.must_receive.size(); ++h)
    std::fprintf(out, "  %6zu %14lld %14lld\n", h, static_cast<long long>(t.must_receive[h]),
                 static_cast<long long>(t.sole_sender[h]));
}

}  // namespace meshcast::cli

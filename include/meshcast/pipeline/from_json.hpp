// The pipeline description as JSON (a contract other programs use):
//
//   {"stages": [{"forward": 2, "backward": 4}, ...],     required; "backward" required by training schedules
//    "microbatches": 8,                                   required, 1 .. 100000
//    "schedule": "forward_only" | "gpipe" | "1f1b" | "eager_1f1b",   default "forward_only"
//    "streams": "shared" | "separate",                    default "shared"
//    "edges": [{"from": 0, "to": 1, "time": 1}, ...],    default []; stages numbered from 0, from < to
//    "network": {...},                                    needed by tensor edges
//    "time_unit_s": 1}                                    seconds per time unit, default 1
//
// An edge gives "time" (and optionally "backward_time", else the same) or a tensor: "shape"
// ([1024, 512] or "1024x512"), "element_bytes" (default 4), "src_mesh" and "dst_mesh" ([2, 4] or
// "2x4"), "src_spec" and "dst_spec" ("S0,R"); its time is then the predicted time of the reshard
// (`reshard_time_s`, edge_time.hpp) divided by "time_unit_s", backward the reshard back (unless
// "backward_time" is given). "network": "nic_gbps" (default 10), "intra_gbps" (800), "latency_us"
// (10), "nics_per_host" (1), "devices_per_host" (default: the source mesh's last axis),
// "strategy" ("send_recv", "send_recv_allgather", "broadcast" or "auto"; default "send_recv"),
// "split_replicas" (false), "nic_efficiency" (the payload fraction of the line rate, [0.001, 1],
// default 1), "mode" ("ordered" or "concurrent": the execution mode whose model predicts, default
// "ordered"). Members not named here are ignored (listed in `parsed_pipeline::ignored`). Every
// error is a `meshcast::error` naming the member ("edges[2].to is 7, outside [0, 3]").
// `parse_pipeline` also keeps the tensors and the network (a program that executes the pipeline
// reshards those tensors).
//
// Several tensor edges may join the same two stages (activations plus a residual or a mask):
// they become one edge of the description whose time is the predicted time of the tensors sent as
// one batch (one schedule, `reshard_time_s` of the batch); they must share the stages' meshes and
// give no "backward_time". A "time" edge stays the only edge of its pair of stages.
#pragma once

#include <limits>
#include <map>
#include <new>
#include <utility>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "../core/detail/json.hpp"
#include "../core/detail/json_members.hpp"
#include "../core/detail/number_text.hpp"
#include "../core/detail/read_document.hpp"
#include "description.hpp"
#include "edge_time.hpp"

namespace meshcast::pipeline {

namespace detail {
// A tensor edge whose prediction ran out of memory: "std::bad_alloc" alone named no input.
inline constexpr const char* out_of_memory =
    "predicting its time needs more memory than this process may take (its plan and schedule grow with its meshes)";
inline std::string extents_text(const json::value& v, const std::string& what) {
  if (v.is_string()) return v.as_string(what);
  const json::array& a = v.as_array(what);
  if (a.empty()) throw error(what + " must not be empty");
  std::string out;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (i) out += 'x';
    out += std::to_string(a[i].as_int(what + "[" + std::to_string(i) + "]", 0, std::numeric_limits<std::int32_t>::max()));
  }
  return out;
}
inline double time_of(const json::value& v, const std::string& what) {
  const double t = v.as_double(what);
  check_time(t, what);
  return t;
}
}  // namespace detail

/// A pipeline file as read: the description, and what the description reduces to times (each
/// edge's tensor, if it gave one, and the file's network, if it has one).
struct parsed_pipeline {
  description d;
  /// Per edge of `d`: the tensors it sends as one batch, in file order (none: a "time" edge).
  std::vector<std::vector<tensor_edge>> tensors;
  /// Per edge of `d`: the indices of the file's edges it stands for (several for a batch).
  std::vector<std::vector<std::size_t>> file_edges;
  std::optional<network_model> network;             ///< the file's "network", when it has one
  /// Members the file gives that are none of the above ("edgez", "stages[1].fwd"): ignored, as
  /// the format says; listed so that a program can warn about a misspelt one.
  std::vector<std::string> ignored;

  /// The index in the file's `edges` that names edge `e` of `d` in output: its first file edge
  /// (a batch is named by the first of its tensors; e itself where the file was not kept).
  std::size_t file_edge(std::size_t e) const {
    return e < file_edges.size() && !file_edges[e].empty() ? file_edges[e].front() : e;
  }
};

namespace detail {
// The members of a valid pipeline document that no part of it reads.
inline std::vector<std::string> ignored_members(const json::value& doc) {
  std::vector<std::string> out;
  json::unknown_members(doc, {"stages", "microbatches", "schedule", "streams", "edges", "network", "time_unit_s"}, "", out);
  const json::array& stages = doc.at("stages", "the pipeline").as_array("stages");
  for (std::size_t i = 0; i < stages.size(); ++i)
    json::unknown_members(stages[i], {"forward", "backward"}, "stages[" + std::to_string(i) + "]", out);
  if (const json::value* edges = doc.find("edges")) {
    const json::array& es = edges->as_array("edges");
    for (std::size_t i = 0; i < es.size(); ++i)
      json::unknown_members(es[i], {"from", "to", "time", "backward_time", "shape", "element_bytes", "src_mesh", "dst_mesh",
                                    "src_spec", "dst_spec"},
                            "edges[" + std::to_string(i) + "]", out);
  }
  if (const json::value* net = doc.find("network"))
    json::unknown_members(*net, {"nic_gbps", "intra_gbps", "latency_us", "nics_per_host", "devices_per_host", "strategy",
                                 "split_replicas", "nic_efficiency", "mode"},
                          "network", out);
  return out;
}
}  // namespace detail

/// The file a parsed JSON document gives; validated.
inline parsed_pipeline parse_pipeline(const json::value& doc) {
  doc.as_object("the pipeline");
  parsed_pipeline out;
  description& d = out.d;
  const json::array& stages = doc.at("stages", "the pipeline").as_array("stages");
  if (stages.empty()) throw error("stages must list at least one stage");
  if (static_cast<index_t>(stages.size()) > max_stages)
    throw error("stages lists " + std::to_string(stages.size()) + " stages, more than the limit of " +
                std::to_string(max_stages));
  d.microbatches = doc.at("microbatches", "the pipeline").as_int("microbatches", 1, max_microbatches);
  if (const json::value* s = doc.find("schedule")) d.schedule = parse_schedule_kind(s->as_string("schedule"));
  if (const json::value* s = doc.find("streams")) d.streams = parse_stream_mode(s->as_string("streams"));
  const index_t n = static_cast<index_t>(stages.size());
  for (index_t i = 0; i < n; ++i) {
    const std::string at = "stages[" + std::to_string(i) + "]";
    stages[i].as_object(at);
    stage s;
    s.forward = detail::time_of(stages[i].at("forward", at), at + ".forward");
    if (d.training()) s.backward = detail::time_of(stages[i].at("backward", at + " (schedule " + std::string(to_string(d.schedule)) + ")"), at + ".backward");
    else if (const json::value* b = stages[i].find("backward")) s.backward = detail::time_of(*b, at + ".backward");
    d.stages.push_back(s);
  }
  double unit = 1;
  if (const json::value* u = doc.find("time_unit_s")) {
    unit = u->as_double("time_unit_s");
    if (!(unit > 0)) throw error("time_unit_s is " + meshcast::detail::number(unit) + ", must be a positive number");
    d.time_unit_s = unit;
  }
  const json::value* net_json = doc.find("network");
  network_model net;
  bool net_read = false;
  auto read_network = [&] {
    if (net_read) return;
    net_read = true;
    if (!net_json) throw error("an edge gives a tensor, so the pipeline needs a \"network\"");
    net_json->as_object("network");
    // The network model's own ranges (1 byte/s to 1e15 bytes/s, latency up to 3600 s), checked
    // here so that the error names the member rather than a host's egress bandwidth.
    auto in_range = [&](const char* key, double& out, double low, double high) {
      if (const json::value* v = net_json->find(key)) {
        out = v->as_double(std::string("network.") + key);
        if (low > 0 ? !(out > 0) : !(out >= 0))
          throw error(std::string("network.") + key + " is " + meshcast::detail::number(out) + ", must be " +
                      (low > 0 ? "positive" : ">= 0"));
        if (!(out >= low && out <= high))
          throw error(std::string("network.") + key + " is " + meshcast::detail::number(out) + ", must be in [" +
                      meshcast::detail::number(low) + ", " + meshcast::detail::number(high) + "]");
      }
    };
    constexpr double gbps_per_bps = 8e-9;
    in_range("nic_gbps", net.nic_gbps, network::min_bandwidth_bps * gbps_per_bps, network::max_bandwidth_bps * gbps_per_bps);
    in_range("intra_gbps", net.intra_gbps, network::min_bandwidth_bps * gbps_per_bps, network::max_bandwidth_bps * gbps_per_bps);
    in_range("latency_us", net.latency_us, 0, network::max_latency_s * 1e6);
    if (const json::value* v = net_json->find("nics_per_host"))
      net.nics_per_host = static_cast<int>(v->as_int("network.nics_per_host", 1, 64));
    if (const json::value* v = net_json->find("devices_per_host"))
      net.devices_per_host = v->as_int("network.devices_per_host", 1, max_edge_mesh_devices);
    if (const json::value* v = net_json->find("strategy")) {
      net.strategy = v->as_string("network.strategy");
      visit_strategy(net.strategy, [](auto) {});  // throws naming an unknown strategy
    }
    if (const json::value* v = net_json->find("split_replicas")) net.split_replicas = v->as_bool("network.split_replicas");
    if (const json::value* v = net_json->find("nic_efficiency")) {
      net.nic_efficiency = v->as_double("network.nic_efficiency");
      if (!(net.nic_efficiency >= meshcast::network::min_payload_fraction && net.nic_efficiency <= 1))
        throw error("network.nic_efficiency is " + meshcast::detail::number(net.nic_efficiency) + ", must be in [0.001, 1]");
    }
    if (const json::value* v = net_json->find("mode")) {
      try {
        net.mode = parse_execution(v->as_string("network.mode"));
      } catch (const error& e) {
        throw error(std::string("network.mode: ") + e.what());
      }
    }
  };
  if (const json::value* edges = doc.find("edges")) {
    const json::array& es = edges->as_array("edges");
    d.edges.reserve(es.size());
    std::map<std::pair<index_t, index_t>, std::size_t> edge_of_pair;  // -> index in d.edges
    std::vector<bool> backward_given;                                  // per d.edges: the file gave it
    std::vector<std::size_t> batched;  // d.edges that became batches of tensors: predicted once, below
    for (std::size_t i = 0; i < es.size(); ++i) {
      const std::string at = "edges[" + std::to_string(i) + "]";
      const json::value& e = es[i];
      e.as_object(at);
      edge x;
      x.from = e.at("from", at).as_int(at + ".from", 0, n - 1);
      x.to = e.at("to", at).as_int(at + ".to", 0, n - 1);
      if (x.from >= x.to)
        throw error(at + ".to is " + std::to_string(x.to) + " but must be greater than .from (" + std::to_string(x.from) +
                    "): data flows from earlier stages to later ones");
      const json::value* time = e.find("time");
      const json::value* shape = e.find("shape");
      if (time && shape) throw error(at + " gives both \"time\" and a tensor (\"shape\"): give one of them");
      if (const json::value* b = e.find("backward_time")) x.backward_time = detail::time_of(*b, at + ".backward_time");
      const auto seen = edge_of_pair.find({x.from, x.to});
      if (seen != edge_of_pair.end() && (time || shape) && (time || out.tensors[seen->second].empty() || x.backward_time ||
                                         backward_given[seen->second]))
        throw error(at + " repeats edges[" + std::to_string(out.file_edges[seen->second][0]) + "] (" + std::to_string(x.from) +
                    " -> " + std::to_string(x.to) + "): give one edge per pair of stages, or tensor edges without " +
                    "\"backward_time\", which go as one batch");
      if (time) {
        x.time = detail::time_of(*time, at + ".time");
      } else if (shape) {
        read_network();
        tensor_edge t;
        try {
          t.shape = parse_shape(detail::extents_text(*shape, at + ".shape"));
          if (const json::value* b = e.find("element_bytes")) t.element_bytes = b->as_int(at + ".element_bytes", 1, 1024);
          t.src_mesh = parse_mesh(detail::extents_text(e.at("src_mesh", at), at + ".src_mesh"));
          t.dst_mesh = parse_mesh(detail::extents_text(e.at("dst_mesh", at), at + ".dst_mesh"));
          t.src_spec = dynamic_spec(e.at("src_spec", at).as_string(at + ".src_spec"));
          t.dst_spec = dynamic_spec(e.at("dst_spec", at).as_string(at + ".dst_spec"));
          if (seen != edge_of_pair.end()) {  // checked alone now; the whole batch is predicted once, below
            std::vector<tensor_edge> batch = out.tensors[seen->second];
            batch.push_back(t);
            detail::batch_member_plan(batch, batch.size() - 1, false);
          } else {
            x.time = reshard_time_s(t, net) / unit;
            if (d.training() && !x.backward_time) x.backward_time = reshard_time_s(t, net, true) / unit;
          }
        } catch (const error& err) {
          const std::string m = err.what();
          if (m.rfind(at, 0) == 0) throw;
          throw error(at + ": " + m);
        } catch (const std::bad_alloc&) {
          throw error(at + ": " + detail::out_of_memory);
        }
        if (seen != edge_of_pair.end()) {  // this tensor joins the batch: one edge, its time the batch's
          if (out.tensors[seen->second].size() == 1) batched.push_back(seen->second);
          out.tensors[seen->second].push_back(std::move(t));
          out.file_edges[seen->second].push_back(i);
          continue;
        }
        detail::check_time(x.time, at + ".time (predicted)");
        out.tensors.push_back({std::move(t)});
      } else {
        throw error(at + " has no \"time\" (or a tensor: \"shape\", \"src_mesh\", \"src_spec\", \"dst_mesh\", \"dst_spec\")");
      }
      if (time) out.tensors.emplace_back();
      edge_of_pair[{x.from, x.to}] = d.edges.size();
      backward_given.push_back(e.find("backward_time") != nullptr);
      d.edges.push_back(x);
      out.file_edges.push_back({i});
    }
    // Each batch predicted once, whole (once per tensor added, k tensors cost k solves of up to k;
    // 60 small tensors between two stages ran past a minute); errors name its last edge.
    for (std::size_t k : batched) {
      const std::string at = "edges[" + std::to_string(out.file_edges[k].back()) + "]";
      edge& x = d.edges[k];
      try {
        x.time = reshard_time_s(out.tensors[k], net) / unit;
        if (d.training()) x.backward_time = reshard_time_s(out.tensors[k], net, true) / unit;
      } catch (const error& err) {
        throw error(at + ": " + err.what());
      } catch (const std::bad_alloc&) {
        throw error(at + ": " + detail::out_of_memory);
      }
      detail::check_time(x.time, at + ".time (predicted)");
    }
  }
  if (net_json) {
    read_network();
    out.network = net;
  }
  validate(d);
  out.ignored = detail::ignored_members(doc);
  return out;
}

/// The description a parsed JSON document gives; validated.
inline description from_json(const json::value& doc) { return parse_pipeline(doc).d; }

/// Parses and validates a pipeline description given as JSON text.
inline description from_json(std::string_view text) { return from_json(json::parse(text)); }

/// The text of a pipeline file (at most json::max_document_bytes); throws naming the file.
inline std::string read_pipeline_text(const std::string& path) {
  return meshcast::detail::read_document(path, "the pipeline file");
}

/// Reads a pipeline file, keeping what its edges reduce to; the errors name the file.
inline parsed_pipeline load_parsed(const std::string& path) {
  const std::string text = read_pipeline_text(path);
  try {
    return parse_pipeline(json::parse(std::string_view(text)));
  } catch (const error& e) {
    throw error(meshcast::detail::printable(path, 1024) + ": " + e.what());
  }
}

/// Reads a pipeline description from a JSON file; the errors name the file.
inline description load(const std::string& path) { return load_parsed(path).d; }

}  // namespace meshcast::pipeline

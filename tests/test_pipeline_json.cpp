// The pipeline JSON (a contract): fields, defaults, errors naming the input, tensor edges whose
// time is the predicted reshard time; the CLI's generic main with a user's policy.
#include <doctest/doctest.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <meshcast/pipeline.hpp>

#include "cli/pipeline_cli.hpp"

using namespace meshcast;
using namespace meshcast::pipeline;

namespace {
std::string parse_error(const std::string& text) {
  try {
    from_json(std::string_view(text));
  } catch (const error& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("pipeline JSON: the issue's form") {
  description d = from_json(std::string_view(R"({"stages": [{"forward": 2, "backward": 4}, {"forward": 2, "backward": 4},
      {"forward": 1.5, "backward": 3}, {"forward": 2, "backward": 4}],
    "microbatches": 8, "schedule": "eager_1f1b", "streams": "separate",
    "edges": [{"from": 0, "to": 1, "time": 1}, {"from": 0, "to": 3, "time": 1, "backward_time": 0.5},
              {"from": 1, "to": 2, "time": 1}, {"from": 2, "to": 3, "time": 2}],
    "comment": "unknown members are ignored"})"));
  CHECK(d.stage_count() == 4);
  CHECK(d.stages[2].forward == 1.5);
  CHECK(d.stages[2].backward == 3);
  CHECK(d.microbatches == 8);
  CHECK(d.schedule == schedule_kind::eager_1f1b);
  CHECK(d.streams == stream_mode::separate);
  REQUIRE(d.edges.size() == 4);
  CHECK(d.edges[1].from == 0);
  CHECK(d.edges[1].to == 3);
  CHECK(d.edges[1].back() == 0.5);
  CHECK(d.edges[3].back() == 2);
  for (const char* k : {"forward_only", "gpipe", "1f1b", "eager_1f1b"})
    CHECK(to_string(from_json(std::string_view(std::string(R"({"stages": [{"forward": 1, "backward": 1}], "microbatches": 1, "schedule": ")") + k + "\"}")).schedule) == k);
  // Defaults: forward_only, shared, no edges; "backward" not needed without training.
  description small = from_json(std::string_view(R"({"stages": [{"forward": 1}, {"forward": 3}], "microbatches": 2})"));
  CHECK(small.schedule == schedule_kind::forward_only);
  CHECK(small.streams == stream_mode::shared);
  CHECK(small.edges.empty());
}

TEST_CASE("pipeline JSON: errors name the input") {
  const std::string ok_stages = R"("stages": [{"forward": 2, "backward": 4}, {"forward": 2, "backward": 4}, {"forward": 2, "backward": 4}])";
  auto doc = [&](const std::string& rest) { return "{" + ok_stages + ", " + rest + "}"; };
  CHECK(parse_error(R"({"microbatches": 2})") == "the pipeline has no \"stages\"");
  CHECK(parse_error(R"({"stages": [{"forward": 1}]})") == "the pipeline has no \"microbatches\"");
  CHECK(parse_error(R"({"stages": [], "microbatches": 1})") == "stages must list at least one stage");
  CHECK(parse_error(R"({"stages": [{"backward": 1}], "microbatches": 1})") == "stages[0] has no \"forward\"");
  CHECK(parse_error(R"({"stages": [{"forward": "2"}], "microbatches": 1})") == "stages[0].forward must be a number");
  CHECK(parse_error(R"({"stages": [{"forward": -2}], "microbatches": 1})").find("stages[0].forward is -2: a time must be") == 0);
  CHECK(parse_error(R"({"stages": [{"forward": 1}], "microbatches": 1, "schedule": "1f1b"})") ==
        "stages[0] (schedule 1f1b) has no \"backward\"");
  CHECK(parse_error(R"({"stages": [{"forward": 1}], "microbatches": 0})") == "microbatches is 0, outside [1, 100000]");
  CHECK(parse_error(R"({"stages": [{"forward": 1}], "microbatches": 2.5})") == "microbatches must be an integer");
  CHECK(parse_error(R"({"stages": [{"forward": 1}], "microbatches": 1, "schedule": "zb"})").find("schedule 'zb' is not a schedule") == 0);
  CHECK(parse_error(R"({"stages": [{"forward": 1}], "microbatches": 1, "streams": 2})") == "streams must be a string");
  CHECK(parse_error(doc(R"("microbatches": 2, "edges": [{"from": 0, "to": 1, "time": 1}, {"from": 0, "to": 1}])")).find("edges[1] has no \"time\"") == 0);
  CHECK(parse_error(doc(R"("microbatches": 2, "edges": [{"from": 0, "to": 1, "time": 1}, {"from": 1, "to": 7, "time": 1}])")) ==
        "edges[1].to is 7, outside [0, 2]");
  CHECK(parse_error(doc(R"("microbatches": 2, "edges": [{"to": 1, "time": 1}])")) == "edges[0] has no \"from\"");
  CHECK(parse_error(doc(R"("microbatches": 2, "edges": [{"from": 2, "to": 1, "time": 1}])")).find("edges[0].to is 1 but must be greater than .from (2)") == 0);
  CHECK(parse_error(doc(R"("microbatches": 2, "edges": [{"from": 0, "to": 2, "time": 1}, {"from": 0, "to": 2, "time": 3}])")).find("edges[1] repeats edges[0] (0 -> 2)") == 0);
  CHECK(parse_error(doc(R"("microbatches": 2, "edges": [{"from": 0, "to": 1, "time": -1}])")).find("edges[0].time is -1") == 0);
  CHECK(parse_error(doc(R"("microbatches": 2, "edges": [{"from": 0, "to": 1, "time": 1, "backward_time": -3}])")).find("edges[0].backward_time is -3") == 0);
  CHECK(parse_error(doc(R"("microbatches": 2, "edges": [{"from": 0, "to": 1, "time": 1, "shape": [4]}])")).find("edges[0] gives both") == 0);
  CHECK(parse_error(doc(R"("microbatches": 2, "edges": {"from": 0})")) == "edges must be an array");
  CHECK(parse_error(doc(R"("microbatches": 2, "edges": [{"from": 0, "to": 1, "shape": [64], "src_mesh": "2", "src_spec": "S0", "dst_mesh": "2", "dst_spec": "R"}])")) ==
        "an edge gives a tensor, so the pipeline needs a \"network\"");
  CHECK(parse_error(R"({"stages": [{"forward": 1}], "microbatches": 1} x)").find("JSON at line 1 column") == 0);
  CHECK(parse_error("[1, 2]") == "the pipeline must be an object");
  // NaN cannot be written in JSON; numbers beyond double range are refused by the reader.
  CHECK(parse_error(R"({"stages": [{"forward": 1e999}], "microbatches": 1})").find("JSON at line 1") == 0);
}

TEST_CASE("pipeline JSON: a tensor edge's time is the predicted reshard time") {
  const std::string text = R"({"stages": [{"forward": 1, "backward": 2}, {"forward": 1, "backward": 2}],
    "microbatches": 2, "schedule": "gpipe", "time_unit_s": 0.001,
    "network": {"nic_gbps": 100, "latency_us": 5, "devices_per_host": 4},
    "edges": [{"from": 0, "to": 1, "shape": [1024, 1024], "element_bytes": 2,
               "src_mesh": [2, 4], "src_spec": "S0,R", "dst_mesh": "1x4", "dst_spec": "R,S0"}]})";
  description d = from_json(std::string_view(text));
  tensor_edge t{parse_shape("1024x1024"), 2, parse_mesh("2x4"), dynamic_spec("S0,R"), parse_mesh("1x4"), dynamic_spec("R,S0")};
  network_model net;
  net.nic_gbps = 100;
  net.latency_us = 5;
  net.devices_per_host = 4;
  const double forward = reshard_time_s(t, net), backward = reshard_time_s(t, net, true);
  CHECK(forward > 0);
  CHECK(backward > 0);
  CHECK(d.edges[0].time == doctest::Approx(forward / 0.001));
  CHECK(d.edges[0].back() == doctest::Approx(backward / 0.001));
  // The whole tensor (2 MiB) crosses one 100 Gbit/s NIC at least once: 2 MiB / 12.5 GB/s.
  CHECK(forward >= 2.0 * 1024 * 1024 / 12.5e9);
  // Bad tensors name the edge.
  auto with = [&](const std::string& from, const std::string& to) {
    std::string x = text;
    x.replace(x.find(from), from.size(), to);
    try {
      from_json(std::string_view(x));
    } catch (const error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(with("\"R,S0\"", "\"R,S7\"").find("edges[0]: ") == 0);
  CHECK(with("\"1x4\"", "\"1x\"").find("edges[0]: mesh '1x'") == 0);
  CHECK(with("\"nic_gbps\": 100", "\"nic_gbps\": 0") == "network.nic_gbps is 0, must be positive");
  // Outside the model's range: named as the member, not as "the egress bandwidth of host 0 (0.000000 bytes/s)".
  CHECK(with("\"nic_gbps\": 100", "\"nic_gbps\": 1e-300").find("network.nic_gbps is 1e-300, must be in [") == 0);
  CHECK(with("\"nic_gbps\": 100", "\"nic_gbps\": 1e300").find("network.nic_gbps is 1e+300, must be in [") == 0);
  CHECK(with("\"devices_per_host\": 4", "\"strategy\": \"carrier_pigeon\"").find("unknown strategy 'carrier_pigeon'") == 0);
  CHECK(with("[1024, 1024]", "[1024, 1024, 1024, 1024, 1024, 1024]").find("edges[0]: ") == 0);
}

TEST_CASE("pipeline JSON: the network's payload fraction and execution mode; the file keeps its tensors") {
  const std::string text = R"({"stages": [{"forward": 1}, {"forward": 1}, {"forward": 1}], "microbatches": 2,
    "time_unit_s": 0.001, "network": {"nic_gbps": 1, "latency_us": 0, "nic_efficiency": 0.5, "mode": "ordered"},
    "edges": [{"from": 0, "to": 1, "shape": "64x4096", "src_mesh": "2", "src_spec": "S0,R", "dst_mesh": "2", "dst_spec": "R,S0"},
              {"from": 1, "to": 2, "time": 3}]})";
  const parsed_pipeline f = parse_pipeline(json::parse(text));
  REQUIRE(f.tensors.size() == 2);
  REQUIRE(f.tensors[0].size() == 1);
  CHECK(f.tensors[1].empty());
  REQUIRE(f.network.has_value());
  CHECK(f.network->nic_efficiency == 0.5);
  CHECK(f.network->mode == execution::ordered);
  CHECK(f.d.edges[0].time == doctest::Approx(reshard_time_s(f.tensors[0][0], *f.network) / 0.001));
  // Half the payload rate: the (latency-free) time doubles.
  network_model full = *f.network;
  full.nic_efficiency = 1;
  CHECK(reshard_time_s(f.tensors[0][0], *f.network) == doctest::Approx(2 * reshard_time_s(f.tensors[0][0], full)));
  // The prediction is the one the resharder makes for itself with to_reshard_options.
  const reshard_options o = to_reshard_options(*f.network, 2);
  CHECK(o.nic_efficiency == 0.5);
  CHECK(o.mode == execution::ordered);
  CHECK(o.devices_per_host == 2);
  const tensor_edge& t = f.tensors[0][0];
  const plan p = make_plan(dynamic_layout(t.src_mesh, t.src_spec, t.shape), dynamic_layout(t.dst_mesh, t.dst_spec, t.shape),
                           {.element_bytes = 4, .devices = device_map::disjoint()});
  const network model = network_from(o, default_hosts(4, 2, 2));
  const instance in = make_instance(p, model, send_recv{}, {.split_replicas = o.split_replicas, .mode = o.mode});
  CHECK(reshard_time_s(t, *f.network) == solve(in, greedy{}).makespan_s);
  // Under auto, what solve_batch keeps: never longer than the auto instance alone.
  network_model under_auto = *f.network;
  under_auto.strategy = "auto";
  const schedule kept = solve_batch(std::span(&p, 1), model, auto_strategy{}, greedy{},
                                    {.split_replicas = o.split_replicas, .mode = o.mode}, {});
  CHECK(reshard_time_s(t, under_auto) == kept.makespan_s);
  CHECK(kept.makespan_s <= solve(make_instance(p, model, auto_strategy{}, {.split_replicas = o.split_replicas, .mode = o.mode}),
                                 greedy{}).makespan_s);
  // Concurrent mode is accepted (its own model); bad values name the member.
  network_model c = *f.network;
  c.mode = execution::concurrent;
  CHECK(reshard_time_s(t, c) > 0);
  auto with = [&](const std::string& from, const std::string& to) {
    std::string x = text;
    x.replace(x.find(from), from.size(), to);
    try {
      from_json(std::string_view(x));
    } catch (const error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(with("\"nic_efficiency\": 0.5", "\"nic_efficiency\": 1.5") == "network.nic_efficiency is 1.5, must be in [0.001, 1]");
  CHECK(with("\"mode\": \"ordered\"", "\"mode\": \"eventually\"").find("network.mode: ") == 0);
  // A measured duration replaces the stated one in a re-simulation.
  graph g(f.d);
  lists l = order(f.d, prior_first{}).stages;
  const double before = simulate(g, l).makespan;
  g.set_duration(g.transfer(1, pass_kind::forward, 1), 3 + 10);
  CHECK(simulate(g, l).makespan == doctest::Approx(before + 10));
  CHECK_THROWS_AS(g.set_duration(0, -1), error);
}

// ---- the CLI's main, generic over the policy list: a user's policy appended is accepted ------------

namespace {
/// A user's policy: rounds' lists, under another name.
struct my_rounds {
  static constexpr std::string_view name = "my_rounds";
  policy_result order(const graph& g, const policy_options& o) const { return rounds{}.order(g, o); }
};

std::string read_all(std::FILE* f) {
  std::string out;
  std::rewind(f);
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) out.append(buf, n);
  return out;
}
}  // namespace

TEST_CASE("pipeline CLI: a user's policy appended to the list is accepted by the generic main") {
  const std::string path = "meshcast_pipeline_cli_test.json";
  std::ofstream(path) << R"({"stages": [{"forward": 2}, {"forward": 2}, {"forward": 2}], "microbatches": 3,
                             "edges": [{"from": 0, "to": 1, "time": 1}, {"from": 1, "to": 2, "time": 1}]})";
  using mine = with_policies<builtin_policies, my_rounds>;
  auto run = [&](std::vector<std::string> args, std::string& out, std::string& err) {
    std::vector<char*> argv;
    static char name[] = "meshcast-pipeline";
    argv.push_back(name);
    for (std::string& a : args) argv.push_back(a.data());
    std::FILE* o = std::tmpfile();
    std::FILE* e = std::tmpfile();
    const int rc = cli::pipeline_main<mine>(static_cast<int>(argv.size()), argv.data(), o, e);
    out = read_all(o);
    err = read_all(e);
    std::fclose(o);
    std::fclose(e);
    return rc;
  };
  std::string out, err, rounds_out;
  CHECK(run({path, "--policy", "my_rounds", "--json"}, out, err) == 0);
  CHECK(out.find("{\"policy\":\"my_rounds\",\"makespan\":") == 0);
  CHECK(run({path, "--policy", "rounds", "--json"}, rounds_out, err) == 0);
  CHECK(out.substr(out.find(",")) == rounds_out.substr(rounds_out.find(",")));  // the same lists
  CHECK(run({"--help"}, out, err) == 0);
  CHECK(out.find("list_scheduling, prior_first, later_first, rounds, optimal or my_rounds") != std::string::npos);
  CHECK(run({path, "--policy", "theirs"}, out, err) == 2);
  CHECK(err.find("unknown policy 'theirs' (expected list_scheduling, prior_first, later_first, rounds, optimal or my_rounds)") !=
        std::string::npos);
  // The built-in list does not know it.
  std::FILE* o = std::tmpfile();
  std::FILE* e = std::tmpfile();
  std::string arg0 = "meshcast-pipeline", arg1 = path, arg2 = "--policy", arg3 = "my_rounds";
  char* argv[] = {arg0.data(), arg1.data(), arg2.data(), arg3.data()};
  CHECK(cli::pipeline_main(4, argv, o, e) == 2);
  std::fclose(o);
  std::fclose(e);
  std::remove(path.c_str());
}

TEST_CASE("pipeline JSON: several tensor edges between two stages go as one batch, predicted as one schedule") {
  const std::string edge_a = R"({"from": 0, "to": 1, "shape": "64x4096", "src_mesh": "2", "src_spec": "S0,R", "dst_mesh": "2", "dst_spec": "R,S0"})";
  const std::string edge_b = R"({"from": 0, "to": 1, "shape": "64x1024", "element_bytes": 2, "src_mesh": "2", "src_spec": "R,S0", "dst_mesh": "2", "dst_spec": "S0,R"})";
  const std::string edge_c = R"({"from": 1, "to": 2, "shape": "64x64", "src_mesh": "2", "src_spec": "S0,R", "dst_mesh": "2", "dst_spec": "R,R"})";
  auto file = [&](const std::string& edges, const std::string& schedule = "1f1b") {
    return R"({"stages": [{"forward": 1, "backward": 2}, {"forward": 1, "backward": 2}, {"forward": 1, "backward": 2}], "microbatches": 2,
      "schedule": ")" + schedule + R"(", "time_unit_s": 0.001, "network": {"nic_gbps": 1, "devices_per_host": 2}, "edges": [)" + edges + "]}";
  };
  const parsed_pipeline f = parse_pipeline(json::parse(file(edge_a + "," + edge_c + "," + edge_b + "," + edge_a)));
  REQUIRE(f.d.edges.size() == 2);  // 0 -> 1 (three tensors) and 1 -> 2
  REQUIRE(f.tensors[0].size() == 3);
  CHECK(f.file_edges[0] == std::vector<std::size_t>{0, 2, 3});
  CHECK(f.file_edges[1] == std::vector<std::size_t>{1});
  CHECK(f.file_edge(0) == 0);  // output names a batch by its first file edge
  CHECK(f.file_edge(1) == 1);
  const parsed_pipeline g = parse_pipeline(json::parse(file(edge_a + "," + edge_b + "," + edge_c)));
  REQUIRE(g.d.edges.size() == 2);
  CHECK(g.file_edge(1) == 2);  // 1 -> 2 is the file's edges[2], the second batch
  CHECK(f.tensors[0][1].element_bytes == 2);
  // The edge's time is the batch's one schedule, forward and backward; not the sum of the three.
  const double batch = reshard_time_s(f.tensors[0], *f.network);
  CHECK(f.d.edges[0].time == doctest::Approx(batch / 0.001));
  CHECK(f.d.edges[0].back() == doctest::Approx(reshard_time_s(f.tensors[0], *f.network, true) / 0.001));
  double alone = 0;
  for (const tensor_edge& t : f.tensors[0]) alone += reshard_time_s(t, *f.network);
  CHECK(batch < alone);  // latencies overlap in one schedule
  CHECK(batch > reshard_time_s(f.tensors[0][0], *f.network));
  // The batch's prediction is solve_batch's over the same plans and network.
  std::vector<plan> plans;
  for (const tensor_edge& t : f.tensors[0])
    plans.push_back(make_plan(dynamic_layout(t.src_mesh, t.src_spec, t.shape), dynamic_layout(t.dst_mesh, t.dst_spec, t.shape),
                              {.element_bytes = t.element_bytes, .devices = device_map::disjoint()}));
  const reshard_options o = to_reshard_options(*f.network, 2);
  CHECK(batch == solve_batch(plans, network_from(o, default_hosts(4, 2, 2)), send_recv{}, greedy{},
                             {.split_replicas = o.split_replicas, .mode = o.mode}, {}).makespan_s);
  auto thrown = [&](const std::string& text) {
    try {
      parse_pipeline(json::parse(text));
    } catch (const error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  // A time edge stays alone on its pair; a tensor edge of a batch gives no backward_time; the
  // tensors of one pair share the stages' meshes.
  CHECK(thrown(file(edge_a + R"(, {"from": 0, "to": 1, "time": 2})")).find("edges[1] repeats edges[0] (0 -> 1)") == 0);
  CHECK(thrown(file(R"({"from": 0, "to": 1, "time": 2}, )" + edge_a)).find("edges[1] repeats edges[0] (0 -> 1)") == 0);
  std::string with_back = edge_b;
  with_back.insert(with_back.size() - 1, R"(, "backward_time": 3)");
  CHECK(thrown(file(edge_a + "," + with_back)).find("edges[1] repeats edges[0]") == 0);
  std::string other_mesh = edge_b;
  other_mesh.replace(other_mesh.find(R"("dst_mesh": "2")"), 15, R"("dst_mesh": "1")");
  other_mesh.replace(other_mesh.find(R"("dst_spec": "S0,R")"), 18, R"("dst_spec": "R,R")");
  CHECK(thrown(file(edge_a + "," + other_mesh)).find("edges[1]: tensor 1 of the batch has meshes") == 0);
}

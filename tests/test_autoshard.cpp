// Automatic sharding: the graph and its checks, the pinned cost formulas, the reshard
// classification, and the plans the issue asks for (Megatron's MLP and transformer block, data
// parallelism, the 2-D hybrid), with objectives checked against the formulas written out here.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include <meshcast/autoshard.hpp>

#include "autoshard/graphs.hpp"
#include "support/autoshard_run.hpp"

using namespace meshcast::autoshard;
namespace t = meshcast::autoshard::test;
using meshcast::index_t;
using meshcast::testing::run;
using meshcast::spec_value;

namespace {
mesh_model mesh1(index_t n, double gbps, double latency_us, double tflops) {
  mesh_model m = mesh_model::uniform({n}, gbps * 1e9 / 8, latency_us * 1e-6);
  m.device_flops = tflops * 1e12;
  return m;
}

std::string spec_of(const sharding_plan& p, const graph& g, const std::string& tensor) {
  return p.report.specs[g.find_tensor(tensor)].to_string();
}

double ar(double n, double bytes, double bw, double lat) { return 2 * (n - 1) / n * bytes / bw + 2 * (n - 1) * lat; }

// Exact solvers: the ILP when CBC is there; else the DP, exact on the MLP's chain (the
// transformer block, which is not a tree, then needs the ILP and is skipped).
#if MESHCAST_HAS_CBC
using default_solver = ilp;
#else
using default_solver = dp;
#endif
}  // namespace

TEST_CASE("graph: shapes are inferred and every fault names its tensor or op") {
  graph g = t::mlp(32, 64, 128, false);
  CHECK(g.tensors()[g.find_tensor("h")].shape == std::vector<index_t>{32, 128});
  CHECK(g.tensors()[g.find_tensor("y")].shape == std::vector<index_t>{32, 64});
  CHECK(g.tensors()[g.find_tensor("h")].producer == 0);

  auto fails_with = [](const char* text, const char* words) {
    try {
      parse_graph(text);
      FAIL("no error for " << text);
    } catch (const meshcast::error& e) {
      CHECK_MESSAGE(std::string(e.what()).find(words) != std::string::npos, std::string(e.what()));
    }
  };
  fails_with(R"({"tensors": {"x": {"shape": [4, 8]}, "w": {"shape": [9, 2]}},
                 "ops": [{"name": "mm", "type": "matmul", "inputs": ["x", "w"], "output": "y"}]})",
             "op 'mm' (matmul): contracted dims differ");
  fails_with(R"({"tensors": {"x": {"shape": [4, 8], "spec": "S0"}}, "ops": []})", "tensor 'x'");
  fails_with(R"({"tensors": {"x": {"shape": [4, 0]}}, "ops": []})", "tensors.x.shape[1] is 0");
  fails_with(R"({"tensors": {"x": {"shape": [4]}}, "ops": [{"name": "r", "type": "relu", "inputs": ["q"], "output": "y"}]})",
             "op 'r': input 'q'");
  fails_with(R"({"tensors": {"x": {"shape": [4]}}, "ops": [{"name": "r", "type": "frobnicate", "inputs": ["x"], "output": "y"}]})",
             "op 'r': unknown type 'frobnicate'");
  fails_with(R"({"tensors": {"x": {"shape": [4]}}, "ops": [{"name": "a", "type": "relu", "inputs": ["b"], "output": "c"},
                 {"name": "b", "type": "relu", "inputs": ["c"], "output": "b"}]})",
             "is on a cycle");
  fails_with(R"({"tensors": {"x": {"shape": [4, 6]}}, "ops": [{"name": "r", "type": "reshape", "inputs": ["x"], "output": "y", "shape": [5, 5]}]})",
             "op 'r' (reshape): target shape [5, 5]");
  fails_with(R"({"tensors": {"x": {"shape": [4, 6]}}, "ops": [{"name": "s", "type": "softmax", "inputs": ["x"], "output": "y", "axis": 2}]})",
             "op 's' (softmax): axis 2");
  fails_with(R"({"tensors": {"x": {"shape": [4, 6]}}, "ops": [], "outputs": {"z": null}})", "outputs: tensor 'z'");
  fails_with(R"({"tensors": {"x": {"shape": [4, 6]}}, "ops": [], "outputs": {"x": "R"}})", "outputs: tensor 'x'");
  fails_with(R"({"tensors": {"x": {"shape": [4294967296, 4294967296]}}, "ops": []})", "overflows");
  fails_with(R"({"element_bytes": 0, "tensors": {}, "ops": []})", "element_bytes");
  fails_with(R"({"tensors": {"x": {"shape": [4, 6]}, "w": {"shape": [6, 2], "parameter": true}},
                 "ops": [{"name": "m", "type": "matmul", "inputs": ["x", "w"], "output": "w"}]})",
             "declared a parameter");
  // Names reach messages and the tools' tables: a control character (an escape sequence, a NUL
  // that printed two tensors as one) is refused, the name printed escaped (found by review).
  fails_with("{\"tensors\": {\"x\\u001b[31m\": {\"shape\": [4]}}, \"ops\": []}", "tensor name 'x\\x1b[31m' holds a control character");
  fails_with("{\"tensors\": {\"x\\u0000a\": {\"shape\": [4]}}, \"ops\": []}", "tensor name 'x\\x00a' holds a control character");
  // C1 too (U+009B is CSI to a terminal), written raw or as an escape; U+00A0 and up are names.
  fails_with("{\"tensors\": {\"x\\u009b2J\": {\"shape\": [4]}}, \"ops\": []}", "tensor name 'x\\xc2\\x9b2J' holds a control character");
  fails_with("{\"tensors\": {\"x\xc2\x85\": {\"shape\": [4]}}, \"ops\": []}", "tensor name 'x\\xc2\\x85' holds a control character");
  fails_with("{\"tensors\": {\"x\": {\"shape\": [4]}}, \"ops\": [{\"name\": \"r\", \"type\": \"re\\u0007lu\", \"inputs\": [\"x\"], \"output\": \"y\"}]}",
             "op 'r': type 're\\x07lu' holds a control character");
  fails_with("{\"tensors\": {\"x\": {\"shape\": [4]}}, \"ops\": [{\"name\": \"r\", \"type\": \"relu\", \"inputs\": [\"x\\n\"], \"output\": \"y\"}]}",
             "op 'r': input 'x\\x0a' holds a control character");
  fails_with("{\"tensors\": {\"x\": {\"shape\": [4]}}, \"ops\": [], \"outputs\": {\"z\\u001b\": null}}", "outputs: tensor 'z\\x1b' does not exist");
}

TEST_CASE("mesh model: bandwidths, latencies and sizes are checked") {
  CHECK_THROWS_AS(mesh_model::uniform({2, 4}, 0, 1e-6), meshcast::error);
  CHECK_THROWS_AS(mesh_model::uniform({2, 4}, 1e9, -1), meshcast::error);
  CHECK_THROWS_AS(mesh_model::uniform({2, 4}, std::nan(""), 0), meshcast::error);
  CHECK_THROWS_AS(mesh_model::uniform({2, 2, 2, 2, 2}, 1e9, 0), meshcast::error);
  CHECK_THROWS_AS(mesh_model::uniform({1 << 20, 1 << 20}, 1e9, 0), meshcast::error);
  mesh_model m = mesh_model::uniform({2, 4}, 1e9, 0);
  m.device_flops = std::numeric_limits<double>::infinity();
  CHECK_THROWS_AS(m.validate(), meshcast::error);
  // The costing itself validates before it builds the mesh's network: an empty mesh was read past
  // its end and a 10^10-device one allocated, before cost_model's own check (found by review).
  const graph g = t::mlp(32, 64, 128, false);
  mesh_model empty;
  CHECK_THROWS_WITH_AS(cost_model(g, empty), doctest::Contains("1 to 4 mesh axes, got 0"), meshcast::error);
  mesh_model huge = mesh1(4, 100, 1, 100);
  huge.sizes = {100000, 100000};
  huge.bandwidth.assign(2, 1e9);
  huge.latency.assign(2, 0);
  CHECK_THROWS_WITH_AS(auto_shard(g, huge, meshcast::autoshard::greedy{}), doctest::Contains("automatic sharding takes at most 4096"),
                       meshcast::error);
  CHECK_THROWS_WITH_AS(reshard_model(empty, 4), doctest::Contains("mesh axes"), meshcast::error);
}

TEST_CASE("costs past the largest double name the op and the inputs, under every solver") {
  // 1e-306 flop/s is a finite device: every strategy's compute then overflows to infinity, which
  // the solvers took for impossible choices ("no assignment satisfies the fixed specs and the
  // memory limit", blaming neither).
  graph g = t::mlp(32, 64, 128, false);
  mesh_model m = mesh1(4, 100, 1, 100);
  m.device_flops = 1e-306;
  const char* expected = "op 'fc1' (matmul): producing spec";
  CHECK_THROWS_WITH_AS(cost_model(g, m), doctest::Contains(expected), meshcast::error);
  CHECK_THROWS_WITH_AS(run<greedy>(g, m), doctest::Contains("flop/s) and"), meshcast::error);
  CHECK_THROWS_WITH_AS(run<dp>(g, m), doctest::Contains("not a finite number of seconds"), meshcast::error);
#if MESHCAST_HAS_CBC
  CHECK_THROWS_WITH_AS(run<ilp>(g, m), doctest::Contains(expected), meshcast::error);
#endif
  // Each cost finite, their sum not (two unsplit matmuls of 1.3e308 s each on one device): the
  // plan once reported an objective of inf s.
  mesh_model one = mesh1(1, 100, 1, 100);
  one.device_flops = 4e-303;
  CHECK_NOTHROW(cost_model(g, one));
  CHECK_THROWS_WITH_AS(run<greedy>(g, one), doctest::Contains("passes the largest double"), meshcast::error);
#if MESHCAST_HAS_CBC
  CHECK_THROWS_WITH_AS(run<ilp>(g, one), doctest::Contains("passes the largest double"), meshcast::error);
#endif
  // The slowest device whose costs still fit is accepted, and costed finitely.
  m.device_flops = 1e-250;
  const sharding_plan p = run<greedy>(g, m);
  CHECK(std::isfinite(p.report.objective_s));
}

TEST_CASE("collectives: the pinned formulas, summed over axes") {
  mesh_model m;
  m.sizes = {2, 4};
  m.bandwidth = {1e9, 4e9};
  m.latency = {10e-6, 1e-6};
  const double b = 1 << 20;
  CHECK(collective_seconds(m, collective::all_reduce, {0}, 1 << 20) == doctest::Approx(2 * 0.5 * b / 1e9 + 2 * 10e-6));
  CHECK(collective_seconds(m, collective::all_gather, {1}, 1 << 20) == doctest::Approx(0.75 * b / 4e9 + 3e-6));
  CHECK(collective_seconds(m, collective::reduce_scatter, {1}, 1 << 20) == doctest::Approx(0.75 * b / 4e9 + 3e-6));
  CHECK(collective_seconds(m, collective::all_to_all, {0}, 1 << 20) == doctest::Approx(0.5 * b / 1e9 + 10e-6));
  CHECK(collective_seconds(m, collective::all_reduce, {0, 1}, 1 << 20) ==
        doctest::Approx(2 * 0.5 * b / 1e9 + 2 * 10e-6 + 2 * 0.75 * b / 4e9 + 2 * 3e-6));
}

TEST_CASE("reshards: one collective where one covers it, meshcast's model elsewhere") {
  mesh_model m = mesh_model::uniform({2, 4}, 1e9, 1e-6);
  const std::vector<index_t> shape{64, 32};
  auto spec = [](const char* s) { return meshcast::dynamic_spec(s).value(); };
  reshard_model rm(m, 4);
  auto c = rm.cost(shape, spec("S0,R"), spec("R,R"));
  CHECK(c.kind == reshard_kind::all_gather);
  CHECK(c.axes == std::vector<int>{0});
  CHECK(c.bytes == 64 * 32 * 4);
  CHECK(c.seconds == doctest::Approx(collective_seconds(m, collective::all_gather, {0}, 64 * 32 * 4)));
  c = rm.cost(shape, spec("S0,S1"), spec("R,R"));
  CHECK(c.kind == reshard_kind::all_gather);
  CHECK(c.axes == std::vector<int>{0, 1});
  c = rm.cost(shape, spec("S0,R"), spec("R,S0"));  // hidet's example: all-to-all
  CHECK(c.kind == reshard_kind::all_to_all);
  CHECK(c.bytes == 32 * 32 * 4);
  CHECK(rm.cost(shape, spec("R,R"), spec("S01,R")).kind == reshard_kind::slice);
  CHECK(rm.cost(shape, spec("R,R"), spec("S01,R")).seconds == 0);
  CHECK(rm.cost(shape, spec("S0,R"), spec("S01,R")).kind == reshard_kind::slice);
  CHECK(rm.cost(shape, spec("S01,R"), spec("S0,R")).kind == reshard_kind::all_gather);
  CHECK(rm.cost(shape, spec("S01,R"), spec("S0,S1")).kind == reshard_kind::all_to_all);
  auto general = rm.cost(shape, spec("S01,R"), spec("S1,R"));  // axis 0 leaves from the front
  CHECK(general.kind == reshard_kind::meshcast);
  CHECK(general.seconds > 0);
  auto swap = rm.cost(shape, spec("S0,S1"), spec("S1,S0"));
  CHECK(swap.kind == reshard_kind::meshcast);
  CHECK(swap.seconds > 0);
  CHECK(rm.meshcast_plans() == 2);
  CHECK(rm.cost(shape, spec("S0,S1"), spec("S1,S0")).seconds == swap.seconds);  // cached
  CHECK(rm.meshcast_plans() == 2);
}

TEST_CASE("strategies: matmul splits, partial sums, and ops that cannot take a spec") {
  graph g = t::mlp(32, 64, 128, false);
  mesh_model m = mesh1(4, 100, 1, 100);
  auto ss = strategies_of(g, g.ops()[2], m);  // fc2: M, N, K each split or not, and reduce-scatter variants
  int reduce_scatter = 0;
  for (const auto& s : ss)
    for (const auto& c : s.forward) reduce_scatter += c.kind == collective::reduce_scatter;
  CHECK(ss.size() == 6);  // none, M, N, K (all-reduce), K then scatter over M, K then scatter over N
  CHECK(reduce_scatter == 2);

  // softmax cannot split its axis
  graph s;
  s.add_tensor("x", {8, 16});
  t::add(s, "sm", "softmax", {"x"}, "y");
  s.add_output("y");
  s.finalize();
  cost_model cm(s, m);
  CHECK_THROWS_WITH_AS(evaluate(cm, std::vector<std::string>{"R,R", "R,S0"}),
                       "specs: tensor 'y': op 'sm' (softmax) cannot produce it in spec 'R,S0' on this mesh",
                       meshcast::error);
  CHECK_NOTHROW(evaluate(cm, std::vector<std::string>{"R,R", "S0,R"}));
}

TEST_CASE("evaluate: invalid assignments name the tensor") {
  graph g = t::mlp(32, 64, 128, false);
  mesh_model m = mesh1(4, 100, 1, 100);
  cost_model cm(g, m);
  auto message = [&](std::vector<std::string> specs) {
    try {
      evaluate(cm, specs);
    } catch (const meshcast::error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  // tensors: x, w1, w2, h, a, y
  CHECK(message({"R,R", "R,S0", "S0,R", "R,S0", "R,S0", "R,R"}).empty());
  CHECK(message({"S0,R", "R,S0", "S0,R", "R,S0", "R,S0", "R,R"}).find("tensor 'x'") != std::string::npos);
  CHECK(message({"R,R", "R", "S0,R", "R,S0", "R,S0", "R,R"}).find("tensor 'w1'") != std::string::npos);
  CHECK(message({"R,R", "R,S1", "S0,R", "R,S0", "R,S0", "R,R"}).find("tensor 'w1'") != std::string::npos);
  CHECK(message({"R,R", "R,S0", "S0,R", "R,Q", "R,S0", "R,R"}).find("tensor 'h'") != std::string::npos);
  CHECK(message({"R,R", "R,S0", "S0,R", "R,S0", "R,S0"}).find("6 tensors") != std::string::npos);
  // an op output can only take a spec its op produces: gelu keeps its input's split
  mesh_model small = mesh1(4, 100, 1, 100);
  small.memory_bytes = 1000;
  cost_model tight(g, small);
  try {
    evaluate(tight, std::vector<std::string>{"R,R", "R,S0", "S0,R", "R,S0", "R,S0", "R,R"});
    FAIL("no memory error");
  } catch (const meshcast::error& e) {
    CHECK(std::string(e.what()).find("over the limit") != std::string::npos);
  }
}

TEST_CASE("(a) 2-layer MLP, model-parallel regime: Megatron's plan, objective equal to the formula") {
  const index_t B = 64, D = 4096, F = 16384, n = 8;
  const double bw = 100e9 / 8, lat = 5e-6, flops = 100e12;
  graph g = t::mlp(B, D, F, true);
  mesh_model m = mesh1(n, 100, 5, 100);
  sharding_plan p = run<default_solver>(g, m);
  CHECK(spec_of(p, g, "w1") == "R,S0");
  CHECK(spec_of(p, g, "w2") == "S0,R");
  CHECK(spec_of(p, g, "h") == "R,S0");
  CHECK(spec_of(p, g, "a") == "R,S0");
  CHECK(spec_of(p, g, "y") == "R,R");
  REQUIRE(p.report.collectives.size() == 1);
  const auto& c = p.report.collectives[0];
  CHECK(g.ops()[c.op].name == "fc2");
  CHECK(c.step.kind == collective::all_reduce);
  CHECK(c.step.axes == std::vector<int>{0});
  CHECK(c.step.bytes == B * D * 4);
  CHECK(p.report.reshards.empty());
  // Forward and backward compute, each split 8 ways (x needs no gradient: fc1 backward is dW1
  // only; fc2 backward is dA and dW2; gelu backward is one elementwise pass), plus the all-reduce.
  const double mm = 2.0 * B * D * F;
  const double formula = (mm * 2 + double(B * F) * 2 + mm * 3) / n / flops + ar(n, double(B * D * 4), bw, lat);
  CHECK(p.report.objective_s == doctest::Approx(formula).epsilon(1e-12));
  CHECK(p.proven_optimal);
  // Executing it: fc1 (no reshard), act, fc2, then fc2's all-reduce; backward in reverse.
  const auto steps = execution_order(g, p.report);
  REQUIRE(steps.size() == 7);
  CHECK(steps[0].what == plan_step::kind::compute);
  CHECK(g.ops()[steps[0].op].name == "fc1");
  CHECK(steps[3].what == plan_step::kind::collective);
  CHECK(g.ops()[steps[3].op].name == "fc2");
  CHECK(steps[4].backward);
  CHECK(g.ops()[steps[4].op].name == "fc2");
  CHECK(g.ops()[steps[6].op].name == "fc1");

#if MESHCAST_HAS_CBC  // the DP does not trade cost for memory
  // Inference: replicated weights would cost nothing to place, so data parallelism wins unless
  // they do not fit; with a memory limit below the replicated weights, Megatron's plan again.
  graph inf = t::mlp(B, D, F, false);
  mesh_model limited = m;
  limited.memory_bytes = 256.0 * (1 << 20);
  sharding_plan q = run<default_solver>(inf, limited);
  CHECK(spec_of(q, inf, "w1") == "R,S0");
  CHECK(spec_of(q, inf, "w2") == "S0,R");
  REQUIRE(q.report.collectives.size() == 1);
  CHECK(q.report.collectives[0].step.bytes == B * D * 4);
  CHECK(q.report.objective_s ==
        doctest::Approx((mm * 2 + double(B * F)) / n / flops + ar(n, double(B * D * 4), bw, lat)).epsilon(1e-12));
#endif
}

TEST_CASE("(b) 2-layer MLP, large batch and small hidden: data parallelism") {
  const index_t B = 65536, D = 256, F = 1024, n = 8;
  const double bw = 100e9 / 8, lat = 5e-6, flops = 100e12;
  graph g = t::mlp(B, D, F, true, nullptr);
  mesh_model m = mesh1(n, 100, 5, 100);
  sharding_plan p = run<default_solver>(g, m);
  CHECK(spec_of(p, g, "w1") == "R,R");
  CHECK(spec_of(p, g, "w2") == "R,R");
  CHECK(spec_of(p, g, "h") == "S0,R");
  CHECK(spec_of(p, g, "a") == "S0,R");
  CHECK(spec_of(p, g, "y") == "S0,R");
  // x R,R -> S0,R is a slice; the weight gradients are all-reduced over axis 0.
  REQUIRE(p.report.reshards.size() == 1);
  CHECK(p.report.reshards[0].cost.kind == reshard_kind::slice);
  REQUIRE(p.report.collectives.size() == 2);
  for (const auto& c : p.report.collectives) {
    CHECK(c.backward);
    CHECK(c.step.kind == collective::all_reduce);
    CHECK(c.step.bytes == D * F * 4);
  }
  const double mm = 2.0 * B * D * F;
  const double formula = (mm * 2 + double(B * F) * 2 + mm * 3) / n / flops + 2 * ar(n, double(D * F * 4), bw, lat);
  CHECK(p.report.objective_s == doctest::Approx(formula).epsilon(1e-12));
}

TEST_CASE("(c) 2-D mesh, slow axis 0 and fast axis 1: batch on axis 0, model on axis 1") {
  const index_t B = 32768, D = 1024, F = 1024;
  graph g = t::mlp(B, D, F, true, nullptr);
  mesh_model m;
  m.sizes = {2, 4};
  m.bandwidth = {25e9 / 8, 800e9 / 8};
  m.latency = {20e-6, 2e-6};
  m.device_flops = 10e12;
  sharding_plan p = run<default_solver>(g, m);
  CHECK(spec_of(p, g, "w1") == "R,S1");
  CHECK(spec_of(p, g, "w2") == "S1,R");
  CHECK(spec_of(p, g, "h") == "S0,S1");
  CHECK(spec_of(p, g, "y") == "S0,R");
  // The activations' all-reduce runs over the fast axis, the weight gradients' over the slow one.
  for (const auto& c : p.report.collectives) {
    CHECK(c.step.kind == collective::all_reduce);
    if (c.backward) CHECK(c.step.axes == std::vector<int>{0});
    else CHECK(c.step.axes == std::vector<int>{1});
  }
}

#if MESHCAST_HAS_CBC
TEST_CASE("(d) transformer block on a 1-D mesh: Megatron's pattern") {
  t::transformer_dims d{.batch = 4, .seq = 128, .model = 2048, .heads = 16, .ffn = 8192};
  graph g = t::transformer(1, d, true);
  mesh_model m = mesh1(8, 400, 5, 100);
  sharding_plan p = run<default_solver>(g, m);
  for (const char* w : {"l0.wq", "l0.wk", "l0.wv", "l0.w1"}) CHECK_MESSAGE(spec_of(p, g, w) == "R,S0", w);
  for (const char* w : {"l0.wo", "l0.w2"}) CHECK_MESSAGE(spec_of(p, g, w) == "S0,R", w);
  // attention split by heads
  CHECK(spec_of(p, g, "l0.s") == "R,S0,R,R");
  CHECK(spec_of(p, g, "l0.pr") == "R,S0,R,R");
  // Two all-reduces forward (after the output projection and after fc2), each of the block's
  // activations, and one backward (the gradient of the residual stream entering the MLP).
  int forward = 0;
  for (const auto& c : p.report.collectives)
    if (!c.backward) {
      ++forward;
      CHECK(c.step.kind == collective::all_reduce);
      CHECK(c.step.bytes == d.batch * d.seq * d.model * 4);
    }
  CHECK(forward == 2);
  MESSAGE("transformer block: objective " << p.report.objective_s << " s, " << p.report.collectives.size()
                                           << " collectives, " << p.report.reshards.size() << " reshards");
}
#endif

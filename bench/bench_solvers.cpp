// Solve time against task count (Google Benchmark): n hosts of 4 devices reshard S0,R -> R,S0,
// which gives n*n tasks, each with 4 replicas as senders and 4 receivers on one host.
#include <benchmark/benchmark.h>

#include <meshcast/meshcast.hpp>

using namespace meshcast;

namespace {

struct setup {
  plan p;
  network net;
  explicit setup(index_t hosts)
      : p(make_plan(dynamic_layout(dynamic_mesh{hosts, 4}, dynamic_spec("S0,R"), dynamic_shape{4096, 4096}),
                    dynamic_layout(dynamic_mesh{hosts, 4}, dynamic_spec("R,S0"), dynamic_shape{4096, 4096}))),
        net(network::alpa_testbed(default_hosts(p.device_count, hosts * 4, 4))) {}
};

template <class Solver>
void solve_time(benchmark::State& state) {
  setup s(state.range(0));
  instance in = make_instance(s.p, s.net, send_recv_allgather{});
  double ratio = 0;
  for (auto _ : state) {
    schedule out = solve(in, Solver{});
    ratio = out.makespan_s / out.lower_bound_s;
    benchmark::DoNotOptimize(out.transfers.data());
  }
  state.counters["tasks"] = static_cast<double>(s.p.tasks.size());
  state.counters["makespan_over_bound"] = ratio;
}

void solver_only(benchmark::State& state) {  // greedy without the bound and the simulation
  setup s(state.range(0));
  instance in = make_instance(s.p, s.net, send_recv_allgather{});
  for (auto _ : state) benchmark::DoNotOptimize(greedy{}.solve(in, {}).ops.data());
  state.counters["tasks"] = static_cast<double>(s.p.tasks.size());
}

void bound_only(benchmark::State& state) {
  setup s(state.range(0));
  instance in = make_instance(s.p, s.net, send_recv_allgather{});
  for (auto _ : state) benchmark::DoNotOptimize(lower_bound(in).value());
  state.counters["tasks"] = static_cast<double>(s.p.tasks.size());
}

void build_instance(benchmark::State& state) {
  setup s(state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(make_instance(s.p, s.net, send_recv_allgather{}).units.data());
  state.counters["tasks"] = static_cast<double>(s.p.tasks.size());
}

}  // namespace

#define MESHCAST_SIZES ->Arg(8)->Arg(16)->Arg(32)->Arg(64)->Unit(benchmark::kMillisecond)
BENCHMARK(build_instance) MESHCAST_SIZES;
BENCHMARK(bound_only) MESHCAST_SIZES;
BENCHMARK(solver_only) MESHCAST_SIZES;
BENCHMARK(solve_time<greedy>) MESHCAST_SIZES;
BENCHMARK(solve_time<alpa_least_loaded>) MESHCAST_SIZES;
BENCHMARK(solve_time<open_shop>) MESHCAST_SIZES;
BENCHMARK_MAIN();

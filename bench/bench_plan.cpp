// Plan construction time for growing device counts, with 2-D specs.
#include <benchmark/benchmark.h>

#include <cmath>
#include <meshcast/meshcast.hpp>

using namespace meshcast;

namespace {
// rows x cols -> rows x cols devices. kind 0: transpose the sharding (S0,S1 -> S1,S0), one task per
// tile pair; kind 1: the destination mesh's axes are half and twice as long (S0,S1 -> S0,S1 on
// rows/2 x 2*cols), so every source tile meets two destination tiles and vice versa; kind 2: a
// replicated destination axis (S0,S1 -> S0,R), several receivers per task.
void plan_construction(benchmark::State& state) {
  const index_t devices = state.range(0), kind = state.range(1);
  // 8 -> 2x4, 64 -> 8x8, 1024 -> 32x32
  const index_t rows = static_cast<index_t>(std::lround(std::exp2(std::floor(std::log2(static_cast<double>(devices)) / 2))));
  const index_t cols = devices / rows;
  dynamic_shape shape{8192, 8192};
  dynamic_layout src(dynamic_mesh{rows, cols}, dynamic_spec("S0,S1"), shape);
  dynamic_layout dst = kind == 0   ? dynamic_layout(dynamic_mesh{rows, cols}, dynamic_spec("S1,S0"), shape)
                       : kind == 1 ? dynamic_layout(dynamic_mesh{rows / 2, cols * 2}, dynamic_spec("S0,S1"), shape)
                                   : dynamic_layout(dynamic_mesh{rows, cols}, dynamic_spec("S0,R"), shape);
  std::size_t tasks = 0;
  for (auto _ : state) {
    plan p = make_plan(src, dst);
    tasks = p.tasks.size();
    benchmark::DoNotOptimize(p.tasks.data());
  }
  state.counters["devices"] = static_cast<double>(devices);
  state.counters["tasks"] = static_cast<double>(tasks);
  state.counters["ns_per_task"] =
      benchmark::Counter(static_cast<double>(tasks), benchmark::Counter::kIsIterationInvariantRate |
                                                         benchmark::Counter::kInvert);
}
}  // namespace

BENCHMARK(plan_construction)
    ->ArgsProduct({{8, 64, 1024}, {0, 1, 2}})
    ->ArgNames({"devices", "kind"})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_MAIN();

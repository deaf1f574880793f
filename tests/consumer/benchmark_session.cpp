// The benchmark session as issue 21 and README write it, built against the installed package's
// meshcast::benchmark (MPI and Google Benchmark found by meshcastConfig.cmake).
#include <meshcast/benchmark.hpp>
int main(int argc, char** argv) {
  meshcast::benchmark_session session(argc, argv);   // MPI_Init if not done, benchmark::Initialize
  meshcast::dynamic_layout src(meshcast::dynamic_mesh{4}, meshcast::dynamic_spec("S0,R"), meshcast::dynamic_shape{1024, 256});
  meshcast::dynamic_layout dst(meshcast::dynamic_mesh{2, 2}, meshcast::dynamic_spec("S1,S0"), meshcast::dynamic_shape{1024, 256});
  session.add_reshard("rows_to_blocks", src, dst, sizeof(float),
                      meshcast::reshard_options{.devices = meshcast::device_map::same()});
  return session.run();   // 0 when every run's data was right
}

// Builds against the installed package and reshards with exactly the one-call API of README's
// "Use it in your code": static layouts across meshes, dynamic layouts in place. Run at 4 ranks.
#include <mpi.h>

#include <cstdio>
#include <span>
#include <vector>

#include <meshcast/mpi.hpp>

namespace {
// This rank's shard of a 8x6 tensor whose element (i, j) holds 6 i + j: the tile's rows, row-major.
std::vector<int> shard(const meshcast::layout_value& l, long device_in_mesh) {
  std::vector<int> v;
  if (device_in_mesh < 0 || device_in_mesh >= l.device_count()) return v;
  const meshcast::box t = l.tile(device_in_mesh);
  for (auto i = t[0].lo; i < t[0].hi; ++i)
    for (auto j = t[1].lo; j < t[1].hi; ++j) v.push_back(static_cast<int>(i * 6 + j));
  return v;
}
}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm comm = MPI_COMM_WORLD;
  using namespace meshcast;
  int wrong = 0;

  // Across meshes: rows split over ranks 0-1 -> columns split over ranks 2-3 (the default placement).
  constexpr layout<mesh<2>, spec<S<0>, R>, shape<8, 6>> src_layout;
  constexpr layout<mesh<2>, spec<R, S<0>>, shape<8, 6>> dst_layout;
  {
    const std::vector<int> in = shard(src_layout.value(), rank);
    const std::vector<int> expect = shard(dst_layout.value(), rank - 2);
    std::vector<int> out(expect.size(), -1);
    meshcast::reshard(comm, src_layout, dst_layout, std::span<const int>(in), std::span<int>(out));
    wrong += out != expect;
  }
  // In place on all four ranks, layouts known at run time.
  {
    const dynamic_layout src(dynamic_mesh{4}, dynamic_spec("S0,R"), dynamic_shape{8, 6});
    const dynamic_layout dst(dynamic_mesh{2, 2}, dynamic_spec("S1,S0"), dynamic_shape{8, 6});
    const std::vector<int> in = shard(src.value(), rank);
    const std::vector<int> expect = shard(dst.value(), rank);
    std::vector<int> out(expect.size(), -1);
    meshcast::reshard(comm, src, dst, std::span<const int>(in), std::span<int>(out),
                      meshcast::reshard_options{.devices = meshcast::device_map::same()});
    wrong += out != expect;
  }
  int total = 0;
  MPI_Allreduce(&wrong, &total, 1, MPI_INT, MPI_SUM, comm);
  if (rank == 0) std::printf("consumer_mpi: %s\n", total == 0 ? "every element right" : "WRONG");
  MPI_Finalize();
  return total == 0 ? 0 : 1;
}

#!/usr/bin/env bash
# The include cost of meshcast: wall time and peak memory of g++ -O2 -fsyntax-only (parse and
# instantiate, no code generation) and of a full -O2 compile, for
#   a) a file that includes <meshcast/meshcast.hpp> and does nothing,
#   b) a program that reshards over MPI: the one call of <meshcast/mpi.hpp> where the include dir has
#      it, else the hand-written plan/solve/share/executor sequence of that version's README;
#   c) where the include dir has the compiled mode (core/compiled.hpp), the same program built as
#      against meshcast::compiled (-DMESHCAST_COMPILED: the headers declare, libmeshcast defines);
#   d) where <nccl.h> is found (CUDA_INCLUDE, default /usr/local/cuda/include), the same one call
#      over NCCL, header-only and, where the include dir has it (api/nccl/batch_core.hpp), as
#      against meshcast::compiled_nccl (-DMESHCAST_COMPILED_NCCL).
# Usage: bench/include_cost.sh [INCLUDE_DIR] [REPEATS]   (default: include/ of this checkout, 3)
# Best of REPEATS runs each. Compare two versions side by side, e.g. before = a git worktree of an
# older commit: bench/include_cost.sh /tmp/before/include; bench/include_cost.sh include
set -euo pipefail
inc="${1:-$(cd "$(dirname "$0")/.." && pwd)/include}"
repeats="${2:-3}"
cxx="${CXX:-g++}"
mpi_flags="$(mpicxx -show 2>/dev/null | cut -d' ' -f2- | tr ' ' '\n' | grep '^-I' | tr '\n' ' ' || true)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

cat > "$work/umbrella.cpp" <<'CPP'
#include <meshcast/meshcast.hpp>
int main() {}
CPP
if [ -f "$inc/meshcast/mpi.hpp" ]; then
  cat > "$work/reshard.cpp" <<'CPP'
#include <mpi.h>
#include <meshcast/mpi.hpp>
#include <vector>
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  constexpr meshcast::layout<meshcast::mesh<2>, meshcast::spec<meshcast::S<0>, meshcast::R>, meshcast::shape<8, 6>> src;
  constexpr meshcast::layout<meshcast::mesh<2>, meshcast::spec<meshcast::R, meshcast::S<0>>, meshcast::shape<8, 6>> dst;
  std::vector<int> in(24), out(24);
  meshcast::reshard(MPI_COMM_WORLD, src, dst, std::span<const int>(in), std::span<int>(out));
  MPI_Finalize();
}
CPP
  what="one call (meshcast::reshard)"
else
  cat > "$work/reshard.cpp" <<'CPP'
#include <mpi.h>
#include <meshcast/meshcast.hpp>
#include <meshcast/backend/mpi.hpp>
#include <vector>
int main(int argc, char** argv) {
  using namespace meshcast;
  MPI_Init(&argc, &argv);
  constexpr layout<mesh<2>, spec<S<0>, R>, shape<8, 6>> src;
  constexpr layout<mesh<2>, spec<R, S<0>>, shape<8, 6>> dst;
  plan p = make_plan(src, dst, {.element_bytes = 4});
  network net = network::alpa_testbed(default_hosts(p.device_count, 2, 1));
  instance in = make_instance(p, net, send_recv_allgather{}, true);
  auto s = solve(in, greedy{});
  mpi_backend mpi(MPI_COMM_WORLD);
  share_schedule(MPI_COMM_WORLD, p, s.ops);
  executor<mpi_backend, send_recv_allgather> run(mpi, p, s.ops);
  std::vector<int> a(24), b(24);
  run.run(std::as_bytes(std::span(a)), std::as_writable_bytes(std::span(b)));
  MPI_Finalize();
}
CPP
  what="hand-written plan/solve/share/executor"
fi

measure() {  # prints "seconds peak_MiB", best of $repeats
  local best_t="" best_m=""
  for _ in $(seq "$repeats"); do
    /usr/bin/time -f "%e %M" -o "$work/t" "$cxx" -std=c++20 -O2 -I"$inc" $mpi_flags "$@" >/dev/null
    read -r t m < "$work/t"
    if [ -z "$best_t" ] || awk "BEGIN{exit !($t < $best_t)}"; then best_t=$t; fi
    if [ -z "$best_m" ] || [ "$m" -lt "$best_m" ]; then best_m=$m; fi
  done
  echo "$best_t s, $((best_m / 1024)) MiB"
}

echo "include dir: $inc ($cxx, best of $repeats)"
echo "  <meshcast/meshcast.hpp>, syntax only: $(measure -fsyntax-only "$work/umbrella.cpp")"
echo "  <meshcast/meshcast.hpp>, compile:     $(measure -c -o "$work/u.o" "$work/umbrella.cpp")"
echo "  reshard program [$what], syntax only: $(measure -fsyntax-only "$work/reshard.cpp")"
echo "  reshard program [$what], compile:     $(measure -c -o "$work/r.o" "$work/reshard.cpp")"
if [ -f "$inc/meshcast/core/compiled.hpp" ]; then
  echo "  reshard program, compiled mode, syntax only: $(measure -DMESHCAST_COMPILED -fsyntax-only "$work/reshard.cpp")"
  echo "  reshard program, compiled mode, compile:     $(measure -DMESHCAST_COMPILED -c -o "$work/c.o" "$work/reshard.cpp")"
fi
cuda_inc="${CUDA_INCLUDE:-/usr/local/cuda/include}"
if [ -f "$cuda_inc/nccl.h" ] && [ -f "$cuda_inc/cuda_runtime.h" ]; then
  cat > "$work/nccl.cpp" <<'CPP'
#include <cuda_runtime.h>
#include <nccl.h>
#include <meshcast/nccl.hpp>
void reshard(ncclComm_t comm, cudaStream_t stream, const float* in, float* out) {
  constexpr meshcast::layout<meshcast::mesh<2>, meshcast::spec<meshcast::S<0>, meshcast::R>, meshcast::shape<8, 6>> src;
  constexpr meshcast::layout<meshcast::mesh<2>, meshcast::spec<meshcast::R, meshcast::S<0>>, meshcast::shape<8, 6>> dst;
  meshcast::reshard(comm, stream, src, dst, std::span<const float>(in, 24), std::span<float>(out, 24));
}
int main() {}
CPP
  echo "  NCCL one call, syntax only:          $(measure -isystem "$cuda_inc" -fsyntax-only "$work/nccl.cpp")"
  echo "  NCCL one call, compile:              $(measure -isystem "$cuda_inc" -c -o "$work/n.o" "$work/nccl.cpp")"
  if [ -f "$inc/meshcast/api/nccl/batch_core.hpp" ]; then
    echo "  NCCL one call, compiled mode, syntax only: $(measure -isystem "$cuda_inc" -DMESHCAST_COMPILED_NCCL -fsyntax-only "$work/nccl.cpp")"
    echo "  NCCL one call, compiled mode, compile:     $(measure -isystem "$cuda_inc" -DMESHCAST_COMPILED_NCCL -c -o "$work/nc.o" "$work/nccl.cpp")"
  fi
fi

#!/usr/bin/env bash
# The Meson install, checked as a user would use it: `meson install` of a built Meson build into a
# fresh prefix, then tests/consumer's programs built with pkg-config alone against that prefix,
# header-only (`meshcast`) and, where the build found MPI, compiled (`meshcast-compiled`, run at
# 4 ranks); where it found CUDA and NCCL, the NCCL one call against `meshcast-compiled-nccl` (run
# where there are GPUs). CI runs it after the Meson tests.
# Usage: tests/meson_install.sh MESON_BUILD_DIR
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="$(cd "$1" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cxx="${CXX:-g++}"

# Staged with --destdir (the build keeps its prefix); pkg-config is told the staged prefix, as
# for a relocated install.
meson install -C "$build" --no-rebuild --quiet --destdir "$work/dest"
pc="$(dirname "$(find "$work/dest" -name meshcast.pc | head -1)")"
[ -f "$pc/meshcast.pc" ] || { echo "meson install wrote no meshcast.pc under $work/dest" >&2; exit 1; }
export PKG_CONFIG_PATH="$pc"  # searched before the system's (which holds mpich.pc)
staged="$work/dest$(pkg-config --variable=prefix meshcast)"
flags() { pkg-config --define-variable=prefix="$staged" --cflags --libs "$1"; }

# shellcheck disable=SC2046  # pkg-config's flags are words
"$cxx" -std=c++20 "$root/tests/consumer/main.cpp" $(flags meshcast) -o "$work/umbrella"
"$work/umbrella"
echo "meshcast (header-only): built against the installed prefix and ran"

if [ -f "$pc/meshcast-compiled.pc" ]; then
  # shellcheck disable=SC2046
  "$cxx" -std=c++20 -O2 "$root/tests/consumer/reshard_mpi.cpp" $(flags meshcast-compiled) -o "$work/one_call"
  out="$(mpiexec -n 4 "$work/one_call")"
  echo "$out" | grep -q "every element right" || { echo "$out" >&2; exit 1; }
  echo "meshcast-compiled: built against the installed libmeshcast and ran at 4 ranks"
elif [ -f "$build/libmeshcast.a" ]; then
  echo "the Meson build has libmeshcast.a but its install has no meshcast-compiled.pc" >&2
  exit 1
fi

mpi_pc=""
[ -f "$pc/meshcast-compiled.pc" ] && mpi_pc="$(pkg-config --print-requires meshcast-compiled | awk "NR == 1 {print \$1}")"
if [ -f "$pc/meshcast-compiled-nccl.pc" ] && [ -z "$mpi_pc" ]; then
  echo "meshcast-compiled-nccl: installed; its consumer (which starts NCCL over MPI) not built: no MPI here"
elif [ -f "$pc/meshcast-compiled-nccl.pc" ]; then
  # The NCCL one call in compiled mode, linked against the installed libmeshcast-nccl; it runs
  # where a GPU is there for each of its 2 ranks and says it skipped (77) elsewhere.
  # shellcheck disable=SC2046
  "$cxx" -std=c++20 -O2 "$root/tests/nccl/gpu_one_call_compiled.cpp" $(flags meshcast-compiled-nccl) \
    $(pkg-config --cflags --libs "$mpi_pc") -o "$work/nccl_one_call"
  rc=0
  out="$(mpiexec -n 2 "$work/nccl_one_call")" || rc=$?
  if [ "$rc" -eq 77 ]; then
    echo "meshcast-compiled-nccl: built against the installed libmeshcast-nccl ($out)"
  elif [ "$rc" -eq 0 ] && echo "$out" | grep -q "every element right"; then
    echo "meshcast-compiled-nccl: built against the installed libmeshcast-nccl and ran on 2 GPUs"
  else
    echo "$out" >&2
    exit 1
  fi
elif [ -f "$build/libmeshcast-nccl.a" ]; then
  echo "the Meson build has libmeshcast-nccl.a but its install has no meshcast-compiled-nccl.pc" >&2
  exit 1
fi

#!/usr/bin/env bash
# Executor vs hand-written MPI loop. Instructions: callgrind over the timed loop only, summed over
# ranks, counting everything but the MPI stack itself (libmpich and UCX) (whose progress loops spin for as long as
# a peer is late, so their count is timing, not work). Time: best of many runs.
# Then the same on the NCCL side over the emulated NCCL. Usage: bench/overhead.sh BUILD_DIR [ranks] [shape]
set -euo pipefail
build=${1:-build/test}
ranks=${2:-4}
shape=${3:-512x512}
bin=$build/bench/meshcast-bench-executor-overhead
tmp=$(mktemp -d)
count() {  # instructions outside libmpich in one callgrind file
  callgrind_annotate --inclusive=no --threshold=100 "$1" 2>/dev/null |
    awk '/^ *[0-9,]+ +\(/ && !/PROGRAM TOTALS|libmpich|libuc[pts]|libhwloc/ {gsub(",", "", $1); s += $1} END {print s + 0}'
}
for mode in raw executor; do
  mpiexec -n "$ranks" valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$tmp/$mode.%p" \
    "$bin" --mode "$mode" --reps 20 --shape "$shape" > /dev/null 2>&1
  total=0
  for f in "$tmp"/$mode.*; do total=$((total + $(count "$f"))); done
  echo "$mode instructions $total"
  mpiexec -n "$ranks" "$bin" --mode "$mode" --reps 300 --shape "$shape"
done | tee "$tmp/out"
raw=$(awk '/^raw instructions/ {print $3}' "$tmp/out")
exe=$(awk '/^executor instructions/ {print $3}' "$tmp/out")
rt=$(awk '/^raw [0-9]+ ranks/ {print $(NF-1)}' "$tmp/out")
et=$(awk '/^executor [0-9]+ ranks/ {print $(NF-1)}' "$tmp/out")
python3 -c "print(f'executor / hand-written: instructions {$exe / $raw:.4f}, time {$et / $rt:.3f}')"
rm -rf "$tmp"/*

# The same comparison on the NCCL side, over the emulated NCCL (threads as ranks, one process):
# instructions of the whole timed region (the emulation's matching is the same in both modes).
nbin=$build/bench/meshcast-bench-nccl-overhead
for mode in raw executor; do
  valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$tmp.nccl.$mode" \
    "$nbin" --mode "$mode" --ranks "$ranks" --reps 20 --shape "$shape" > /dev/null 2>&1
  echo "nccl $mode instructions $(callgrind_annotate "$tmp.nccl.$mode" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}')"
  "$nbin" --mode "$mode" --ranks "$ranks" --reps 300 --shape "$shape"
done | tee "$tmp.nccl.out"
raw=$(awk '/^nccl raw instructions/ {print $4}' "$tmp.nccl.out")
exe=$(awk '/^nccl executor instructions/ {print $4}' "$tmp.nccl.out")
rt=$(awk '/^raw [0-9]+ ranks/ {print $(NF-1)}' "$tmp.nccl.out")
et=$(awk '/^executor [0-9]+ ranks/ {print $(NF-1)}' "$tmp.nccl.out")
python3 -c "print(f'emulated NCCL, executor / hand-written: instructions {$exe / $raw:.4f}, time {$et / $rt:.3f}')"
rm -f "$tmp".nccl.*
rmdir "$tmp"

#!/usr/bin/env bash
# reshard_matrix.sh: runs meshcast-reshard in both execution modes and with three strategies on a
# cluster that is already up (4 hosts; tests/cluster/on_cluster.sh --plain brings it up, adds the
# delay and loss, and takes it down). Used by cluster.reshard_lossy.
#
#   reshard_matrix.sh PROGRAM
#
# 2 ranks per host, (4,2) same mesh:
#   2048x2048 S0,S1 -> S1,S0 (16 MiB transpose), send_recv, --mode ordered and --mode concurrent
#   1024x1024 S0,S1 -> R,S0 (4 MiB, each slice to 2 devices), broadcast and send_recv_allgather,
#   each in both modes
# Every run must exit 0 and print " 0 wrong elements". Exit 0 also means that no rank's source
# shard was written: meshcast-reshard compares it with a copy taken before the reshard and fails
# the rank otherwise. Prints each run's line and wall time.
set -uo pipefail
[ $# -eq 1 ] || { echo "usage: reshard_matrix.sh PROGRAM" >&2; exit 2; }
prog=$1
cluster=$(cd "$(dirname "$0")" && pwd)/../../scripts/cluster.sh
common=(--src-mesh 4x2 --src-spec S0,S1 --dst-mesh 4x2 --same-mesh --devices-per-host 2 --nic-gbps 0.5
        --latency-us 5000 --timeout-s 30)
cases=(
  "--shape 2048x2048 --dst-spec S1,S0 --strategy send_recv --mode ordered"
  "--shape 2048x2048 --dst-spec S1,S0 --strategy send_recv --mode concurrent"
  "--shape 1024x1024 --dst-spec R,S0 --strategy broadcast --mode ordered"
  "--shape 1024x1024 --dst-spec R,S0 --strategy broadcast --mode concurrent"
  "--shape 1024x1024 --dst-spec R,S0 --strategy send_recv_allgather --mode ordered"
  "--shape 1024x1024 --dst-spec R,S0 --strategy send_recv_allgather --mode concurrent"
)
out=$(mktemp)
trap 'rm -f "$out"' EXIT
failed=0
for c in "${cases[@]}"; do
  # shellcheck disable=SC2206
  args=($c)
  start=$(date +%s.%N)
  timeout -k 5 60 bash "$cluster" mpiexec -ppn 2 -n 8 "$prog" "${common[@]}" "${args[@]}" > "$out" 2>&1
  rc=$?
  wall=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
  cat "$out"
  if [ $rc -eq 0 ] && grep -q " 0 wrong elements" "$out"; then
    echo "reshard_matrix.sh: ok ($wall s): $c"
  else
    echo "reshard_matrix.sh: FAILED (exit $rc, $wall s): $c"
    failed=1
  fi
done
exit $failed

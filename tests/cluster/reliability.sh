#!/usr/bin/env bash
# reliability.sh: K consecutive multi-host runs on the emulated cluster; counts hangs and failures.
#
#   tests/cluster/reliability.sh K [--case a|b|repro|all] [--mbit M] [--timeout S] [--build DIR]
#
# Cases (the cluster has 5 hosts):
#   a      meshcast-reshard, 20 ranks on 5 hosts of 4: (2,4) R,S1,R -> (3,4) S0,R,R, 512x256x64 int32,
#          send_recv, greedy
#   b      meshcast-reshard, 8 ranks on 4 hosts of 2, same mesh: (4,2) S0,S1 -> S1,S0, 4096x4096 int32
#   repro  tests/cluster/finalize_repro.c (built with mpicc), 10 ranks on 5 hosts of 2, 1 MiB per pair
# A run that does not exit within S seconds (default 60) is a hang; one that exits non-zero, or
# (reshard) reports wrong elements, is a failure. Prints every run's wall time, then a summary; exits
# 1 when any run hung or failed. MC_CLUSTER_FINALIZE_FIX=0 runs without the finalize fix (to count
# the hangs it removes). Always takes the cluster down at the end.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cluster=$root/scripts/cluster.sh
k=${1:?usage: reliability.sh K [--case a|b|repro|all] [--mbit M] [--timeout S] [--build DIR]}
shift
which_case=all mbit=200 timeout_s=60 build=$root/build/test
while [ $# -gt 0 ]; do
  case $1 in
    --case) which_case=$2; shift 2 ;;
    --mbit) mbit=$2; shift 2 ;;
    --timeout) timeout_s=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    *) echo "reliability.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
reshard=$build/examples/meshcast-reshard
gbps=$(awk -v m="$mbit" 'BEGIN { print m / 1000 }')

cleanup() { bash "$cluster" down >/dev/null 2>&1 || true; }
trap cleanup EXIT
trap 'exit 130' INT TERM

case_args() {
  case $1 in
    a) echo "-n 20 $reshard --shape 512x256x64 --src-mesh 2x4 --src-spec R,S1,R --dst-mesh 3x4 --dst-spec S0,R,R" \
            "--devices-per-host 4 --strategy send_recv --solver greedy --nic-gbps $gbps --latency-us 100" ;;
    b) echo "-ppn 2 -n 8 $reshard --shape 4096x4096 --src-mesh 4x2 --src-spec S0,S1 --dst-mesh 4x2 --dst-spec S1,S0" \
            "--same-mesh --devices-per-host 2 --nic-gbps $gbps --latency-us 100" ;;
    repro) echo "-ppn 2 -n 10 $repro 1048576" ;;
  esac
}

cases=()
case $which_case in
  all) cases=(a b repro) ;;
  a | b | repro) cases=("$which_case") ;;
  *) echo "reliability.sh: --case a|b|repro|all" >&2; exit 2 ;;
esac
for c in "${cases[@]}"; do
  if [ "$c" = repro ]; then
    repro=$root/build/cluster/finalize_repro
    mkdir -p "$root/build/cluster"
    mpicc -O2 -o "$repro" "$here/finalize_repro.c" || exit 1
  elif [ ! -x "$reshard" ]; then
    echo "reliability.sh: no $reshard (build the target meshcast-reshard)" >&2
    exit 2
  fi
done

bash "$cluster" up 5 "$mbit"
rc=$?
[ $rc -eq 0 ] || exit $rc
echo "reliability.sh: finalize fix $([ "${MC_CLUSTER_FINALIZE_FIX:-1}" = 0 ] && echo OFF || echo on)," \
     "$k runs per case, timeout $timeout_s s"
status=0
log=$(mktemp)
for c in "${cases[@]}"; do
  ok=0 hang=0 fail=0 walls=()
  for ((i = 1; i <= k; i++)); do
    start=$(date +%s.%N)
    # shellcheck disable=SC2046
    timeout -k 5 "$timeout_s" bash "$cluster" mpiexec $(case_args "$c") > "$log" 2>&1
    rc=$?
    wall=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
    line=$(grep -m1 -E '^(meshcast-reshard|finalize-repro):' "$log" || true)
    if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
      hang=$((hang + 1)); verdict=HANG
      bash "$cluster" down >/dev/null 2>&1; bash "$cluster" up 5 "$mbit" >/dev/null   # leave nothing behind
    elif [ $rc -ne 0 ] || { [ "$c" != repro ] && ! grep -q ' 0 wrong elements' <<< "$line"; }; then
      fail=$((fail + 1)); verdict="FAIL (exit $rc)"
      tail -5 "$log"
    else
      ok=$((ok + 1)); verdict=ok
    fi
    walls+=("$wall")
    reshard_s=$(sed -n 's/.* in \([0-9.]*\) s, .*/\1/p' <<< "$line")
    echo "case $c run $i: $verdict, wall ${wall} s${reshard_s:+, reshard ${reshard_s} s}"
  done
  summary=$(printf '%s\n' "${walls[@]}" | sort -n | awk '{ a[NR] = $1 } END { printf "wall min %.2f median %.2f max %.2f s", a[1], a[int((NR + 1) / 2)], a[NR] }')
  echo "case $c: $k runs: $ok ok, $hang hangs, $fail failures; $summary"
  [ $hang -eq 0 ] && [ $fail -eq 0 ] || status=1
done
rm -f "$log"
exit $status

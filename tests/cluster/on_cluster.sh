#!/usr/bin/env bash
# on_cluster.sh: brings an emulated cluster up, runs one MPI command across it, checks it, and
# always takes the cluster down again (ctest label `cluster`; exit 77 = skipped, no namespaces).
#
#   on_cluster.sh --hosts N --mbit M [--netem HOST:DELAY_MS:LOSS_PCT]... [--timeout S] [--runs K]
#                 [--expect REGEX] -- [-ppn P] -n R PROGRAM ARGS...
#   on_cluster.sh --hosts N --mbit M --plain -- COMMAND ARGS...
#
# Runs `scripts/cluster.sh mpiexec ARGS` (or, with --plain, COMMAND itself, on the machine, with the
# cluster up) K times (default 1). Passes when every run exits 0 within S seconds (default 120) and,
# with --expect, its output matches REGEX. Prints each run's output and wall time.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cluster=$here/../../scripts/cluster.sh
hosts=3 mbit=500 timeout_s=120 expect="" netem=() runs=1 plain=0
while [ $# -gt 0 ]; do
  case $1 in
    --hosts) hosts=$2; shift 2 ;;
    --mbit) mbit=$2; shift 2 ;;
    --netem) netem+=("$2"); shift 2 ;;
    --timeout) timeout_s=$2; shift 2 ;;
    --expect) expect=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --plain) plain=1; shift ;;
    --) shift; break ;;
    *) echo "on_cluster.sh: unknown option $1" >&2; exit 2 ;;
  esac
done

cleanup() { bash "$cluster" down >/dev/null 2>&1 || true; }
trap cleanup EXIT
trap 'exit 130' INT TERM

bash "$cluster" up "$hosts" "$mbit"
rc=$?
[ $rc -eq 0 ] || exit $rc   # 77: no namespaces here, the test is skipped
for spec in "${netem[@]}"; do
  IFS=: read -r h d l <<< "$spec"
  bash "$cluster" netem "$h" --delay-ms "$d" --loss "$l" || exit 1
  echo "on_cluster.sh: host $h: delay $d ms, loss $l %"
done

out=$(mktemp)
for ((run = 1; run <= runs; run++)); do
  start=$(date +%s.%N)
  if [ $plain -eq 1 ]; then
    timeout -k 5 "$timeout_s" "$@" > "$out" 2>&1
  else
    timeout -k 5 "$timeout_s" bash "$cluster" mpiexec "$@" > "$out" 2>&1
  fi
  rc=$?
  end=$(date +%s.%N)
  cat "$out"
  wall=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.2f", b - a }')
  if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
    echo "on_cluster.sh: run $run: FAILED: no exit within ${timeout_s} s (hang); cluster status:"
    bash "$cluster" status
    rm -f "$out"
    exit 1
  fi
  echo "on_cluster.sh: run $run: exit $rc after $wall s on $hosts hosts at $mbit Mbit/s"
  if [ $rc -ne 0 ]; then rm -f "$out"; exit 1; fi
  if [ -n "$expect" ] && ! grep -Eq "$expect" "$out"; then
    echo "on_cluster.sh: run $run: FAILED: output does not match '$expect'"
    rm -f "$out"
    exit 1
  fi
done
rm -f "$out"
# A delay line with loss must have dropped packets: else the run did not test loss.
for spec in "${netem[@]}"; do
  IFS=: read -r h d l <<< "$spec"
  counts=$(bash "$cluster" status | grep -A1 "^h$h " | grep 'delayline' || true)
  echo "on_cluster.sh: host $h: $counts"
  if awk -v l="$l" 'BEGIN { exit !(l > 0) }'; then
    dropped=$(sed -n 's/.*dropped \([0-9]*\); .*dropped \([0-9]*\)$/\1 \2/p' <<< "$counts")
    if [ -z "$dropped" ] || [ "$dropped" = "0 0" ]; then
      echo "on_cluster.sh: FAILED: host $h should lose $l % of its packets but its delay line dropped none"
      exit 1
    fi
  fi
done
exit 0

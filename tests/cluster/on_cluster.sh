#!/usr/bin/env bash
# on_cluster.sh: brings an emulated cluster up, runs one MPI command across it, checks it, and
# always takes the cluster down again (ctest label `cluster`; exit 77 = skipped, no namespaces).
#
#   on_cluster.sh --hosts N --mbit M [--netem HOST:DELAY_MS:LOSS_PCT]... [--timeout S]
#                 [--expect REGEX] -- [-ppn P] -n R PROGRAM ARGS...
#
# Passes when the command exits 0 within S seconds (default 120) and, with --expect, its output
# matches REGEX. Prints the command's output and its wall time.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cluster=$here/../../scripts/cluster.sh
hosts=3 mbit=500 timeout_s=120 expect="" netem=()
while [ $# -gt 0 ]; do
  case $1 in
    --hosts) hosts=$2; shift 2 ;;
    --mbit) mbit=$2; shift 2 ;;
    --netem) netem+=("$2"); shift 2 ;;
    --timeout) timeout_s=$2; shift 2 ;;
    --expect) expect=$2; shift 2 ;;
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
start=$(date +%s.%N)
timeout -k 5 "$timeout_s" bash "$cluster" mpiexec "$@" > "$out" 2>&1
rc=$?
end=$(date +%s.%N)
cat "$out"
wall=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.2f", b - a }')
if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
  echo "on_cluster.sh: FAILED: no exit within ${timeout_s} s (hang); cluster status:"
  bash "$cluster" status
  rm -f "$out"
  exit 1
fi
echo "on_cluster.sh: exit $rc after $wall s on $hosts hosts at $mbit Mbit/s"
if [ $rc -ne 0 ]; then rm -f "$out"; exit 1; fi
if [ -n "$expect" ] && ! grep -Eq "$expect" "$out"; then
  echo "on_cluster.sh: FAILED: output does not match '$expect'"
  rm -f "$out"
  exit 1
fi
rm -f "$out"
exit 0

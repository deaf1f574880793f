#!/usr/bin/env bash
# dtensor_vs_meshcast.sh: PyTorch DTensor `redistribute` (gloo, CPU) and meshcast-reshard side by
# side on the same emulated hosts (scripts/cluster.sh), one line per case with both times.
#
#   bench/dtensor_vs_meshcast.sh [--mbit M] [--repeat N] [--build DIR]     (VERBOSE=1: both tools' own lines too)
#
# Cases (same mesh, tensor 4096x4096, 4-byte elements: float32 for DTensor, int32 for meshcast):
#   1-D mesh of 4 devices on 4 hosts:     Shard(0) -> Shard(1)                  (meshcast S0,R -> R,S0)
#   2-D mesh (4,2) on 4 hosts of 2:       [Shard(0),Shard(1)] -> [Shard(1),Shard(0)]  (S0,S1 -> S1,S0)
# Both are timed alike: barrier, the reshard (DTensor: redistribute + to_local() waited and made
# contiguous), barrier; best of N repeats. Both check their result. torch comes from a virtual
# environment under build/ (made here: pip, the CPU wheel index first, else PyPI).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
cluster=$root/scripts/cluster.sh
mbit=500 repeat=5 build=$root/build/test
while [ $# -gt 0 ]; do
  case $1 in
    --mbit) mbit=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    *) echo "dtensor_vs_meshcast.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
reshard=$build/examples/meshcast-reshard
[ -x "$reshard" ] || { echo "dtensor_vs_meshcast.sh: no $reshard (build the target meshcast-reshard)" >&2; exit 2; }

venv=$root/build/torch-venv
if ! "$venv/bin/python" -c 'import torch.distributed.tensor' 2>/dev/null; then
  python3 -m venv "$venv" || exit 1
  "$venv/bin/pip" install --quiet torch numpy --index-url https://download.pytorch.org/whl/cpu ||
    "$venv/bin/pip" install --quiet torch numpy || { echo "dtensor_vs_meshcast.sh: torch cannot be installed" >&2; exit 1; }
fi
torch_version=$("$venv/bin/python" -c 'import torch; print(torch.__version__)')

cleanup() { bash "$cluster" down >/dev/null 2>&1 || true; }
trap cleanup EXIT
trap 'exit 130' INT TERM
bash "$cluster" up 4 "$mbit" || exit $?
gbps=$(awk -v m="$mbit" 'BEGIN { print m / 1000 }')
echo "4 emulated hosts, $mbit Mbit/s per NIC direction; torch $torch_version (gloo); best of $repeat"

run_case() {  # name ppn ranks mesh src dst
  local name=$1 ppn=$2 ranks=$3 mesh=$4 src=$5 dst=$6 out_d out_m t_d t_m comms
  out_d=$(MC_CLUSTER_FINALIZE_FIX=0 timeout -k 5 600 bash "$cluster" mpiexec -ppn "$ppn" -n "$ranks" \
    -genv MASTER_ADDR "${MC_CLUSTER_SUBNET:-10.99.0}.1" -genv MASTER_PORT 29511 -genv GLOO_SOCKET_IFNAME eth0 -genv OMP_NUM_THREADS 1 \
    "$venv/bin/python" "$here/dtensor_redistribute.py" --mesh "$mesh" --src "$src" --dst "$dst" \
    --shape 4096x4096 --repeat "$repeat" 2>&1)
  t_d=$(sed -n 's/^dtensor: .* best \([0-9.]*\) s .*; correct$/\1/p' <<< "$out_d")
  comms=$(sed -n 's/^dtensor: .*; collectives: \(.*\); correct$/\1/p' <<< "$out_d")
  out_m=$(timeout -k 5 600 bash "$cluster" mpiexec -ppn "$ppn" -n "$ranks" "$reshard" --shape 4096x4096 \
    --src-mesh "$mesh" --src-spec "$src" --dst-mesh "$mesh" --dst-spec "$dst" --same-mesh \
    --devices-per-host "$ppn" --nic-gbps "$gbps" --latency-us 100 --repeat "$repeat" 2>&1)
  t_m=$(sed -n 's/^meshcast-reshard: .* in \([0-9.]*\) s, .* 0 wrong elements$/\1/p' <<< "$out_m")
  if [ -z "$t_d" ]; then echo "$name: DTensor failed:"; tail -20 <<< "$out_d"; fi
  if [ -z "$t_m" ]; then echo "$name: meshcast-reshard failed:"; tail -20 <<< "$out_m"; fi
  if [ -n "$t_d" ] && [ -n "$t_m" ]; then
    awk -v n="$name" -v d="$t_d" -v m="$t_m" -v c="$comms" \
      'BEGIN { printf "%s: DTensor %.4f s, meshcast %.4f s, DTensor/meshcast %.2f (DTensor collectives: %s)\n", n, d, m, d / m, c }'
  fi
  if [ -n "${VERBOSE:-}" ]; then printf '%s\n%s\n' "$out_d" "$out_m" | grep -E '^(dtensor|meshcast-reshard):' | sed 's/^/    /'; fi
}

run_case "1-D mesh 4 on 4 hosts, Shard(0) -> Shard(1) (S0,R -> R,S0), 4096x4096 x 4 B" 1 4 4 S0,R R,S0
run_case "2-D mesh (4,2) on 4 hosts of 2, [Shard(0),Shard(1)] -> [Shard(1),Shard(0)] (S0,S1 -> S1,S0), 4096x4096 x 4 B" 2 8 4x2 S0,S1 S1,S0

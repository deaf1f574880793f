#!/usr/bin/env bash
# cluster.sh: an emulated multi-host cluster on one Linux machine, to run MPI programs "across hosts".
#
#   scripts/cluster.sh up N MBIT [--delay-ms D] [--loss PCT]   N hosts, every NIC direction MBIT Mbit/s
#   scripts/cluster.sh down                                    remove everything this script made
#   scripts/cluster.sh mpiexec [-ppn P] -n R PROG ARGS...      MPICH's mpiexec, rank r on host r / P
#                                                              (-ppn P0,P1,...: P0 ranks on h0, then P1 on h1, ...)
#   scripts/cluster.sh netem HOST [--delay-ms D] [--loss PCT]  set (or, with neither, clear) a host's delay/loss
#   scripts/cluster.sh cut HOST | restore HOST                 take a host's link down / up
#   scripts/cluster.sh exec HOST COMMAND...                    run a command on a host
#   scripts/cluster.sh status                                  hosts, addresses, links, shaping, counters
#
# HOST is an index (0..N-1), hK, or the host's address. Needs root, iproute2 (ip netns, tc) and a C
# compiler; where namespaces cannot be made it prints one line on stderr and exits 77.
#
# Topology. Each host is a network namespace mc-hK with one NIC, eth0 (10.99.0.K+1/24), a veth whose
# other end pK sits on bridge br0 in the switch namespace mc-sw. A head namespace mc-head
# (10.99.0.254, unshaped) also sits on the bridge; mpiexec runs there. Each NIC direction is shaped
# to MBIT with tc: the host's egress by a qdisc on eth0 (inside mc-hK), its ingress by a qdisc on pK
# (the switch port's egress). So two hosts sending to one share its ingress, and one host sending to
# two shares its egress. Nothing in the root namespace is touched. The prefix "mc-" and the subnet
# can be changed with MC_CLUSTER_PREFIX and MC_CLUSTER_SUBNET (three octets, e.g. 10.98.0) to run
# two clusters side by side.
#
# Delay and loss. This script does not use sch_netem: many VM kernels (Firecracker's, this
# project's CI machine) are built without it. A host with a delay or a loss rate gets a delay line
# instead (scripts/cluster/delayline.c, run in mc-sw between pK and a second veth pair whose end bK
# replaces pK on the bridge): every packet to or from the host is held D ms (each way, so a round
# trip to it grows by 2D) and dropped with probability PCT/100 (each way, per wire packet).
#
# TCP. Every host's route to the others uses congestion control MC_CLUSTER_TCP_CC (default cubic,
# Linux's default), set per route (congctl): a namespace inherits the machine's default (here
# bbr, which ignores random loss) and may switch only among the machine's allowed algorithms.
#
# Rates. The qdisc is tbf (token bucket, burst max(32 KB, 2 ms at MBIT), a drop-tail queue of
# MC_CLUSTER_QUEUE_MS, default 25 ms, at MBIT; MC_CLUSTER_QDISC=htb: an htb class and a pfifo of
# the same size). A host's own egress gives packets under 128 bytes (acknowledgements, MPI and UCX
# control messages) priority over bulk data, which waits in a 4 MB queue
# (MC_CLUSTER_HOST_QUEUE_BYTES; MC_CLUSTER_HOST_PRIORITY=0 leaves the plain token bucket), as a
# real host's NIC queue does; the switch port stays one FIFO. Measurements: docs/cluster.md.
#
# MPI. `cluster.sh mpiexec` runs MPICH's hydra inside mc-head with `-launcher ssh -launcher-exec
# <state>/ssh`, a wrapper that runs each hydra proxy inside its host's namespace (ip netns exec);
# the proxies connect back to mpiexec over the bridge (-iface eth0). The host file lists every host
# with P slots, P = -ppn if given, else ceil(R / N), so rank r lands on host floor(r / P).
# It sets, unless already set (why each, with the runs that showed it: docs/cluster.md):
#   UCX_TLS=tcp,self       between hosts only TCP, never shared memory or CMA, which would bypass
#                          the emulated NICs (all namespaces share one kernel and /dev/shm);
#   UCX_NET_DEVICES=eth0   the host's NIC, not lo;
#   UCX_RNDV_THRESH=1mb    messages up to 1 MiB (every chunk of a meshcast chain) go eagerly;
#   UCX_ZCOPY_THRESH=inf   no zero-copy sends (UCX 1.13.1's TCP transport aborts the surviving rank
#                          when a peer dies with zero-copy sends to it outstanding);
# and loads the finalize fix into every rank (mpiexec -genv LD_PRELOAD, unless MC_CLUSTER_FINALIZE_FIX=0):
#   <state>/libucx_finalize_progress.so (scripts/cluster/ucx_finalize_progress.c) keeps UCX
#   progressing while a rank waits in MPICH 4.0.2's finalize barrier, where a UCX flush waiting
#   for a peer's ACK otherwise hangs it. With it, ASAN_OPTIONS gets verify_asan_link_order=0.
# MC_CLUSTER_MPIEXEC names the mpiexec to run (default: mpiexec on PATH). State (host count, rate,
# the hydra wrapper, host file, helpers, delay-line logs) lives in /run/meshcast-cluster-<prefix>.
set -euo pipefail

P=${MC_CLUSTER_PREFIX:-mc-}
NET=${MC_CLUSTER_SUBNET:-10.99.0}
SW=${P}sw
HEAD=${P}head
STATE=/run/meshcast-cluster-${P%-}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

die() { echo "cluster.sh: $*" >&2; exit 1; }
skip() { echo "cluster.sh: cannot make network namespaces here: $*" >&2; exit 77; }

usage() {
  sed -n '2,13p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

check_capable() {
  [ "$(id -u)" -eq 0 ] || skip "not root"
  command -v ip >/dev/null || skip "no ip (iproute2)"
  command -v tc >/dev/null || skip "no tc (iproute2)"
  ip netns list >/dev/null 2>&1 || skip "ip netns does not work"
  local probe=${P}probe$$
  if ! ip netns add "$probe" 2>/dev/null; then skip "ip netns add failed"; fi
  local ok=1
  ip -n "$probe" link add name t0 type veth peer name t1 2>/dev/null || ok=0
  [ $ok -eq 1 ] && { tc -n "$probe" qdisc add dev t0 root handle 1: tbf rate 100mbit burst 32k latency 50ms 2>/dev/null || ok=0; }
  [ $ok -eq 1 ] && { ip -n "$probe" link add name b0 type bridge 2>/dev/null || ok=0; }
  ip netns del "$probe" 2>/dev/null || true
  [ $ok -eq 1 ] || skip "veth pairs, bridges or tc tbf are not available in this kernel"
}

# host_index HOST -> K
host_index() {
  local h=$1 n
  n=$(cat "$STATE/hosts_count" 2>/dev/null) || die "no cluster is up (run: cluster.sh up N MBIT)"
  case $h in
    "$NET".*) h=$(( ${h##*.} - 1 )) ;;
    "${P}"h*) h=${h#"${P}"h} ;;
    h*) h=${h#h} ;;
  esac
  [[ $h =~ ^[0-9]+$ ]] && [ "$h" -lt "$n" ] || die "no host '$1' (hosts are 0..$((n - 1)))"
  echo "$h"
}

our_namespaces() { ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^${P}(sw|head|h[0-9]+)$" || true; }

kill_namespace_processes() {
  local ns pids
  for ns in "$@"; do
    pids=$(ip netns pids "$ns" 2>/dev/null || true)
    [ -n "$pids" ] && kill -TERM $pids 2>/dev/null || true
  done
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    pids=""
    for ns in "$@"; do pids="$pids $(ip netns pids "$ns" 2>/dev/null || true)"; done
    [ -z "${pids// /}" ] && return 0
    sleep 0.2
  done
  # shellcheck disable=SC2086
  kill -KILL $pids 2>/dev/null || true
  sleep 0.2
}

cmd_down() {
  local spaces
  spaces=$(our_namespaces)
  if [ -n "$spaces" ]; then
    # shellcheck disable=SC2086
    kill_namespace_processes $spaces
    for ns in $spaces; do ip netns del "$ns" 2>/dev/null || true; done
  fi
  rm -rf "$STATE"
}

# host_qdisc NS DEV MBIT: shapes a host NIC's egress to MBIT Mbit/s (rate_qdisc), and below the
# token bucket serves small packets (under 128 bytes: TCP acknowledgements, MPI's and UCX's
# control messages) before bulk data, which waits in a queue of MC_CLUSTER_HOST_QUEUE_BYTES
# (default 4 MB) instead of being dropped at the host
host_qdisc() {
  local ns=$1 dev=$2 mbit=$3
  rate_qdisc "$ns" "$dev" "$mbit"
  [ "${MC_CLUSTER_QDISC:-tbf}" = tbf ] && [ "${MC_CLUSTER_HOST_PRIORITY:-1}" = 1 ] || return 0
  tc -n "$ns" qdisc add dev "$dev" parent 1:1 handle 10: htb default 20 r2q 10000
  tc -n "$ns" class add dev "$dev" parent 10: classid 10:1 htb rate 10gbit ceil 10gbit
  tc -n "$ns" class add dev "$dev" parent 10:1 classid 10:10 htb rate 5gbit ceil 10gbit prio 0
  tc -n "$ns" class add dev "$dev" parent 10:1 classid 10:20 htb rate 5gbit ceil 10gbit prio 1
  tc -n "$ns" qdisc add dev "$dev" parent 10:10 handle 110: bfifo limit 200000
  tc -n "$ns" qdisc add dev "$dev" parent 10:20 handle 120: bfifo limit "${MC_CLUSTER_HOST_QUEUE_BYTES:-4000000}"
  # IPv4 total length below 128: the top nine bits of the 16-bit field at offset 2 are zero.
  tc -n "$ns" filter add dev "$dev" parent 10: protocol ip prio 1 u32 match u16 0x0000 0xff80 at 2 flowid 10:10
}

# rate_qdisc NS DEV MBIT: shapes DEV's egress to MBIT Mbit/s
rate_qdisc() {
  local ns=$1 dev=$2 mbit=$3 burst queue_ms=${MC_CLUSTER_QUEUE_MS:-25}
  burst=$(awk -v m="$mbit" 'BEGIN { b = m * 1e6 / 8 * 0.002; if (b < 32000) b = 32000; printf "%d", b }')
  if [ "${MC_CLUSTER_QDISC:-tbf}" = htb ]; then
    tc -n "$ns" qdisc replace dev "$dev" root handle 1: htb default 10
    tc -n "$ns" class replace dev "$dev" parent 1: classid 1:10 htb rate "${mbit}mbit" ceil "${mbit}mbit" burst "$burst" cburst "$burst"
    local limit
    limit=$(awk -v m="$mbit" -v q="$queue_ms" 'BEGIN { l = m * 1e6 / 8 * q / 1000 / 1500; if (l < 20) l = 20; printf "%d", l }')
    tc -n "$ns" qdisc replace dev "$dev" parent 1:10 handle 10: pfifo limit "$limit"
  else
    tc -n "$ns" qdisc replace dev "$dev" root handle 1: tbf rate "${mbit}mbit" burst "$burst" latency "${queue_ms}ms"
  fi
}

build_helpers() {
  local cc=${CC:-cc}
  command -v "$cc" >/dev/null || { echo "cluster.sh: no C compiler ($cc): no delay line, no finalize fix" >&2; return 0; }
  "$cc" -O2 -o "$STATE/delayline" "$HERE/cluster/delayline.c" || die "cannot build the delay line"
  "$cc" -O2 -shared -fPIC -o "$STATE/libucx_finalize_progress.so" "$HERE/cluster/ucx_finalize_progress.c" -ldl ||
    die "cannot build the finalize fix"
}

write_ssh_wrapper() {
  cat > "$STATE/ssh" <<EOF
#!/usr/bin/env bash
# hydra's launcher (-launcher ssh -launcher-exec): "ssh [options] HOST COMMAND..." runs COMMAND, as a
# remote shell would, inside HOST's network namespace. Made by scripts/cluster.sh.
while [ \$# -gt 0 ]; do
  case \$1 in
    -[BbcDEeFIiJLlmOoPpRSWw]) shift 2 ;;
    -*) shift ;;
    *) break ;;
  esac
done
host=\${1#*@}
shift
case \$host in
  $NET.*) k=\$(( \${host##*.} - 1 )) ;;
  ${P}h*) k=\${host#${P}h} ;;
  h*) k=\${host#h} ;;
  *) echo "cluster ssh: unknown host \$host" >&2; exit 255 ;;
esac
exec ip netns exec "${P}h\$k" /bin/sh -c "exec \$*"
EOF
  chmod +x "$STATE/ssh"
}

# set_netem K DELAY_MS LOSS_PCT: a delay line for host K (or none when both are 0)
set_netem() {
  local k=$1 delay=$2 loss=$3 us ppm pidfile=$STATE/delayline.$1.pid
  us=$(awk -v d="$delay" 'BEGIN { printf "%d", d * 1000 }')
  ppm=$(awk -v l="$loss" 'BEGIN { printf "%d", l * 10000 }')
  [[ $us =~ ^[0-9]+$ && $ppm =~ ^[0-9]+$ && $ppm -le 1000000 ]] || die "bad --delay-ms '$delay' or --loss '$loss'"
  if [ -f "$pidfile" ]; then
    kill -TERM "$(cat "$pidfile")" 2>/dev/null || true
    rm -f "$pidfile"
    ip -n "$SW" link del "q$k" 2>/dev/null || true   # removes bK too
    ip -n "$SW" link set "p$k" master br0
  fi
  echo "$delay $loss" > "$STATE/netem.$k"
  if [ "$us" -eq 0 ] && [ "$ppm" -eq 0 ]; then return 0; fi
  [ -x "$STATE/delayline" ] || die "no delay line (no C compiler when the cluster came up)"
  ip -n "$SW" link add name "q$k" type veth peer name "b$k"
  ip -n "$SW" link set "q$k" up
  ip -n "$SW" link set "b$k" up
  ip -n "$SW" link set "p$k" nomaster
  ip -n "$SW" link set "b$k" master br0
  ip netns exec "$SW" setsid "$STATE/delayline" "p$k" "q$k" "$us" "$ppm" "$((k + 1))" \
    > "$STATE/delayline.$k.log" 2>&1 < /dev/null &
  echo $! > "$pidfile"
}

cmd_up() {
  [ $# -ge 2 ] || usage
  local n=$1 mbit=$2 delay=0 loss=0
  shift 2
  while [ $# -gt 0 ]; do
    case $1 in
      --delay-ms) delay=$2; shift 2 ;;
      --loss) loss=$2; shift 2 ;;
      *) die "up: unknown option '$1'" ;;
    esac
  done
  [[ $n =~ ^[0-9]+$ ]] && [ "$n" -ge 1 ] && [ "$n" -le 250 ] || die "up: N must be 1..250"
  [[ $mbit =~ ^[0-9]+([.][0-9]+)?$ ]] || die "up: MBIT must be a number"
  check_capable
  cmd_down
  mkdir -p "$STATE"
  build_helpers
  write_ssh_wrapper
  echo "$n" > "$STATE/hosts_count"
  echo "$mbit" > "$STATE/mbit"
  noipv6() { ip netns exec "$1" sh -c 'echo 1 > /proc/sys/net/ipv6/conf/all/disable_ipv6; echo 1 > /proc/sys/net/ipv6/conf/default/disable_ipv6' 2>/dev/null || true; }
  local cc=${MC_CLUSTER_TCP_CC:-cubic}
  ip netns add "$SW"
  noipv6 "$SW"
  ip -n "$SW" link set lo up
  ip -n "$SW" link add name br0 type bridge
  ip -n "$SW" link set br0 up
  ip netns add "$HEAD"
  noipv6 "$HEAD"
  ip -n "$HEAD" link set lo up
  ip -n "$SW" link add name head type veth peer name eth0 netns "$HEAD"
  ip -n "$SW" link set head master br0
  ip -n "$SW" link set head up
  ip -n "$HEAD" addr add "$NET.254/24" dev eth0
  ip -n "$HEAD" link set eth0 up
  for ((k = 0; k < n; k++)); do
    local ns=${P}h$k
    ip netns add "$ns"
    noipv6 "$ns"
    ip -n "$ns" link set lo up
    ip -n "$SW" link add name "p$k" type veth peer name eth0 netns "$ns"
    ip -n "$SW" link set "p$k" master br0
    ip -n "$SW" link set "p$k" up
    ip -n "$ns" addr add "$NET.$((k + 1))/24" dev eth0
    ip -n "$ns" link set eth0 up
    # per route, as a namespace may only pick the algorithms the machine allows (often reno, bbr)
    ip -n "$ns" route replace "$NET.0/24" dev eth0 congctl "$cc" ||
      die "TCP congestion control '$cc' is not available (MC_CLUSTER_TCP_CC)"
    host_qdisc "$ns" eth0 "$mbit"     # host egress
    rate_qdisc "$SW" "p$k" "$mbit"    # host ingress
    set_netem "$k" "$delay" "$loss"
  done
  echo "cluster.sh: $n hosts ${P}h0..${P}h$((n - 1)) ($NET.1-$NET.$n), ${mbit} Mbit/s each NIC direction, delay ${delay} ms, loss ${loss}%"
}

cmd_netem() {
  [ $# -ge 1 ] || usage
  local k delay=0 loss=0
  k=$(host_index "$1")
  shift
  while [ $# -gt 0 ]; do
    case $1 in
      --delay-ms) delay=$2; shift 2 ;;
      --loss) loss=$2; shift 2 ;;
      *) die "netem: unknown option '$1'" ;;
    esac
  done
  set_netem "$k" "$delay" "$loss"
}

cmd_cut() { local k; k=$(host_index "$1"); ip -n "$SW" link set "p$k" down; }
cmd_restore() { local k; k=$(host_index "$1"); ip -n "$SW" link set "p$k" up; }

cmd_exec() {
  [ $# -ge 2 ] || usage
  local k
  k=$(host_index "$1")
  shift
  exec ip netns exec "${P}h$k" "$@"
}

cmd_status() {
  [ -f "$STATE/hosts_count" ] || { echo "cluster.sh: no cluster is up"; return 0; }
  local n mbit
  n=$(cat "$STATE/hosts_count")
  mbit=$(cat "$STATE/mbit")
  echo "cluster: $n hosts, $mbit Mbit/s per NIC direction, qdisc ${MC_CLUSTER_QDISC:-tbf}, head ${HEAD} $NET.254, state $STATE"
  for ((k = 0; k < n; k++)); do
    local link nt tx rx
    link=$(ip -n "$SW" -o link show "p$k" | grep -q 'state UP' && echo up || echo CUT)
    nt=$(cat "$STATE/netem.$k" 2>/dev/null || echo "0 0")
    tx=$(tc -n "${P}h$k" -s qdisc show dev eth0 | awk '/Sent/ {sub(",", "", $7); print $2 " B (dropped " $7 ")"; exit}')
    rx=$(tc -n "$SW" -s qdisc show dev "p$k" | awk '/Sent/ {sub(",", "", $7); print $2 " B (dropped " $7 ")"; exit}')
    printf 'h%-3d %-15s link %-3s delay %s ms loss %s%%  sent: %s  received: %s\n' "$k" "$NET.$((k + 1))" "$link" \
      "${nt% *}" "${nt#* }" "$tx" "$rx"
    local log="$STATE/delayline.$k.log" before
    before=$( { wc -l < "$log"; } 2>/dev/null || echo 0)  # braces: the redirect's own error is silenced too
    if [ -f "$STATE/delayline.$k.pid" ] && kill -USR1 "$(cat "$STATE/delayline.$k.pid")" 2>/dev/null; then
      # The delay line answers with a line of counts; wait for it (up to 5 s on a busy machine).
      for _ in $(seq 50); do [ "$( { wc -l < "$log"; } 2>/dev/null || echo 0)" -gt "$before" ] && break; sleep 0.1; done
      echo "     $(tail -1 "$log")"
    fi
  done
}

cmd_mpiexec() {
  [ -f "$STATE/hosts_count" ] || die "no cluster is up (run: cluster.sh up N MBIT)"
  local n ranks="" ppn="" args=()
  n=$(cat "$STATE/hosts_count")
  # hydra options understood before the program: -n/-np R, -ppn P, -genv/-env NAME VALUE,
  # -genvlist/-envlist/-wdir X, -genvall/-genvnone/-l/-prepend-rank/-verbose; the first other word is the program.
  while [ $# -gt 0 ]; do
    case $1 in
      -n | -np) ranks=$2; args+=("$1" "$2"); shift 2 ;;
      -ppn) ppn=$2; shift 2 ;;
      -genv | -env) args+=("$1" "$2" "$3"); shift 3 ;;
      -genvlist | -envlist | -wdir) args+=("$1" "$2"); shift 2 ;;
      -genvall | -genvnone | -l | -prepend-rank | -verbose) args+=("$1"); shift ;;
      -f | -hostfile | -machinefile | -hosts | -host | -launcher | -launcher-exec | -bootstrap | -bootstrap-exec | -iface)
        die "mpiexec: $1 is set by cluster.sh" ;;
      *) args+=("$@"); break ;;
    esac
  done
  [ -n "$ranks" ] || die "mpiexec: give -n R before the program"
  [ -n "$ppn" ] || ppn=$(( (ranks + n - 1) / n ))
  : > "$STATE/hostfile"
  if [[ $ppn == *,* ]]; then
    # Ranks per host, host by host: a placement such as meshcast's default one (a source mesh whose
    # size is not a multiple of the devices per host leaves its last host partly empty).
    local counts k=0
    IFS=, read -r -a counts <<< "$ppn"
    [ ${#counts[@]} -le "$n" ] || die "mpiexec: -ppn lists ${#counts[@]} hosts but $n are up"
    for c in "${counts[@]}"; do
      [[ $c =~ ^[1-9][0-9]*$ ]] || die "mpiexec: -ppn count '$c' is not a positive number"
      echo "$NET.$((k + 1)):$c" >> "$STATE/hostfile"
      k=$((k + 1))
    done
  else
    for ((k = 0; k < n; k++)); do echo "$NET.$((k + 1)):$ppn" >> "$STATE/hostfile"; done
  fi
  export UCX_TLS=${UCX_TLS:-tcp,self}
  export UCX_NET_DEVICES=${UCX_NET_DEVICES:-eth0}
  # MC_CLUSTER_RNDV_DEFAULT=1 tells meshcast-reshard that the threshold is this script's default,
  # which its concurrent mode may raise (examples/cli/reshard_transport.hpp), not the user's choice.
  [ -n "${UCX_RNDV_THRESH:-}" ] || export MC_CLUSTER_RNDV_DEFAULT=1
  export UCX_RNDV_THRESH=${UCX_RNDV_THRESH:-1mb}
  export UCX_ZCOPY_THRESH=${UCX_ZCOPY_THRESH:-inf}
  local genv=()
  if [ "${MC_CLUSTER_FINALIZE_FIX:-1}" != 0 ] && [ -f "$STATE/libucx_finalize_progress.so" ]; then
    # AddressSanitizer refuses to start when a preloaded library comes before its runtime.
    genv=(-genv LD_PRELOAD "$STATE/libucx_finalize_progress.so${LD_PRELOAD:+:$LD_PRELOAD}"
          -genv ASAN_OPTIONS "${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0")
  fi
  exec ip netns exec "$HEAD" "${MC_CLUSTER_MPIEXEC:-mpiexec}" -launcher ssh -launcher-exec "$STATE/ssh" -f "$STATE/hostfile" \
    -iface eth0 "${genv[@]}" "${args[@]}"
}

[ $# -ge 1 ] || usage
sub=$1
shift
case $sub in
  up) cmd_up "$@" ;;
  down) [ "$(id -u)" -eq 0 ] || skip "not root"; cmd_down ;;
  mpiexec) cmd_mpiexec "$@" ;;
  netem) cmd_netem "$@" ;;
  cut) [ $# -eq 1 ] || usage; cmd_cut "$1" ;;
  restore) [ $# -eq 1 ] || usage; cmd_restore "$1" ;;
  exec) cmd_exec "$@" ;;
  status) cmd_status ;;
  -h | --help | help) usage ;;
  *) usage ;;
esac

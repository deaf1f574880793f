#!/usr/bin/env python3
"""Measures the emulated cluster's NIC shaping with plain TCP transfers (python sockets, nothing
installed): one host to another, two hosts to one (they share its ingress), one host to two (they
share its egress). Needs a cluster of at least 3 hosts (scripts/cluster.sh up 3 MBIT).

Usage: shaping.py [--seconds S] [--check TOLERANCE] [--attempts K]
Prints one line per case and attempt: each flow's goodput (TCP payload) in Mbit/s, their total, and
that total on the wire (x 1514/1448: Ethernet + IP + TCP headers with timestamps around each
1448-byte segment; tc counts whole frames). With --check, exits 1 when a case's wire total exceeds
MBIT by more than TOLERANCE (e.g. 0.15) in any attempt (two flows through one NIC direction must
share MBIT, not get 2 x MBIT: no amount of load on the machine makes a shaped link faster), or falls
short of it by more than TOLERANCE in every one of K attempts (default 3): a busy machine can starve
the senders for a while, so a short attempt is repeated, and only a link that never reaches its rate
fails. How two flows split the rate is TCP's business (two CUBIC flows in one FIFO queue split it
unevenly over a few seconds), so the split is printed, not checked.
"""
import argparse
import json
import os
import subprocess
import sys
import time

PREFIX = os.environ.get("MC_CLUSTER_PREFIX", "mc-")
NET = os.environ.get("MC_CLUSTER_SUBNET", "10.99.0")
STATE = f"/run/meshcast-cluster-{PREFIX.rstrip('-')}"

RECEIVER = r"""
import json, socket, sys, threading, time
port, flows = int(sys.argv[1]), int(sys.argv[2])
srv = socket.socket(); srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("0.0.0.0", port)); srv.listen(flows)
print("ready", flush=True)
out = [None] * flows
def serve(i, conn):
    # (time, bytes so far) every 5 ms: the caller measures all flows over one common window
    total = 0; samples = []; last = 0.0
    while True:
        b = conn.recv(1 << 20)
        now = time.monotonic()
        if not b: break
        total += len(b)
        if now - last >= 0.005: samples.append((now, total)); last = now
    samples.append((time.monotonic(), total))
    out[i] = samples
threads = []
for i in range(flows):
    c, _ = srv.accept()
    t = threading.Thread(target=serve, args=(i, c)); t.start(); threads.append(t)
for t in threads: t.join()
print(json.dumps(out), flush=True)
"""

SENDER = r"""
import socket, sys, time
host, port, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
s = socket.create_connection((host, port))
buf = b"x" * (1 << 20); end = time.monotonic() + seconds
while time.monotonic() < end: s.sendall(buf)
s.close()
"""


def ns(k):
    return f"{PREFIX}h{k}"


def run_case(name, flows, seconds, skip, port):
    """flows: list of (sender host, receiver host). One receiver process per receiving host."""
    receivers = {}
    for _, dst in flows:
        receivers.setdefault(dst, 0)
        receivers[dst] += 1
    procs = {}
    for dst, count in receivers.items():
        p = subprocess.Popen(["ip", "netns", "exec", ns(dst), sys.executable, "-c", RECEIVER, str(port), str(count)],
                             stdout=subprocess.PIPE, text=True)
        assert p.stdout.readline().strip() == "ready"
        procs[dst] = p
    senders = [subprocess.Popen(["ip", "netns", "exec", ns(src), sys.executable, "-c", SENDER, f"{NET}.{dst + 1}", str(port), str(seconds)])
               for src, dst in flows]
    for s in senders:
        s.wait(timeout=seconds + 30)
    series = {}
    for dst, p in procs.items():
        out, _ = p.communicate(timeout=30)
        series[dst] = json.loads(out.strip().splitlines()[-1])
    # one window for all flows (CLOCK_MONOTONIC is the machine's, whatever the namespace): from
    # `skip` after the last flow's first byte (slow start, the bucket's burst) to the first flow's end
    everything = [f for dst in series for f in series[dst]]
    start = max(f[0][0] for f in everything) + skip
    end = min(f[-1][0] for f in everything) - 0.05
    if end - start < 0.5:
        return None  # a sender started late (a busy machine): no window to measure in

    def at(f, t):  # bytes received by time t (linear between samples)
        for (t0, b0), (t1, b1) in zip(f, f[1:]):
            if t0 <= t <= t1:
                return b0 + (b1 - b0) * ((t - t0) / (t1 - t0) if t1 > t0 else 1)
        return f[-1][1] if t > f[-1][0] else f[0][1]

    return {dst: [(at(f, end) - at(f, start)) * 8 / (end - start) / 1e6 for f in series[dst]] for dst in series}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument("--skip", type=float, default=0.5)
    ap.add_argument("--check", type=float, default=None)
    ap.add_argument("--attempts", type=int, default=3)
    a = ap.parse_args()
    try:
        mbit = float(open(f"{STATE}/mbit").read())
        hosts = int(open(f"{STATE}/hosts_count").read())
    except OSError:
        print("shaping.py: no cluster is up (scripts/cluster.sh up 3 MBIT)", file=sys.stderr)
        return 2
    if hosts < 3:
        print("shaping.py: needs 3 hosts", file=sys.stderr)
        return 2
    cases = [
        ("one flow h1 -> h0", [(1, 0)]),
        ("two senders h1,h2 -> h0 (share h0 ingress)", [(1, 0), (2, 0)]),
        ("one sender h0 -> h1,h2 (share h0 egress)", [(0, 1), (0, 2)]),
    ]
    wire = 1514 / 1448
    bad = 0
    for i, (name, flows) in enumerate(cases):
        over = reached = False
        for attempt in range(1, max(1, a.attempts) + 1):
            rates = run_case(name, flows, a.seconds, a.skip, 47000 + 10 * i + attempt)
            if rates is None:
                print(f"{name}, attempt {attempt}: the flows overlapped too briefly to measure (machine busy?)", flush=True)
                continue
            each = [r for dst in sorted(rates) for r in rates[dst]]
            total = sum(each)
            share = total * wire / mbit
            verdict = ""
            if a.check is not None:
                over |= share > 1 + a.check
                reached |= share >= 1 - a.check
                verdict = (" ABOVE THE RATE" if share > 1 + a.check else " short (machine busy?)" if share < 1 - a.check
                           else " ok")
            print(f"{name}, attempt {attempt}: per flow {', '.join(f'{r:.1f}' for r in each)} Mbit/s goodput, total "
                  f"{total:.1f} Mbit/s goodput = {total * wire:.1f} Mbit/s on the wire ({share:.1%} of {mbit:g}){verdict}",
                  flush=True)
            if a.check is None or reached:
                break
        if a.check is not None and (over or not reached):
            bad += 1
            print(f"{name}: MISSED (tolerance {a.check:.0%}): " + ("a shaped NIC carried more than its rate" if over else
                  f"the rate was not reached in {a.attempts} attempts"), flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

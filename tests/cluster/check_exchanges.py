#!/usr/bin/env python3
"""Exchanges in ordered mode (cluster.exchange): a same-mesh transpose on 4 hosts of 2 devices,
where devices of one host pass NIC tokens and so become ready for the two directions of an
exchange at different times. The executor must post the two directions of an exchange together,
a rendezvous send before its receive, at both ends: over UCX/TCP the handshake of a send posted
after the reverse data began waits behind all of it (the transfer took twice its time).

Runs it --runs times (the trace holds one run) and reads each execution trace: for every pair of transfers between two devices
of different hosts in opposite directions that the model starts at one time (an exchange), and
for both devices, the send's measured start must not come after the receive's. Fails when the
case has no such pairs. Prints measured and predicted times.

  check_exchanges.py --reshard PROGRAM [--cluster "bash scripts/cluster.sh"] [--runs K]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def one_run(args, dph):
    with tempfile.TemporaryDirectory() as tmp:
        trace = os.path.join(tmp, "trace.json")
        cmd = args.cluster.split() + ["mpiexec", "-ppn", str(dph), "-n", "8", args.reshard, "--shape", "4096x4096",
                                      "--src-mesh", "4x2", "--src-spec", "S0,S1", "--dst-mesh", "4x2", "--dst-spec", "S1,S0",
                                      "--same-mesh", "--devices-per-host", str(dph), "--strategy", "send_recv",
                                      "--solver", "greedy", "--mode", "ordered", "--nic-gbps", "0.2",
                                      "--nic-efficiency", "0.956", "--latency-us", "100",
                                      "--timeout-s", "60", "--json", "--exec-trace", trace]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            print(r.stdout, r.stderr, sep="\n")
            print(f"check_exchanges.py: meshcast-reshard exited {r.returncode}")
            return False
        result = json.loads([l for l in r.stdout.splitlines() if l.startswith("{")][-1])
        events = json.load(open(trace))["traceEvents"]
    model, measured = {}, {}
    for e in events:
        i = e["args"]["transfer"]
        if e["cat"] == "model":
            m = model.setdefault(i, {"start": e["ts"], "sender": e["args"]["sender"], "bytes": e["args"]["bytes"],
                                     "devices": set()})
            m["devices"].add(e["tid"])
        elif e["cat"] == "measured":
            measured[(i, e["tid"])] = e["ts"]
    by_pair = {}
    for i, m in model.items():
        receivers = m["devices"] - {m["sender"]}
        if len(receivers) != 1:
            continue
        (receiver,) = receivers
        if m["sender"] // dph != receiver // dph:
            by_pair.setdefault((m["sender"], receiver), []).append(i)
    exchanges, bad = 0, []
    for (a, b), sends in by_pair.items():
        for i in sends:
            for j in by_pair.get((b, a), []):
                if abs(model[i]["start"] - model[j]["start"]) > 1e-3 or model[i]["bytes"] <= args.eager_bytes:
                    continue  # microseconds in the trace
                exchanges += 1
                # At device a, transfer i is the send and j the receive.
                if measured[(i, a)] > measured[(j, a)]:
                    bad.append(f"device {a}: receive of transfer {j} started {(measured[(i, a)] - measured[(j, a)]) / 1000:.2f} ms "
                               f"before the send of transfer {i} (an exchange with device {b})")
    print(f"check_exchanges.py: {exchanges} exchanges (each counted from both ends); measured {result['seconds']:.3f} s, "
          f"predicted {result['predicted_seconds']:.3f} s ({result['seconds'] / result['predicted_seconds']:.3f}), "
          f"{result['wrong_elements']} wrong elements")
    for line in bad:
        print("  " + line)
    return exchanges > 0 and not bad and result["wrong_elements"] == 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reshard", required=True)
    ap.add_argument("--cluster", default=f"bash {os.path.join(ROOT, 'scripts', 'cluster.sh')}")
    ap.add_argument("--runs", type=int, default=4)
    ap.add_argument("--eager-bytes", type=int, default=1 << 20, help="messages up to this size go eagerly (no handshake)")
    args = ap.parse_args()
    ok = all([one_run(args, 2) for _ in range(args.runs)])
    print("check_exchanges.py: " + ("ok" if ok else "FAILED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

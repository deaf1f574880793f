#!/usr/bin/env python3
"""How the ordered executor posts, read from its execution traces on the emulated cluster (4
hosts of 2 devices, 200 Mbit/s), where devices of one host pass NIC tokens and so become ready at
different times. Runs meshcast-reshard --runs times (a trace holds one run) and checks each trace.

--check exchanges: a (4,2) same-mesh transpose of 4 MiB pieces. At both ends of every exchange
  (two devices on different hosts sending each other a rendezvous transfer at one model time),
  the send is posted no later than the receive: over UCX/TCP the handshake of a send posted
  after the reverse data began waits behind all of it (the transfer took twice its time). Fails
  when the case has no exchange.
--check clearance: a same-mesh (8) reshard of 786,432- and 638,976-byte pieces, below the eager
  limit. Every such transfer's data leaves its sender only once its receiver has started the
  receive (its clearance): eager data sent earlier flowed into a NIC still busy with the transfer
  before it, and both ran slow. Times are on the machine's one steady clock (the ranks share it);
  8 ms are allowed for a rank descheduled between two marks; eager data unchecked started tens of
  ms early here. Fails when the case has no
  such transfer.

  check_ordered.py --reshard PROGRAM --check exchanges|clearance [--cluster "bash scripts/cluster.sh"] [--runs K]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DPH = 2
CASES = {
    "exchanges": ["--shape", "4096x4096", "--src-mesh", "4x2", "--src-spec", "S0,S1", "--dst-mesh", "4x2", "--dst-spec",
                  "S1,S0"],
    "clearance": ["--shape", "250x128x384", "--src-mesh", "8", "--src-spec", "S0,R,R", "--dst-mesh", "8", "--dst-spec",
                  "R,R,S0"],
}


def run(args, trace):
    cmd = args.cluster.split() + ["mpiexec", "-ppn", str(DPH), "-n", "8", args.reshard] + CASES[args.check] + [
        "--same-mesh", "--devices-per-host", str(DPH), "--strategy", "send_recv", "--solver", "greedy", "--mode",
        "ordered", "--nic-gbps", "0.2", "--latency-us", "100", "--eager-bytes", str(args.eager_bytes), "--timeout-s",
        "60", "--json", "--exec-trace", trace]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        print(r.stdout, r.stderr, sep="\n")
        print(f"check_ordered.py: meshcast-reshard exited {r.returncode}")
        return None, None
    result = json.loads([l for l in r.stdout.splitlines() if l.startswith("{")][-1])
    model, measured = {}, {}
    for e in json.load(open(trace))["traceEvents"]:
        i = e["args"]["transfer"]
        if e["cat"] == "model":
            m = model.setdefault(i, {"start": e["ts"], "sender": e["args"]["sender"], "bytes": e["args"]["bytes"],
                                     "devices": set()})
            m["devices"].add(e["tid"])
        elif e["cat"] == "measured":
            # On the rank's own clock from its run's start, shifted to one clock: the emulated
            # cluster's ranks share the machine's steady clock (began_s, in seconds).
            measured[(i, e["tid"])] = e["ts"] + e["args"].get("began_s", 0) * 1e6
    remote = {}  # (sender, receiver) -> transfers between devices of different hosts
    for i, m in model.items():
        receivers = m["devices"] - {m["sender"]}
        if len(receivers) == 1:
            (receiver,) = receivers
            if m["sender"] // DPH != receiver // DPH:
                remote.setdefault((m["sender"], receiver), []).append(i)
    return result, (model, measured, remote)


def exchanges(args, model, measured, remote):
    count, bad = 0, []
    for (a, b), sends in remote.items():
        for i in sends:
            for j in remote.get((b, a), []):
                if abs(model[i]["start"] - model[j]["start"]) > 1e-3 or model[i]["bytes"] <= args.eager_bytes:
                    continue  # microseconds in the trace
                count += 1
                # At device a, transfer i is the send and j the receive.
                if measured[(i, a)] > measured[(j, a)]:
                    bad.append(f"device {a}: receive of transfer {j} started {(measured[(i, a)] - measured[(j, a)]) / 1000:.2f} ms "
                               f"before the send of transfer {i} (an exchange with device {b})")
    return f"{count} exchanges (each counted from both ends)", count, bad


def clearance(args, model, measured, remote):
    count, bad = 0, []
    for (a, b), sends in remote.items():
        for i in sends:
            if not 64 << 10 < model[i]["bytes"] <= args.eager_bytes:
                continue
            count += 1
            early = (measured[(i, b)] - measured[(i, a)]) / 1000
            if early > 8.0:
                bad.append(f"transfer {i}: device {a} sent its data {early:.2f} ms before device {b} started the receive")
    return f"{count} eager transfers", count, bad


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reshard", required=True)
    ap.add_argument("--check", required=True, choices=sorted(CASES))
    ap.add_argument("--cluster", default=f"bash {os.path.join(ROOT, 'scripts', 'cluster.sh')}")
    ap.add_argument("--runs", type=int, default=4)
    ap.add_argument("--eager-bytes", type=int, default=1 << 20, help="messages up to this size go eagerly")
    args = ap.parse_args()
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        for k in range(args.runs):
            # The clearance check compares times taken on two ranks, on the machine's one steady
            # clock (the trace's began_s). A run flagged is still taken again, up to 3 times in
            # all (a rank descheduled between its clearance and its trace mark, 8 ranks on 2
            # cores); a real early send (tens of ms on every attempt) fails all of them.
            for attempt in range(3 if args.check == "clearance" else 1):
                result, parsed = run(args, os.path.join(tmp, f"trace{k}.json"))
                if result is None:
                    break
                what, count, bad = (exchanges if args.check == "exchanges" else clearance)(args, *parsed)
                print(f"check_ordered.py: {what}; measured {result['seconds']:.3f} s, predicted {result['predicted_seconds']:.3f} s "
                      f"({result['seconds'] / result['predicted_seconds']:.3f}), {result['wrong_elements']} wrong elements")
                for line in bad:
                    print("  " + line)
                if not bad or result["wrong_elements"] != 0 or count == 0:
                    break
                print(f"check_ordered.py: run {k}, attempt {attempt + 1}: flagged; taken again")
            if result is None:
                ok = False
                continue
            ok &= count > 0 and not bad and result["wrong_elements"] == 0
    print("check_ordered.py: " + ("ok" if ok else "FAILED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

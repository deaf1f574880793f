#!/usr/bin/env python3
"""staging_cap.py: what the staging cap holds a rank to, on the emulated cluster (issue 20's
"peak_rss_bytes <= shard_bytes + cap + the MPI runtime's own"; docs/whole_model.md).

    sudo python3 bench/staging_cap.py --build build/test [--hosts 4] [--ppn 4] [--mbit 200]
                                      [--caps 0,16777216] [--tensors 8] [--rows 2048] [--repeat 2]

A manifest of transposes (S0,S1 -> S1,S0, int32, --rows x --rows each: every region strided, so
every byte is packed and unpacked) from a 2x4 trainer mesh on the first half of the hosts to a
2x4 mesh on the other half runs under each cap with `meshcast-reshard --manifest --json`, beside
an empty manifest (the MPI runtime's own peak RSS). Prints one row per cap: seconds, predicted,
measured / predicted, peak staging, shard bytes, peak RSS and what the cap allows.
"""
import argparse
import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
from cluster_flags import CLUSTER, add_cluster_flags  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    add_cluster_flags(ap, hosts=4, ppn=4)
    ap.add_argument("--caps", default="0,16777216")
    ap.add_argument("--tensors", type=int, default=8)
    ap.add_argument("--rows", type=int, default=2048)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--mode", default="ordered")
    a = ap.parse_args()
    tool = os.path.join(a.build, "examples", "meshcast-reshard")
    ranks = a.hosts * a.ppn
    half = a.hosts // 2
    tmp = tempfile.mkdtemp(prefix="staging-cap-")
    atexit.register(shutil.rmtree, tmp, ignore_errors=True)  # leave nothing in /tmp
    model = {"devices_per_host": a.ppn, "src": {"mesh": f"{half}x{a.ppn}"},
             "dst": {"mesh": f"{a.hosts - half}x{a.ppn}"},
             "tensors": [{"name": f"w{k}", "shape": [a.rows, a.rows], "dtype_bytes": 4, "src_spec": "S0,S1",
                          "dst_spec": "S1,S0"} for k in range(a.tensors)]}
    empty = dict(model, tensors=[])
    paths = {}
    for name, m in [("model", model), ("empty", empty)]:
        paths[name] = os.path.join(tmp, f"{name}.json")
        with open(paths[name], "w") as f:
            json.dump(m, f)
    rc = subprocess.run(["bash", CLUSTER, "up", str(a.hosts), str(a.mbit)]).returncode
    if rc:
        return rc
    rows = []
    try:
        def run(path, cap):
            r = subprocess.run(["bash", CLUSTER, "mpiexec", "-ppn", str(a.ppn), "-n", str(ranks), tool, "--manifest", path,
                                "--json", "--mode", a.mode, "--max-staging-bytes", str(cap), "--repeat", str(a.repeat),
                                "--nic-gbps", str(a.mbit / 1000), "--latency-us", "40"],
                               capture_output=True, text=True, timeout=1800)
            line = [x for x in r.stdout.splitlines() if x.startswith("{")]
            if r.returncode or not line:
                print(r.stderr[-2000:], file=sys.stderr)
                return None
            return json.loads(line[-1])
        runtime = run(paths["empty"], 0)
        for cap in [int(c) for c in a.caps.split(",")]:
            j = run(paths["model"], cap)
            if j:
                j["cap"] = cap
                rows.append(j)
                print(json.dumps(j), flush=True)
    finally:
        subprocess.run(["bash", CLUSTER, "down"])
    base = runtime["peak_rss_bytes"] if runtime else 0
    mib = 2 ** 20
    print(f"\n{a.hosts} hosts of {a.ppn} ranks, {a.mbit:g} Mbit/s, {a.mode} mode, {a.tensors} transposes of "
          f"{a.rows}x{a.rows} int32 ({a.tensors * a.rows * a.rows * 4 / mib:.0f} MiB); the MPI runtime alone "
          f"(empty manifest): peak RSS {base / mib:.1f} MiB\n")
    print("| cap | seconds | predicted | measured / predicted | transfers | peak staging | shard bytes | peak RSS | "
          "shards + cap + runtime | wrong |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for j in rows:
        cap = j["cap"]
        allowed = j["shard_bytes"] + cap + base
        print(f"| {cap / mib:.0f} MiB{' (none)' if cap == 0 else ''} | {j['seconds']:.3f} | {j['predicted_seconds']:.3f} | "
              f"{j['seconds'] / j['predicted_seconds']:.2f} | {j['transfers']} | {j['peak_staging_bytes'] / mib:.1f} MiB | "
              f"{j['shard_bytes'] / mib:.1f} MiB | {j['peak_rss_bytes'] / mib:.1f} MiB | "
              f"{'-' if cap == 0 else f'{allowed / mib:.1f} MiB'} | {j['wrong_elements']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

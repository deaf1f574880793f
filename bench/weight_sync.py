#!/usr/bin/env python3
"""weight_sync.py: a model's weights moved the frameworks' ways beside meshcast on the emulated
cluster (issue 20's side-by-side table; docs/whole_model.md).

    python3 bench/weight_sync.py --build build/test [--hosts 4] [--ppn 4] [--mbit 200] [--repeat 3]
                                 [--models llama3-8b,moe,pp] [--scale 32] [--layers 4] [--json OUT]

For each model, bench/manifests.py writes a manifest scaled for the emulated NICs: the trainer on
hosts 0..H/2-1 (FSDP over axis 0, TP over axis 1), the inference engines on the other hosts (TP
inside a host, one replica per host). Each way runs as its own job (meshcast-bench-weight-sync:
allgather, broadcast, owner, serial, batch), best of --repeat, every element checked; beside them
meshcast-plan --manifest gives the busiest-NIC bound; meshcast's ways print the prediction of the
schedules they ran (the same network: --nic-efficiency, 100 us latency). Prints a markdown table:
seconds, ratio to the bound, meshcast's predictions, peak RSS per rank.
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
WAYS = ["allgather", "broadcast", "owner", "serial", "batch"]
NAMES = {"allgather": "(a) all-gather, slice", "broadcast": "(b) gather, broadcast", "owner": "(c) round-robin owner",
         "serial": "(d) meshcast, one at a time", "batch": "(e) meshcast batch, auto"}


def main():
    ap = argparse.ArgumentParser()
    add_cluster_flags(ap, hosts=4, ppn=4)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--models", default="llama3-8b,moe,pp")
    ap.add_argument("--scale", type=int, default=32)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--nic-efficiency", type=float, default=0.957)
    ap.add_argument("--json")
    a = ap.parse_args()
    half = a.hosts // 2
    train, infer = f"{half}x{a.ppn}", f"{a.hosts - half}x{a.ppn}"
    ranks = a.hosts * a.ppn
    tool = os.path.join(a.build, "bench", "meshcast-bench-weight-sync")
    plan = os.path.join(a.build, "examples", "meshcast-plan")
    tmp = tempfile.mkdtemp(prefix="weight-sync-")
    atexit.register(shutil.rmtree, tmp, ignore_errors=True)  # leave nothing in /tmp
    rc = subprocess.run(["bash", CLUSTER, "up", str(a.hosts), str(a.mbit)]).returncode
    if rc:
        return rc
    rows = []
    try:
        for model in a.models.split(","):
            path = os.path.join(tmp, f"{model}.json")
            extra = ["--stages", "2"] if model == "pp" else []
            subprocess.run([sys.executable, os.path.join(HERE, "manifests.py"), model, "--scale", str(a.scale), "--layers",
                            str(a.layers), "--train-mesh", train, "--infer-mesh", infer, "--devices-per-host", str(a.ppn),
                            "-o", path] + extra, check=True)
            p = json.loads(subprocess.run([plan, "--manifest", path, "--json", "--nic-gbps", str(a.mbit / 1000),
                                           "--nic-efficiency", str(a.nic_efficiency), "--latency-us", "100"],
                                          capture_output=True, text=True, check=True).stdout)
            for way in WAYS:
                # The model flags are meshcast's: only its own ways (serial, batch) take them.
                model_flags = (["--nic-gbps", str(a.mbit / 1000), "--nic-efficiency", str(a.nic_efficiency), "--latency-us", "100"]
                               if way in ("serial", "batch") else [])
                r = subprocess.run(["bash", CLUSTER, "mpiexec", "-ppn", str(a.ppn), "-n", str(ranks), tool, "--manifest", path,
                                    "--way", way, "--repeat", str(a.repeat), *model_flags],
                                   capture_output=True, text=True, timeout=1800)
                line = [x for x in r.stdout.splitlines() if x.startswith("{")]
                j = json.loads(line[-1]) if line else {"way": way, "seconds": None, "wrong_elements": None, "peak_rss_bytes": None}
                j.update(model=model, bound_s=p["physical_bound_seconds"], predicted_s=p["predicted_seconds"], status=r.returncode,
                         bytes=p["bytes"], tensors=p["tensors"])
                rows.append(j)
                print(json.dumps(j), flush=True)
    finally:
        subprocess.run(["bash", CLUSTER, "down"])
    print(f"\n{a.hosts} hosts of {a.ppn} ranks, {a.mbit:g} Mbit/s; trainer {train}, inference {infer}; best of {a.repeat}\n")
    print("| model | way | seconds | / bound | predicted (measured / predicted) | peak RSS per rank | wrong |\n"
          "|---|---|---:|---:|---:|---:|---:|")
    for j in rows:
        s, p = j["seconds"], j.get("way_predicted_s") or 0
        predicted = f"{p:.3f} ({s / p:.2f})" if s is not None and p > 0 else ""
        print(f"| {j['model']} ({j['tensors']} tensors, {j['bytes'] / 2**20:.1f} MiB) | {NAMES[j['way']]} | "
              f"{s:.3f} | {s / j['bound_s']:.2f} | {predicted} | {j['peak_rss_bytes'] / 2**20:.1f} MiB | {j['wrong_elements']} |"
              if s is not None else f"| {j['model']} | {NAMES[j['way']]} | failed (status {j['status']}) | | | | |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Random layouts on the emulated cluster, run as a new user would (only --nic-gbps and
--latency-us given; meshcast-reshard takes TCP's payload fraction itself): measured against
predicted for each, in both execution modes. The suite (cluster_suite.py) covers fixed cases
with a calibrated model; this probes layouts nobody chose.

  python3 bench/cluster_random.py [--build build/test] [--runs 12] [--seed 1] [--mbit 200] [--json FILE]

Needs root (network namespaces). Prints one line per run and a summary.
"""
import argparse
import json
import os
import random
import subprocess
import sys
import time

from cluster_flags import CLUSTER, ROOT, add_cluster_flags  # noqa: E402,F401
MESHES_8 = ["8", "4x2", "2x4", "2x2x2"]


def random_spec(rng, mesh_rank, tensor_rank):
    dims = [[] for _ in range(tensor_rank)]
    axes = list(range(mesh_rank))
    rng.shuffle(axes)
    for a in axes:
        d = rng.randint(-1, tensor_rank - 1)
        if d >= 0:
            dims[d].append(a)
    return ",".join("S" + "".join(str(a) for a in d) if d else "R" for d in dims)


def random_case(rng):
    """(args, ranks, ppn): 8 devices on 4 hosts of 2, same mesh; or 4 -> 4 devices on 2 + 2 hosts."""
    rank = rng.randint(1, 3)
    # 8-48 MiB of int32, uneven dims: large enough that the network, not fixed costs, takes the time.
    shape = [rng.choice([96, 100, 128, 250, 777, 1000, 1536, 2048, 3000]) for _ in range(rank)]

    def size():
        n = 4
        for x in shape:
            n *= x
        return n
    while size() < 8 << 20:
        shape[rng.randrange(rank)] *= rng.choice([2, 3])
    while size() > 48 << 20:
        shape[rng.randrange(rank)] //= 2
    shape_s = "x".join(str(x) for x in shape)
    if rng.random() < 0.6:
        sm, dm = rng.choice(MESHES_8), rng.choice(MESHES_8)
        if len(dm.split("x")) != len(sm.split("x")) or dm != sm:
            dm = sm  # the same devices: one mesh
        ss = random_spec(rng, len(sm.split("x")), rank)
        ds = random_spec(rng, len(dm.split("x")), rank)
        args = ["--shape", shape_s, "--src-mesh", sm, "--src-spec", ss, "--dst-mesh", dm, "--dst-spec", ds,
                "--same-mesh", "--devices-per-host", "2"]
        return args, 8, "2"
    sm, dm = rng.choice(["4", "2x2"]), rng.choice(["4", "2x2"])
    ss = random_spec(rng, len(sm.split("x")), rank)
    ds = random_spec(rng, len(dm.split("x")), rank)
    args = ["--shape", shape_s, "--src-mesh", sm, "--src-spec", ss, "--dst-mesh", dm, "--dst-spec", ds,
            "--devices-per-host", "2"]
    return args, 8, "2"


def main():
    ap = argparse.ArgumentParser()
    add_cluster_flags(ap)
    ap.add_argument("--runs", type=int, default=12)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    prog = os.path.join(args.build, "examples", "meshcast-reshard")
    rows = []
    subprocess.run(["bash", CLUSTER, "up", "4", str(args.mbit)], check=True, capture_output=True)
    try:
        for k in range(args.runs):
            case, ranks, ppn = random_case(rng)
            strategy = rng.choice(["send_recv", "send_recv", "send_recv_allgather", "broadcast"])
            for mode in ["ordered", "concurrent"]:
                cmd = ["bash", CLUSTER, "mpiexec", "-ppn", ppn, "-n", str(ranks), prog] + case + [
                    "--strategy", strategy, "--mode", mode, "--nic-gbps", str(args.mbit / 1000), "--latency-us", "100",
                    "--json", "--repeat", str(args.repeat), "--timeout-s", "60"]
                started = time.time()
                r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
                lines = [l for l in r.stdout.splitlines() if l.startswith("{")]
                row = {"case": " ".join(case), "strategy": strategy, "mode": mode}
                if r.returncode != 0 or not lines:
                    own = [l for l in r.stderr.splitlines() if l.strip() and not l.startswith(("[mpiexec@", "[proxy:"))]
                    row["error"] = f"exit {r.returncode}: " + " | ".join(own)[-600:]
                    print(f"[{k}] {row['case']} {strategy} {mode}: ERROR {row['error']}", flush=True)
                else:
                    d = json.loads(lines[-1])
                    row.update(d)
                    ratio = d["seconds"] / d["predicted_seconds"] if d["predicted_seconds"] > 0 else float("nan")
                    row["ratio"] = ratio
                    print(f"[{k}] {row['case']} {strategy} {mode}: measured {d['seconds']:.3f} predicted "
                          f"{d['predicted_seconds']:.3f} ({ratio:.3f}) physical {d['physical_bound_seconds']:.3f} "
                          f"wrong {d['wrong_elements']} ({time.time() - started:.0f} s)", flush=True)
                rows.append(row)
    finally:
        subprocess.run(["bash", CLUSTER, "down"], capture_output=True)
    ok = [r for r in rows if "ratio" in r]
    inside = [r for r in ok if 0.87 <= r["ratio"] <= 1.15]
    errors = [r for r in rows if "error" in r]
    wrong = [r for r in ok if r["wrong_elements"] != 0]
    print(f"cluster_random.py: {len(rows)} runs, {len(errors)} errors, {len(wrong)} with wrong elements; measured / "
          f"predicted in [0.87, 1.15] on {len(inside)} of {len(ok)} (range "
          f"{min((r['ratio'] for r in ok), default=0):.3f} - {max((r['ratio'] for r in ok), default=0):.3f})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f)
    return 1 if errors or wrong else 0


if __name__ == "__main__":
    sys.exit(main())

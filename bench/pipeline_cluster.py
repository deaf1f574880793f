#!/usr/bin/env python3
"""Pipelines run on the emulated cluster (scripts/cluster.sh): measured against simulated makespans.

Brings up one host per stage (NICs at --mbit), calibrates the network model there with
meshcast-calibrate (payload fraction of the line rate, per-transfer latency, intra-host link; as
bench/cluster_suite.py does), then runs meshcast-pipeline-mpi on each case, each stage's mesh of
ranks on its own host, with the policies prior_first, rounds, list_scheduling (the default) and
optimal, for each --compute kind. Each edge's activation is sized so that the calibrated model
predicts the edge's time; compute takes its stated time. Records, per policy, the simulated
makespan (stated times), the measured one (best of --repeat runs, policies interleaved) and the
lists re-simulated with the measured durations, and whether the measured makespans rank the
policies as the simulator does (pairs whose simulated makespans differ by more than 2%).

Targets (issue 10, point 5): measured / simulated within 15% on every run; the rankings agree.

Writes a Markdown report to --out (default bench/pipeline_cluster.md) and prints the summary.
Needs root (network namespaces). Takes the cluster down at the end.

  MC_CLUSTER_PREFIX=mcp- MC_CLUSTER_SUBNET=10.96.0 python3 bench/pipeline_cluster.py [--build build/test]
      [--mbit 200] [--unit-ms 20] [--repeat 3] [--compute spin,sleep] [--quick]
"""
import argparse
import json
import os
import subprocess
import sys
import time

from cluster_flags import CLUSTER, ROOT, add_cluster_flags  # noqa: E402,F401
PIPELINES = os.path.join(ROOT, "examples", "pipelines")
POLICIES = ["prior_first", "rounds", "list_scheduling", "optimal"]

# name, file, ranks per stage
CASES = [
    ("chain, 4 stages", "chain4.json", 1),
    ("chain, 6 stages", "chain6.json", 1),
    ("U-Net, 4 stages, skip (0,3)", "unet4.json", 1),
    ("U-Net, 6 stages, skips (0,5) (1,4)", "unet6.json", 1),
    ("U-Net, 4 stages, meshes of 2 ranks", "unet4.json", 2),
    ("U-Net, 6 stages, meshes of 2 ranks", "unet6.json", 2),
    ("U-Net, 6 stages, 1F1B", "unet6_1f1b.json", 1),
    ("U-Net, 4 stages, eager 1F1B, separate streams", "unet4_eager_separate.json", 1),
    ("tensor edges (the file's reshards), 1F1B", "tensors3.json", 2),
]
QUICK = {1, 3}


def sh(*args, timeout=600, check=True):
    r = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}: exit {r.returncode}\n{r.stderr[-2000:]}")
    return r


def calibrate(build):
    cal = os.path.join(build, "bench", "meshcast-calibrate")
    inter = json.loads(sh("bash", CLUSTER, "mpiexec", "-ppn", "1", "-n", "2", cal, timeout=300).stdout.strip().splitlines()[-1])
    intra = json.loads(sh("bash", CLUSTER, "mpiexec", "-ppn", "2", "-n", "2", cal, timeout=300).stdout.strip().splitlines()[-1])
    return inter, intra


def describe(file):
    d = json.load(open(os.path.join(PIPELINES, file)))
    return d, len(d["stages"])


def run_case(build, file, k, compute, model, args):
    _, n = describe(file)
    cmd = ["bash", CLUSTER, "mpiexec", "-ppn", str(k), "-n", str(n * k), os.path.join(build, "examples", "meshcast-pipeline-mpi"),
           os.path.join(PIPELINES, file), "--ranks-per-stage", str(k), "--time-unit-ms", str(args.unit_ms),
           "--policy", ",".join(POLICIES), "--repeat", str(args.repeat), "--compute", compute, "--json"] + model
    t0 = time.time()
    r = sh(*cmd, timeout=900, check=False)
    lines = [l for l in r.stdout.splitlines() if l.startswith("{")]
    if r.returncode != 0 or not lines:
        return {"error": (r.stderr or r.stdout)[-600:].replace("\n", " ")}, " ".join(cmd)
    d = json.loads(lines[-1])
    d["wall_s"] = time.time() - t0
    return d, " ".join(cmd)


def main():
    ap = argparse.ArgumentParser()
    add_cluster_flags(ap)
    ap.add_argument("--unit-ms", type=float, default=20)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--compute", default="spin,sleep")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--cases", default="", help="comma-separated case indices (default: all)")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "pipeline_cluster.md"))
    args = ap.parse_args()
    cases = list(enumerate(CASES))
    if args.quick:
        cases = [c for c in cases if c[0] in QUICK]
    if args.cases:
        keep = {int(x) for x in args.cases.split(",")}
        cases = [c for c in cases if c[0] in keep]
    hosts = max(describe(c[1])[1] for _, c in cases)
    rows = []
    started = time.time()
    try:
        sh("bash", CLUSTER, "up", str(max(hosts, 2)), str(args.mbit))
        inter, intra = calibrate(args.build)
        efficiency = min(1.0, inter["payload_gbps"] / (args.mbit / 1000))
        latency = max(inter["latency_us"], inter["one_way_small_us"], 1.0)
        model = ["--nic-gbps", str(args.mbit / 1000), "--nic-efficiency", f"{efficiency:.4f}", "--latency-us", f"{latency:.1f}",
                 "--intra-gbps", f"{intra['payload_gbps']:.3f}"]
        print(f"# {hosts} hosts at {args.mbit:g} Mbit/s: payload {inter['payload_gbps']:.4f} Gbit/s (fraction {efficiency:.4f}), "
              f"latency {latency:.0f} us, intra-host {intra['payload_gbps']:.2f} Gbit/s", flush=True)
        for compute in args.compute.split(","):
            for i, (name, file, k) in cases:
                d, cmd = run_case(args.build, file, k, compute, model, args)
                d.update(case=i, name=name, k=k, file=file, compute_kind=compute, command=cmd)
                rows.append(d)
                if "error" in d:
                    print(f"  [{i}] {name} x{k} {compute}: ERROR {d['error']}", flush=True)
                    continue
                cells = " ".join(f"{p['policy']} {p['simulated_s']:.3f}/{p['measured_s']:.3f} ({p['measured_over_simulated']:.3f})"
                                 for p in d["policies"])
                rk = d["ranking"]
                print(f"  [{i}] {name} x{k} {compute}: {cells}; ranking {rk['agreeing_pairs']}/{rk['pairs']}"
                      f"{' agrees' if rk['agree'] else ' DISAGREES'} ({d['wall_s']:.0f} s)", flush=True)
    finally:
        sh("bash", CLUSTER, "down", check=False)

    ok = [r for r in rows if "error" not in r]
    ratios = [p["measured_over_simulated"] for r in ok for p in r["policies"]]
    worst = max((abs(x - 1) for x in ratios), default=0)
    within = sum(abs(x - 1) <= 0.15 for x in ratios)
    agree = sum(r["ranking"]["agree"] for r in ok)
    out = []
    out.append(f"Emulated cluster: one host per stage, NICs at {args.mbit:g} Mbit/s; calibrated payload "
               f"{inter['payload_gbps']:.4f} Gbit/s (fraction {efficiency:.4f}), latency {latency:.0f} us; time unit "
               f"{args.unit_ms:g} ms; best of {args.repeat} runs per policy (interleaved). Makespans in seconds, "
               f"simulated (stated times) / measured (measured / simulated).\n")
    out.append("| case | stages x ranks | schedule, streams | compute | " + " | ".join(POLICIES) +
               " | measured / re-simulated | ranking |")
    out.append("|---|---|---|---|" + "---|" * len(POLICIES) + "---|---|")
    for r in rows:
        if "error" in r:
            out.append(f"| {r['name']} | | | {r['compute_kind']} | error: {r['error'][:120]} |")
            continue
        cells = [f"{p['simulated_s']:.3f} / {p['measured_s']:.3f} ({p['measured_over_simulated']:.3f})" for p in r["policies"]]
        re = [p["measured_over_resimulated"] for p in r["policies"]]
        rk = r["ranking"]
        out.append(f"| {r['name']} | {r['stages']} x {r['k']} | {r['schedule']}, {r['streams']} | {r['compute']} | " +
                   " | ".join(cells) + f" | {min(re):.3f}-{max(re):.3f} | {'agrees' if rk['agree'] else 'DISAGREES'} "
                   f"({rk['agreeing_pairs']}/{rk['pairs']}) |")
    out.append("")
    summary = (f"{len(ok)} runs ({len(ratios)} policy makespans): measured / simulated {min(ratios, default=0):.3f}-"
               f"{max(ratios, default=0):.3f}, {within} of {len(ratios)} within 15% (worst {worst * 100:.1f}%); the "
               f"measured makespans rank the policies as the simulator does in {agree} of {len(ok)} runs. "
               f"Total {time.time() - started:.0f} s.")
    out.append(summary)
    out.append("")
    out.append("Command: `python3 bench/pipeline_cluster.py " + " ".join(sys.argv[1:]) + "`; each run is")
    if ok:
        out.append("`" + ok[0]["command"].replace(ROOT + "/", "") + "` (its case's file, K and compute).")
    with open(args.out, "w") as f:
        f.write("\n".join(out) + "\n")
    print(summary)
    print(f"report: {args.out}")
    return 0 if ok and len(ok) == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())

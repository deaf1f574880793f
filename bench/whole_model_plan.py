#!/usr/bin/env python3
"""whole_model_plan.py: plans and solves docs/whole_model.md's six manifests and prints its table.

    whole_model_plan.py PLAN [PLAN2 ...] [--repeat 3] [--nic-gbps 400] [--only NAME,...]

PLAN is a meshcast-plan binary (e.g. build/test/examples/meshcast-plan). Given several, each
manifest runs under each of them in turn, alternating, `--repeat` times, so that two builds (say
of two commits) are measured side by side on this noisy machine; times are the best of the runs
(plan_seconds + solve_seconds from `--json`, one cell per binary, in their order). The other
columns are the last binary's (put the newest last); where an earlier one predicts otherwise, the
script says so on stderr and exits 1. The manifests are bench/manifests.py's,
written to a temporary directory.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

# (name in the table, manifests.py arguments)
MANIFESTS = [
    ("Llama-3-8B (4x8 -> 2x8)", ["llama3-8b"]),
    ("Llama-3-8B, 2 stages (`pp`)", ["pp"]),
    ("MoE (`moe`)", ["moe"]),
    ("Llama-3-70B", ["llama3-70b"]),
    ("Llama-3-8B (`--train-mesh 16x8 --infer-mesh 16x8`)", ["llama3-8b", "--train-mesh", "16x8", "--infer-mesh", "16x8"]),
    ("MoE, one tensor per expert (`moe --expert-tensors --experts 100 --train-mesh 16x8 --infer-mesh 16x8`)",
     ["moe", "--expert-tensors", "--experts", "100", "--train-mesh", "16x8", "--infer-mesh", "16x8"]),
]


def run_plan(binary, manifest, nic_gbps):
    out = subprocess.run([binary, "--manifest", manifest, "--nic-gbps", str(nic_gbps), "--json"],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def split_cell(tasks_by_strategy):
    names = {"broadcast": "chains"}
    parts = [f"{n} {names.get(k, k)}" for k, n in tasks_by_strategy.items() if n]
    return ", ".join(parts) if parts else "none"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("plans", nargs="+", help="meshcast-plan binaries")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--nic-gbps", type=float, default=400)
    ap.add_argument("--only", default="", help="comma-separated indices (0-5) of the manifests to run")
    a = ap.parse_args()
    if a.repeat < 1:
        ap.error("--repeat must be at least 1")
    chosen = range(len(MANIFESTS)) if not a.only else [int(x) for x in a.only.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        print("| manifest (flags) | tensors | tasks | devices | bound | predicted | / bound | plan + solve | auto's tasks |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
        status = 0
        for i in chosen:
            name, args = MANIFESTS[i]
            path = os.path.join(tmp, f"m{i}.json")
            subprocess.run([sys.executable, os.path.join(HERE, "manifests.py"), *args, "-o", path], check=True)
            best = {}
            first = {}
            for _ in range(a.repeat):
                for b in a.plans:
                    j = run_plan(b, path, a.nic_gbps)
                    first.setdefault(b, j)
                    t = (j["plan_seconds"], j["solve_seconds"])
                    if b not in best or sum(t) < sum(best[b]):
                        best[b] = t
            j = first[a.plans[-1]]
            for b in a.plans[:-1]:
                o = first[b]
                if (o["predicted_seconds"], o["physical_bound_seconds"], o["tasks"]) != \
                        (j["predicted_seconds"], j["physical_bound_seconds"], j["tasks"]):
                    print(f"{name}: {b} predicts {o['predicted_seconds']} s, {a.plans[-1]} {j['predicted_seconds']} s",
                          file=sys.stderr)
                    status = 1
            times = " / ".join(f"{best[b][0]:.3f} + {best[b][1]:.2f} s" for b in a.plans)
            print(f"| {name} | {j['tensors']:,} | {j['tasks']:,} | {j['devices']} | {j['physical_bound_seconds']:.3f} s | "
                  f"{j['predicted_seconds']:.3f} s | {j['predicted_seconds'] / j['physical_bound_seconds']:.3f} | "
                  f"{times} | {split_cell(j['tasks_by_strategy'])} |", flush=True)
        return status


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""fault_matrix.py: what a user sees when a host dies mid-reshard, per UCX zero-copy setting
(docs/faults.md). Runs each ctest `cluster.fault_*` test N times with UCX_ZCOPY_THRESH set to each
value given (scripts/cluster.sh passes it on), one run after the other, and prints one line per
run and a summary per test and setting.

    python3 bench/fault_matrix.py --build build/test [--runs 10] [--zcopy auto,inf] [--tests kill_concurrent,...]
"""
import argparse
import collections
import os
import re
import subprocess

from cluster_flags import BUILD  # noqa: E402

TESTS = ["kill_concurrent", "kill_ordered", "cut_ordered", "cut_concurrent", "kill_hydra"]


def one(build, test, zcopy):
    env = dict(os.environ, UCX_ZCOPY_THRESH=zcopy)
    out = subprocess.run(["ctest", "--test-dir", build, "-R", f"^cluster.fault_{test}$", "-V"], env=env,
                         capture_output=True, text=True).stdout
    passed = re.search(r"Test +#\d+: \S+ \.+ +Passed", out) is not None
    aborts = out.count("Assertion `comp->count > 0'")
    exit_ = re.search(r"mpiexec exited with status (-?\d+) after ([0-9.]+) s", out)
    named = re.search(r"named: (.*)", out)
    how = "nothing"
    if named and named.group(1) != "nothing":
        how = "hydra" if "RUNNING AT" in named.group(1) else "MPI error" if named.group(1).startswith("with device") else "deadline"
    return {"passed": passed, "aborts": aborts, "status": exit_.group(1) if exit_ else None,
            "after_s": float(exit_.group(2)) if exit_ else None, "named_by": how}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=BUILD, help=f"the build directory (default {BUILD})")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--zcopy", default="auto,inf")
    ap.add_argument("--tests", default=",".join(TESTS))
    a = ap.parse_args()
    summary = []
    for test in a.tests.split(","):
        for z in a.zcopy.split(","):
            rows = []
            for i in range(a.runs):
                r = one(a.build, test, z)
                rows.append(r)
                print(f"{test} UCX_ZCOPY_THRESH={z} run {i + 1}: {r}", flush=True)
            times = [r["after_s"] for r in rows if r["after_s"] is not None]
            summary.append(f"{test:16s} zcopy={z:5s} runs {len(rows)}, passed {sum(r['passed'] for r in rows)}, "
                           f"runs with a UCX abort {sum(r['aborts'] > 0 for r in rows)}, mpiexec exits "
                           f"{min(times, default=0):.2f}-{max(times, default=0):.2f} s, status "
                           f"{dict(collections.Counter(r['status'] for r in rows))}, named by "
                           f"{dict(collections.Counter(r['named_by'] for r in rows))}")
    print("\n".join(summary))


if __name__ == "__main__":
    main()

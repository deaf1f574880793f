#!/usr/bin/env python3
"""Runs tests/mpi/benchmark_session.cpp at 2 and 4 ranks and checks what <meshcast/benchmark.hpp>
reports: one JSON document, from rank 0 alone, every counter present, algbw = bytes / reported time
within 2%, busbw and vs_bound consistent, wrong 0; and a rank count that does not fit the layouts
ending with an error on every rank, not a hang.

    check_benchmark_session.py MPIEXEC PROGRAM
"""
import json
import subprocess
import sys

mpiexec, program = sys.argv[1], sys.argv[2]
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAILED:", what, flush=True)


UNIT = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
for ranks in (2, 4):
    r = subprocess.run([mpiexec, "-n", str(ranks), program, "--benchmark_format=json", "--benchmark_min_time=0.05"],
                       capture_output=True, text=True, timeout=300)
    check(r.returncode == 0, f"{ranks} ranks: exit {r.returncode}: {r.stderr[-500:]}")
    try:
        doc = json.loads(r.stdout)  # one document: a second rank's output would break it
    except json.JSONDecodeError as e:
        check(False, f"{ranks} ranks: stdout is not one JSON document ({e}): {r.stdout[:300]!r}")
        continue
    names = [b["name"] for b in doc["benchmarks"]]
    expect = ["rows_to_blocks/manual_time", "rows_to_blocks_one_per_host/manual_time"] + \
        (["static_rows_to_columns/manual_time"] if ranks == 4 else []) + ["own_allreduce_no_timeout/manual_time"]
    check(names == expect, f"{ranks} ranks: benchmarks {names}, expected {expect}")
    for b in doc["benchmarks"]:
        name = f"{ranks} ranks, {b['name']}"
        if b["name"].startswith("own_"):  # the user's own job: no model, no bound
            check(b.get("wrong") == 0 and b.get("iterations", 0) >= 1, f"{name}: {b}")
            continue
        for key in ["bytes", "algbw", "busbw", "predicted_s", "bound_s", "vs_bound", "wrong"]:
            check(key in b, f"{name}: no counter {key}")
        if not all(k in b for k in ["bytes", "algbw", "busbw", "bound_s", "vs_bound", "wrong"]):
            continue
        seconds = b["real_time"] * UNIT[b["time_unit"]]
        check(b["wrong"] == 0, f"{name}: wrong {b['wrong']}")
        check(abs(b["algbw"] - b["bytes"] / seconds) <= 0.02 * b["algbw"], f"{name}: algbw {b['algbw']} != bytes / time {b['bytes'] / seconds}")
        if b["bound_s"] > 0:
            check(abs(b["vs_bound"] - seconds / b["bound_s"]) <= 0.02 * b["vs_bound"], f"{name}: vs_bound {b['vs_bound']}")
        else:  # nothing crosses a NIC (every rank on one host): no bound to compare with
            check(b["vs_bound"] == 0, f"{name}: vs_bound {b['vs_bound']} with no bound")
        check(0 <= b["busbw"] <= b["algbw"] * ranks, f"{name}: busbw {b['busbw']}")  # 0: nothing leaves a device
        check(b["predicted_s"] > 0 and b["iterations"] >= 1, f"{name}: predicted {b['predicted_s']}, iterations {b['iterations']}")
        print(f"{name}: {b['iterations']} iterations, {seconds * 1e3:.3f} ms, algbw {b['algbw'] / 1e9:.3f} GB/s, "
              f"busbw {b['busbw'] / 1e9:.3f} GB/s, predicted {b['predicted_s'] * 1e3:.3f} ms", flush=True)

r = subprocess.run([mpiexec, "-n", "2", program, "--mismatch"], capture_output=True, text=True, timeout=120)
errors = [line for line in r.stderr.splitlines() if "meshcast benchmark (rank" in line and "error" in line]
check(r.returncode != 0, f"mismatch: exit {r.returncode}")
check(len({line.split(')')[0] for line in errors}) == 2 and all("communicator has 2 ranks" in line for line in errors),
      f"mismatch: every rank should say why: {r.stderr[-600:]!r}")
if failures:
    print(f"{len(failures)} failures")
    sys.exit(1)
print("benchmark session: ok")

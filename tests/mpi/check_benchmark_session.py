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
# Google Benchmark flags it took on trust (found by review): nan and inf min_time and 10^8
# repetitions ran for ever, a bad format word exited 0 on every rank, random interleaving ran
# different benchmarks on different ranks at once. Each is now refused by every rank, exit 2.
for flag in ["--benchmark_min_time=nan", "--benchmark_min_time=inf", "--benchmark_min_time=-1",
             "--benchmark_repetitions=100000000", "--benchmark_repetitions=0",
             "--benchmark_enable_random_interleaving=true", "--benchmark_format=xml", "--benchmark_time_unit=xs"]:
    try:
        r = subprocess.run([mpiexec, "-n", "2", program, flag], capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        check(False, f"{flag}: still running after 60 s")
        continue
    named = [line for line in r.stderr.splitlines() if "meshcast benchmark (rank" in line and flag in line]
    check(r.returncode == 2 and len(named) == 2, f"{flag}: exit {r.returncode}, {len(named)} ranks named it: {r.stderr[-400:]!r}")

# A timed run of 0 s: every rank stops with an error naming the benchmark (was 1e9 iterations).
try:
    r = subprocess.run([mpiexec, "-n", "2", program, "--zero-time", "--benchmark_min_time=0.05"],
                       capture_output=True, text=True, timeout=60)
    named = [line for line in r.stderr.splitlines() if "'zero_time'" in line and "not a positive, finite" in line]
    check(r.returncode == 2 and len(named) == 2, f"zero time: exit {r.returncode}: {r.stderr[-400:]!r}")
except subprocess.TimeoutExpired:
    check(False, "zero time: still running after 60 s")

# Jobs add() refuses, naming them: a duplicate, an empty name, control characters, a NaN counter,
# a negative timeout.
r = subprocess.run([mpiexec, "-n", "2", program, "--bad-jobs"], capture_output=True, text=True, timeout=120)
refusals = [line for line in r.stdout.splitlines() if line.startswith("refused: ")]
check(r.returncode == 0 and len(refusals) == 6, f"bad jobs: exit {r.returncode}, refusals {refusals}: {r.stderr[-400:]!r}")
for part in ["'first' is registered twice", "needs a name", "name holds a control character", "timed_job::bytes is nan",
             "timed_job::timeout_s", "label holds a control character"]:
    check(any(part in line for line in refusals), f"bad jobs: no refusal says {part!r}: {refusals}")

# --benchmark_list_tests: the names once (rank 0), nothing run, exit 0 (every rank printed them).
r = subprocess.run([mpiexec, "-n", "2", program, "--benchmark_list_tests"], capture_output=True, text=True, timeout=120)
listed = r.stdout.split()
check(r.returncode == 0 and listed == [n + "/manual_time" for n in ("rows_to_blocks", "rows_to_blocks_one_per_host", "own_allreduce_no_timeout")],
      f"list tests: exit {r.returncode}, listed {listed}: {r.stderr[-400:]!r}")

# One job's buffers at a time: each job is acquired before its first run and released when the
# session moves on; a reshard job run outside the session makes its own buffers.
for ranks in (2, 4):
    r = subprocess.run([mpiexec, "-n", str(ranks), program, "--one-at-a-time", "--benchmark_min_time=0.01"],
                       capture_output=True, text=True, timeout=120)
    ok = [line for line in r.stderr.splitlines() if line.startswith("one at a time (rank 0)") and line.endswith(": ok")]
    check(r.returncode == 0 and len(ok) == 1, f"one at a time, {ranks} ranks: exit {r.returncode}: {r.stderr[-600:]!r}")

if failures:
    print(f"{len(failures)} failures")
    sys.exit(1)
print("benchmark session: ok")

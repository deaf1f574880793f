#!/usr/bin/env python3
"""Runs meshcast-bench --peer mpi over small sweeps, one case per MPI peer (Alltoallv, Allgatherv,
Bcast, Isend), at 4 and 6 ranks, and checks the one JSON document rank 0 prints: per size a
meshcast row and the expected peer's row, every element right (wrong 0), algbw = bytes / reported
time within 2%, the sizes swept by the factor. A bad flag is exit status 2 with a message.

    check_meshcast_bench.py PROGRAM MPIEXEC
"""
import json
import subprocess
import sys

program, mpiexec = sys.argv[1], sys.argv[2]
failures = []
UNIT = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAILED:", what, flush=True)


# ranks, peer, flags (the shape's dim 0 is swept)
CASES = [
    (4, "MPI_Alltoallv", "--shape 8x32 --src-mesh 4 --src-spec S0,R --dst-mesh 4 --dst-spec R,S0 --same-mesh"),
    (4, "MPI_Allgatherv", "--shape 8x32 --src-mesh 2x2 --src-spec S0,R --dst-mesh 2x2 --dst-spec R,R --same-mesh"),
    (4, "MPI_Bcast", "--shape 8x32 --src-mesh 1 --src-spec R,R --dst-mesh 3 --dst-spec R,R"),
    (4, "MPI_Bcast", "--shape 8x32 --src-mesh 2 --src-spec S0,R --dst-mesh 2 --dst-spec R,R"),
    (4, "MPI_Isend", "--shape 8x32 --src-mesh 2 --src-spec S0,R --dst-mesh 2 --dst-spec R,S0"),
    (6, "MPI_Alltoallv", "--shape 7x5 --dtype-bytes 2 --src-mesh 2x3 --src-spec S1,S0 --dst-mesh 3x2 --dst-spec S0,S1 --same-mesh"),
    (6, "MPI_Isend", "--shape 7x5 --dtype-bytes 2 --src-mesh 3 --src-spec S0,R --dst-mesh 3 --dst-spec R,S0"),
    (6, "MPI_Allgatherv", "--shape 7x5 --dtype-bytes 8 --src-mesh 6 --src-spec S0,R --dst-mesh 6 --dst-spec R,R --same-mesh"),
]

for ranks, peer, flags in CASES:
    label = f"{ranks}r_{peer}"
    cmd = [mpiexec, "-n", str(ranks), program, *flags.split(), "--min-bytes", "1K", "--max-bytes", "64K", "--factor", "4",
           "--peer", "mpi", "--label", label, "--benchmark_format=json", "--benchmark_min_time=0.01", "--timeout-s", "60"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    check(r.returncode == 0, f"{label}: exit {r.returncode}: {r.stderr[-800:]}")
    try:
        doc = json.loads(r.stdout)
    except json.JSONDecodeError as e:
        check(False, f"{label}: stdout is not one JSON document ({e}): {r.stdout[:300]!r}")
        continue
    rows = {}
    for b in doc["benchmarks"]:
        parts = b["name"].split("/")
        check(len(parts) == 4 and parts[0] == label and parts[3] == "manual_time", f"{label}: name {b['name']}")
        if len(parts) != 4:
            continue
        rows.setdefault(int(parts[2]), {})[parts[1]] = b
        seconds = b["real_time"] * UNIT[b["time_unit"]]
        check(b["wrong"] == 0, f"{b['name']}: wrong {b['wrong']}")
        check(b["bytes"] == int(parts[2]), f"{b['name']}: bytes {b['bytes']}")
        check(abs(b["algbw"] - b["bytes"] / seconds) <= 0.02 * b["algbw"], f"{b['name']}: algbw {b['algbw']} vs {b['bytes'] / seconds}")
        check(b["busbw"] >= 0 and b["bound_s"] >= 0, f"{b['name']}: busbw {b['busbw']}, bound {b['bound_s']}")
    sizes = sorted(rows)
    check(len(sizes) >= 3, f"{label}: sizes {sizes}")
    for a, b in zip(sizes, sizes[1:]):
        check(3 <= b / a <= 5.5, f"{label}: sizes {a} -> {b} not swept by about 4")
    for size in sizes:
        check(set(rows[size]) == {"meshcast", peer}, f"{label} {size}: ways {sorted(rows[size])}, expected meshcast and {peer}")
        if "meshcast" in rows[size] and peer in rows[size]:
            ours, theirs = rows[size]["meshcast"], rows[size][peer]
            check(ours["bound_s"] == theirs["bound_s"], f"{label} {size}: the two ways report different bounds")
            print(f"{label} {size:>7} B: meshcast {ours['real_time']:.3f} {ours['time_unit']}, "
                  f"{peer} {theirs['real_time']:.3f} {theirs['time_unit']}", flush=True)

r = subprocess.run([mpiexec, "-n", "2", program, "--shape", "8x8", "--src-mesh", "2", "--src-spec", "S0,R", "--dst-mesh", "2",
                    "--dst-spec", "R,S0", "--same-mesh", "--peer", "nccl"], capture_output=True, text=True, timeout=120)
check(r.returncode == 2 and "--peer 'nccl' is not mpi" in r.stderr, f"bad flag: exit {r.returncode}, {r.stderr[-300:]!r}")
r = subprocess.run([mpiexec, "-n", "3", program, "--shape", "8x8", "--src-mesh", "2", "--src-spec", "S0,R", "--dst-mesh", "2",
                    "--dst-spec", "R,S0", "--same-mesh", "--peer", "mpi"], capture_output=True, text=True, timeout=120)
check(r.returncode != 0 and r.stderr.count("error") >= 3, f"rank mismatch: exit {r.returncode}, {r.stderr[-600:]!r}")

# The staging cap reaches the one call: tasks cut to half of 256 bytes make a 16 KiB reshard many
# more, smaller messages, each paying its latency in the prediction; every element still arrives.
ONE = ["--shape", "64x64", "--src-mesh", "2", "--src-spec", "S0,R", "--dst-mesh", "2", "--dst-spec", "R,S0",
       "--min-bytes", "16K", "--max-bytes", "16K", "--mode", "ordered", "--benchmark_format=json",
       "--benchmark_min_time=0.01", "--timeout-s", "60"]
predicted = {}
for cap in ([], ["--max-staging-bytes", "256"]):
    r = subprocess.run([mpiexec, "-n", "4", program, *ONE, *cap], capture_output=True, text=True, timeout=300)
    check(r.returncode == 0, f"staging cap {cap}: exit {r.returncode}: {r.stderr[-600:]}")
    if r.returncode == 0:
        rows = [b for b in json.loads(r.stdout)["benchmarks"] if "/meshcast/" in b["name"]]
        check(len(rows) == 1 and rows[0]["wrong"] == 0, f"staging cap {cap}: rows {rows}")
        predicted[bool(cap)] = rows[0]["predicted_s"] if rows else 0
if len(predicted) == 2:
    check(predicted[True] > 2 * predicted[False], f"--max-staging-bytes 256 left the prediction at {predicted}")
# A shape whose rows hold nothing cannot be swept (it once divided by zero).
r = subprocess.run([mpiexec, "-n", "2", program, "--shape", "8x0", "--src-mesh", "2", "--src-spec", "S0,R", "--dst-mesh", "2",
                    "--dst-spec", "R,S0", "--same-mesh"], capture_output=True, text=True, timeout=120)
check(r.returncode == 2 and "has a dimension of 0 besides the first" in r.stderr, f"8x0: exit {r.returncode}, {r.stderr[-300:]!r}")
r = subprocess.run([mpiexec, "-n", "2", program, "--shape", "8x8", "--src-mesh", "2", "--src-spec", "S0,R", "--dst-mesh", "2",
                    "--dst-spec", "R,S0", "--same-mesh", "--json"], capture_output=True, text=True, timeout=120)
check(r.returncode == 2 and "--benchmark_format=json" in r.stderr, f"--json: exit {r.returncode}, {r.stderr[-300:]!r}")
# Schedule flags the one call cannot honour are refused, not parsed and ignored.
for flag in (["--trace", "t.json"], ["--eager-bytes", "4096"], ["--mpi-broadcast", "chain"]):
    r = subprocess.run([mpiexec, "-n", "2", program, "--shape", "8x8", "--src-mesh", "2", "--src-spec", "S0,R", "--dst-mesh", "2",
                        "--dst-spec", "R,S0", "--same-mesh", *flag], capture_output=True, text=True, timeout=120)
    check(r.returncode == 2 and f"{flag[0]} is a flag of meshcast-plan" in r.stderr, f"{flag}: exit {r.returncode}, {r.stderr[-300:]!r}")

if failures:
    print(f"{len(failures)} failures")
    sys.exit(1)
print("meshcast-bench: ok")

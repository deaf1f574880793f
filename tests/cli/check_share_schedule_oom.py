#!/usr/bin/env python3
"""share_schedule with one rank of four out of memory alone (tests/mpi/share_schedule_oom.cpp under
tests/mpi/fail_nth_new.cpp on that rank, refusing the N-th allocation of the schedule's wire size:
the receiving vector, bounded_broadcast's buffer, on the root the copy it sends). Every rank must
stop with an error in under 10 s; each step that allocates was not agreed on, and the others
waited out the 20 s timeout naming the healthy root as unreachable.

    check_share_schedule_oom.py PROGRAM MPIEXEC FAIL_NTH_NEW_MODULE
"""
import subprocess
import sys
import time

program, mpiexec, module = sys.argv[1], sys.argv[2], sys.argv[3]
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAILED:", what, flush=True)


r = subprocess.run([mpiexec, "-n", "4", program, "--sizes"], capture_output=True, text=True, timeout=120)
words = [line.split()[1] for line in r.stdout.splitlines() if line.startswith("wire_bytes ")]
check(r.returncode == 0 and len(words) == 1 and int(words[0]) >= 65536, f"--sizes: exit {r.returncode}: {r.stdout!r} {r.stderr[-300:]!r}")
if failures:
    sys.exit(1)
size = words[0]
for victim in (2, 0):  # a receiver, the root
    refused_somewhere = False
    for nth in range(1, 4):
        what = f"rank {victim}, allocation {nth} of {size} bytes"
        parts = []
        for rank in range(4):
            env = ["-env", "LD_PRELOAD", module, "-env", "MESHCAST_FAIL_SIZE", size, "-env", "MESHCAST_FAIL_NTH", str(nth)]
            parts += (([":"] if rank else []) + ["-n", "1"] + (env if rank == victim else []) + [program])
        start = time.monotonic()
        try:
            r = subprocess.run([mpiexec, *parts], capture_output=True, text=True, timeout=120)
        except subprocess.TimeoutExpired:
            check(False, f"{what}: still running after 120 s")
            continue
        seconds = time.monotonic() - start
        if "fail_nth_new: allocation" not in r.stderr:
            check(r.returncode == 0, f"{what} (none made): exit {r.returncode}: {r.stderr[-400:]!r}")
            continue
        refused_somewhere = True
        ranks = {k for k in range(4) if f"share_schedule_oom (rank {k}): error: " in r.stderr}
        ok = r.returncode != 0 and ranks == {0, 1, 2, 3} and seconds < 10 and "out of memory" in r.stderr
        check(ok, f"{what}: exit {r.returncode} after {seconds:.1f} s, ranks that said why {sorted(ranks)}: {r.stderr[-700:]!r}")
        if ok:
            print(f"{what}: every rank stopped in {seconds:.2f} s", flush=True)
    check(refused_somewhere, f"rank {victim}: no allocation of {size} bytes was refused: the case tests nothing")

if failures:
    print(f"{len(failures)} failures")
    sys.exit(1)
print("share_schedule out of memory: ok")

#!/usr/bin/env python3
"""share_schedule with one rank of four out of memory alone (tests/mpi/share_schedule_oom.cpp under
tests/mpi/fail_nth_new.cpp on that rank, refusing the N-th allocation of the schedule's wire size:
the receiving vector, bounded_broadcast's buffer, on the root the copy it sends). Every rank must
stop with an error in under 10 s; each step that allocates was not agreed on, and the others
waited out the 20 s timeout naming the healthy root as unreachable.

    check_share_schedule_oom.py PROGRAM MPIEXEC FAIL_NTH_NEW_MODULE
"""
import pathlib
import subprocess
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from fail_nth import Checks, refused, timed_run, victim_command  # noqa: E402

program, mpiexec, module = sys.argv[1], sys.argv[2], sys.argv[3]
checks = Checks()
r = subprocess.run([mpiexec, "-n", "4", program, "--sizes"], capture_output=True, text=True, timeout=120)
words = [line.split()[1] for line in r.stdout.splitlines() if line.startswith("wire_bytes ")]
if not checks.check(r.returncode == 0 and len(words) == 1 and int(words[0]) >= 65536,
                    f"--sizes: exit {r.returncode}: {r.stdout!r} {r.stderr[-300:]!r}"):
    checks.finish("")
size = words[0]
for victim in (2, 0):  # a receiver, the root
    refused_somewhere = False
    for nth in range(1, 4):
        what = f"rank {victim}, allocation {nth} of {size} bytes"
        env = {"MESHCAST_FAIL_SIZE": size, "MESHCAST_FAIL_NTH": nth}
        r, seconds = timed_run(checks, victim_command(mpiexec, 4, victim, [program], module, env), what)
        if r is None:
            continue
        if not refused(r):
            checks.check(r.returncode == 0, f"{what} (none made): exit {r.returncode}: {r.stderr[-400:]!r}")
            continue
        refused_somewhere = True
        ranks = {k for k in range(4) if f"share_schedule_oom (rank {k}): error: " in r.stderr}
        if checks.check(r.returncode != 0 and ranks == {0, 1, 2, 3} and seconds < 10 and "out of memory" in r.stderr,
                        f"{what}: exit {r.returncode} after {seconds:.1f} s, ranks that said why {sorted(ranks)}: "
                        f"{r.stderr[-700:]!r}"):
            print(f"{what}: every rank stopped in {seconds:.2f} s", flush=True)
    checks.check(refused_somewhere, f"rank {victim}: no allocation of {size} bytes was refused: the case tests nothing")
checks.finish("share_schedule out of memory: ok")

#!/usr/bin/env python3
"""meshcast-autoshard-mlp-mpi with one rank of four out of memory alone: a run without
faults says which sgemm and which all-reduce it timed; tests/mpi/fail_nth_new.cpp, preloaded on
rank 1 and then on rank 0, refuses the N-th allocation (N = 1..3) of each of their buffers' sizes.
A run that refuses one must end in under 10 s saying it ran out of memory, or run right where the
refusal was absorbed; in the calibration (the first refusal of each size but the activations')
the barriers had left the others waiting 300 s for the rank that stopped. Then the whole run's
allocations of at least 1 KiB on rank 1 and on rank 0, 40 of each refused one run at a time.

    check_autoshard_mlp_oom.py PROGRAM MPIEXEC FAIL_NTH_NEW_MODULE
"""
import pathlib
import re
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from fail_nth import Checks, refused, timed_run, victim_command  # noqa: E402

program, mpiexec, module = sys.argv[1], sys.argv[2], sys.argv[3]
args = [program, "--mesh", "2x2", "--batch", "32", "--hidden", "512", "--ffn", "2048"]
checks = Checks()
r, _ = timed_run(checks, [mpiexec, "-n", "4", *args], "no fault")
if r is None or not checks.check(r.returncode == 0, f"no fault: exit {r.returncode}: {r.stderr[-400:]!r}"):
    checks.finish("")
gemm = re.search(r"timed sgemms (\d+)x(\d+) @ (\d+)x(\d+)", r.stdout)
reduce = re.search(r"median all-reduce of 4 bytes [0-9.]+ us, of (\d+) bytes", r.stdout)
if not checks.check(gemm and reduce, f"no fault: the calibration's sizes are not in the report: {r.stdout[:600]!r}"):
    checks.finish("")
m, k, _, n = (int(x) for x in gemm.groups())
sizes = sorted({4 * m * k, 4 * k * n, 4 * m * n, int(reduce.group(1))})
for victim in (1, 0):
    for size in sizes:
        refused_somewhere = False
        for nth in range(1, 4):
            what = f"rank {victim}, allocation {nth} of {size} bytes"
            env = {"MESHCAST_FAIL_SIZE": size, "MESHCAST_FAIL_NTH": nth}
            r, seconds = timed_run(checks, victim_command(mpiexec, 4, victim, args, module, env), what)
            if r is None:
                continue
            if not refused(r) or r.returncode == 0:
                checks.check(r.returncode == 0, f"{what}: exit {r.returncode}: {r.stderr[-400:]!r}")
                continue
            refused_somewhere = True
            said = r.stdout + r.stderr
            # Past the calibration a buffer of the same size (a tile, an activation) may be the one
            # refused: the run must stop as fast, saying in words what ran out (not "std::bad_alloc").
            if checks.check(seconds < 10 and "out of memory" in said and "bad_alloc" not in said,
                            f"{what}: exit {r.returncode} after {seconds:.1f} s: {said[-600:]!r}"):
                print(f"{what}: every rank stopped in {seconds:.2f} s", flush=True)
        checks.check(refused_somewhere, f"rank {victim}: no allocation of {size} bytes stopped the run: the case tests nothing")
# The whole run: the module armed from the start counts the allocations of at least 1 KiB on the
# victim, then 40 of them spread over the count are refused, one run each (options, calibration,
# solve, plan, resharders, tiles, the run and its check): each run must stop in under 10 s saying
# "out of memory" in words, not a bare "std::bad_alloc" (the stages' agreements passed e.what()).
MIN_BYTES, MOST = 1024, 40
for victim in (1, 0):  # rank 0 also solves and computes the single-process reference
    env = {"MESHCAST_FAIL_MIN_SIZE": MIN_BYTES, "MESHCAST_FAIL_NTH": 0, "MESHCAST_FAIL_ARMED": 1}
    r, _ = timed_run(checks, victim_command(mpiexec, 4, victim, args, module, env), f"rank {victim}, none refused")
    counted = [int(n) for n in re.findall(r"fail_nth_new: counted (\d+) allocations", r.stderr)] if r else []
    if not checks.check(r is not None and r.returncode == 0 and len(counted) == 1 and counted[0] > MOST,
                        f"rank {victim}, none refused: counts {counted}"):
        continue
    total = counted[0]
    slowest, absorbed = 0.0, 0
    for nth in sorted({1 + (k * total) // MOST for k in range(MOST)}):
        what = f"rank {victim}, allocation {nth} of the {total} of at least {MIN_BYTES} bytes"
        env["MESHCAST_FAIL_NTH"] = nth
        r, seconds = timed_run(checks, victim_command(mpiexec, 4, victim, args, module, env), what)
        if r is None or not checks.check(refused(r), f"{what}: none was refused"):
            continue
        if r.returncode == 0:
            absorbed += 1
            continue
        said = r.stdout + r.stderr
        if checks.check(seconds < 10 and "out of memory" in said and "bad_alloc" not in said,
                        f"{what}: exit {r.returncode} after {seconds:.1f} s: {said[-600:]!r}"):
            slowest = max(slowest, seconds)
    checks.check(absorbed < MOST, f"rank {victim}: every refusal was absorbed: the sweep tests nothing")
    print(f"rank {victim}: {MOST} of {total} allocations refused one at a time; each run ended in {slowest:.2f} s "
          f"at most, saying so, but {absorbed} where the refusal was absorbed", flush=True)
checks.finish("autoshard-mlp out of memory: ok")

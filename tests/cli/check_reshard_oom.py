#!/usr/bin/env python3
"""meshcast-reshard (with --exec-trace) with one rank of four out of memory alone:
tests/mpi/fail_nth_new.cpp, preloaded on that rank and armed from the start, counts the
allocations of at least 1 KiB the whole program makes there, then refuses each in a run of its own
(every one up to 120 a rank, else 120 spread over the count), on a receiver and on rank 0, which
solves and writes the trace. Every run must end in under 10 s with "out of memory" said, or run
right where the refusal was absorbed (std::stable_sort's nothrow buffer). Before the trace's
gathers were agreed on, rank 0 out of memory for the gathered steps left the others in the gather
until --timeout-s (20 s).

Then allocations of any size, 40 spread over each rank's count: every run must end in under 10 s
saying "out of memory" on the victim, never by std::terminate (a plan made before the flags' try
block did). Before the MPI backend prepared its groups in the executor's setup, a 16-byte
allocation of a group's member list failed the victim alone once the others waited in the group's
barrier, and they named it only at --timeout-s.

    check_reshard_oom.py MESHCAST_RESHARD MPIEXEC FAIL_NTH_NEW_MODULE
"""
import pathlib
import re
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from fail_nth import Checks, refused, timed_run, victim_command  # noqa: E402

program, mpiexec, module = sys.argv[1], sys.argv[2], sys.argv[3]
MIN_BYTES, MOST = 1024, 120
SMALL_MOST = 40
checks = Checks()
with tempfile.TemporaryDirectory() as tmp:
    args = [program, "--shape", "1024x64", "--max-staging-bytes", "8192", "--src-mesh", "4", "--src-spec", "S0,R", "--dst-mesh", "4", "--dst-spec", "R,R",
            "--same-mesh", "--strategy", "broadcast", "--devices-per-host", "1", "--timeout-s", "20",  # 64 broadcasts
            "--exec-trace", str(pathlib.Path(tmp) / "trace.json")]
    for victim, min_bytes, most in ((2, MIN_BYTES, MOST), (0, MIN_BYTES, MOST), (2, 1, SMALL_MOST), (0, 1, SMALL_MOST)):
        # a receiver; rank 0, which solves and gathers the trace; then both for allocations of any size
        env = {"MESHCAST_FAIL_MIN_SIZE": min_bytes, "MESHCAST_FAIL_NTH": 0, "MESHCAST_FAIL_ARMED": 1}
        r, _ = timed_run(checks, victim_command(mpiexec, 4, victim, args, module, env), f"rank {victim}, none refused")
        if r is None:
            continue
        counted = [int(n) for n in re.findall(r"fail_nth_new: counted (\d+) allocations", r.stderr)]
        if not checks.check(r.returncode == 0 and len(counted) == 1 and counted[0] > 0,
                            f"rank {victim}, none refused: exit {r.returncode}, counts {counted}: {r.stderr[-400:]!r}"):
            continue
        total = counted[0]
        picks = sorted({1 + (k * total) // most for k in range(most)}) if total > most else range(1, total + 1)
        slowest, absorbed = 0.0, 0
        for nth in picks:
            what = f"rank {victim}, allocation {nth} of the {total} of at least {min_bytes} bytes"
            env["MESHCAST_FAIL_NTH"] = nth
            r, seconds = timed_run(checks, victim_command(mpiexec, 4, victim, args, module, env), what)
            if r is None:
                continue
            if not checks.check(refused(r), f"{what}: none was refused: {r.stderr[-400:]!r}"):
                continue
            if r.returncode == 0:
                absorbed += 1
                continue
            said = "out of memory" in r.stderr and "terminate called" not in r.stderr
            if checks.check(said and seconds < 10, f"{what}: exit {r.returncode} after {seconds:.1f} s: {r.stderr[-700:]!r}"):
                slowest = max(slowest, seconds)
        print(f"rank {victim}: {len(picks)} of {total} allocations of at least {min_bytes} bytes refused one at a time; "
              f"each run ended in {slowest:.2f} s at most, saying so, but {absorbed} where the refusal was absorbed", flush=True)
checks.finish("meshcast-reshard out of memory: ok")

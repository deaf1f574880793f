#!/usr/bin/env python3
"""A batch resharder's construction with one rank of four out of memory alone
(tests/mpi/executor_setup_oom.cpp; tests/mpi/fail_nth_new.cpp preloaded on that rank refuses the
N-th allocation of at least 1 KiB the construction makes there). First a run that refuses none
counts them; then, for a receiver and for the root that solves, each of them is refused in a run
of its own (every one up to 120 a rank, else 120 spread over the count). Every rank must stop with
an error in under 10 s, or the batch run right (std::stable_sort does without the buffer it asks
for with nothrow new, which the module refuses too). The executor made its broadcast groups, a
collective, before the others learnt that its setup failed on one rank, and they waited out the
20 s timeout there (24 of rank 2's 41 allocations); so they did where the resharder's state or a
schedule under 64 KiB was refused.

Then allocations of any size, 60 spread over each rank's count, with the same requirements. Before
the front end made the ranks' key inside its first agreement, the schedules were compared by
reductions and the bounded collectives fell back on static slots for their state, a rank without
room for 8 or 31 bytes there failed alone and the others waited out the timeout (7 of 400).

Last, with --discover-hosts, every allocation meshcast::discover_hosts makes on each of the two is
refused, one run each. Before it made room for the gather's answers before the reduction every rank
passes first, a rank without it failed alone and the others waited in the gather until the timeout.

    check_executor_setup_oom.py PROGRAM MPIEXEC FAIL_NTH_NEW_MODULE
"""
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from fail_nth import Checks, refused, timed_run, victim_command  # noqa: E402

program, mpiexec, module = sys.argv[1], sys.argv[2], sys.argv[3]
MIN_BYTES = 1024
checks = Checks()
passes = [(2, MIN_BYTES, 120, []), (0, MIN_BYTES, 120, []), (2, 1, 60, []), (0, 1, 60, []),  # a receiver, the root
          (2, 1, 1000, ["--discover-hosts"]), (0, 1, 1000, ["--discover-hosts"])]                # every one discovery makes
for victim, min_bytes, most, flags in passes:
    env = {"MESHCAST_FAIL_MIN_SIZE": min_bytes, "MESHCAST_FAIL_NTH": 0}
    command = [program, *flags]
    r, seconds = timed_run(checks, victim_command(mpiexec, 4, victim, command, module, env), f"rank {victim}, none refused")
    if r is None:
        continue
    counts = [int(line.split()[1]) for line in r.stdout.splitlines() if line.startswith("armed_allocations ")]
    if not checks.check(r.returncode == 0 and len(counts) == 1 and counts[0] > 0,
                        f"rank {victim}, none refused: exit {r.returncode}, counts {counts}: {r.stderr[-400:]!r}"):
        continue
    total = counts[0]
    picks = sorted({1 + (k * total) // most for k in range(most)}) if total > most else range(1, total + 1)
    slowest, absorbed = 0.0, 0
    for nth in picks:
        what = f"rank {victim}{' ' + ' '.join(flags) if flags else ''}, allocation {nth} of the {total} of at least {min_bytes} bytes"
        env["MESHCAST_FAIL_NTH"] = nth
        r, seconds = timed_run(checks, victim_command(mpiexec, 4, victim, command, module, env), what)
        if r is None:
            continue
        if not checks.check(refused(r), f"{what}: none was refused: {r.stderr[-400:]!r}"):
            continue
        if r.returncode == 0:  # absorbed: std::stable_sort asks for its buffer with nothrow new and sorts
            absorbed += 1      # without one; the batch then ran and was checked
            continue
        ranks = {k for k in range(4) if f"executor_setup_oom (rank {k}): error: " in r.stderr}
        if checks.check(r.returncode != 0 and ranks == {0, 1, 2, 3} and seconds < 10 and "out of memory" in r.stderr,
                        f"{what}: exit {r.returncode} after {seconds:.1f} s, ranks that said why {sorted(ranks)}: "
                        f"{r.stderr[-700:]!r}"):
            slowest = max(slowest, seconds)
    print(f"rank {victim}{' ' + ' '.join(flags) if flags else ''}: {len(picks)} of {total} allocations of at least {min_bytes} bytes refused one at a time; every rank stopped each time, "
          f"in {slowest:.2f} s at most, but {absorbed} times where the refusal was absorbed and the batch ran right",
          flush=True)
checks.finish("executor setup out of memory: ok")

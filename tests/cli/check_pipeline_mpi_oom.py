#!/usr/bin/env python3
"""meshcast-pipeline-mpi (examples/pipelines/chain4.json, four stages of one rank) with one rank
out of memory alone: tests/mpi/fail_nth_new.cpp, preloaded on rank 1 and then on rank 0 and armed
from the start, counts the allocations of any size of a whole run there, then refuses its first
and 40 spread over the count, each in a run of its own. Every run must end in under 10 s with
"out of memory" said, never by std::terminate, or run right where the refusal was absorbed.
Before the input's agreement let the lowest failing rank speak (it had been rank 0 alone, since
input errors are the same on every rank), rank 1 without room while reading the pipeline and
predicting its transfers ended every rank with status 2 and not a word: 58 of 60 such refusals.

    check_pipeline_mpi_oom.py MESHCAST_PIPELINE_MPI MPIEXEC FAIL_NTH_NEW_MODULE PIPELINES_DIR
"""
import pathlib
import re
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from fail_nth import Checks, refused, timed_run, victim_command  # noqa: E402

program, mpiexec, module, pipelines = sys.argv[1:5]
MOST = 40
args = [program, str(pathlib.Path(pipelines) / "chain4.json"), "--ranks-per-stage", "1", "--policy", "prior_first", "--json",
        "--time-unit-ms", "10", "--repeat", "2", "--timeout-s", "20"]
checks = Checks()
for victim in (1, 0):  # a stage of its own, then rank 0, which orders the transfers and reports
    env = {"MESHCAST_FAIL_MIN_SIZE": 1, "MESHCAST_FAIL_NTH": 0, "MESHCAST_FAIL_ARMED": 1}
    r, _ = timed_run(checks, victim_command(mpiexec, 4, victim, args, module, env), f"rank {victim}, none refused")
    if r is None:
        continue
    counted = [int(n) for n in re.findall(r"fail_nth_new: counted (\d+) allocations", r.stderr)]
    if not checks.check(r.returncode == 0 and len(counted) == 1 and counted[0] > 0,
                        f"rank {victim}, none refused: exit {r.returncode}, counts {counted}: {r.stderr[-400:]!r}"):
        continue
    total = counted[0]
    picks = sorted({1} | {1 + (k * total) // MOST for k in range(MOST)})
    slowest, absorbed = 0.0, 0
    for nth in picks:
        what = f"rank {victim}, allocation {nth} of the {total} of any size"
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
    print(f"rank {victim}: {len(picks)} of {total} allocations refused one at a time; each run ended saying so in "
          f"{slowest:.2f} s at most, but {absorbed} times where the refusal was absorbed and the run ended right", flush=True)
checks.finish("pipeline out of memory: ok")

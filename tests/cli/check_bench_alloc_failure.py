#!/usr/bin/env python3
"""One rank of four runs out of memory alone while meshcast-bench makes a benchmark's buffers
(meshcast's and each MPI peer's): every rank must stop with an error, at once, never hang nor wait
out its timeout. Rank 2 runs under fail_nth_new (LD_PRELOAD), which refuses the N-th allocation of
one size; N runs from 1 to 4 over allocations of the size of a tile, a piece or the tensor.
Before the peers' buffers were agreed on, MPI_Bcast's ranks hung in MPI_Comm_split for ever and
MPI_Allgatherv's waited out --timeout-s.

    check_bench_alloc_failure.py PROGRAM MPIEXEC FAIL_NTH_NEW_MODULE
"""
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from fail_nth import Checks, refused, timed_run, victim_command  # noqa: E402

program, mpiexec, module = sys.argv[1], sys.argv[2], sys.argv[3]
checks = Checks()
TIMEOUT_S = 20  # the job's --timeout-s: a rank left waiting takes at least this long

# (peer, size in bytes of the allocations refused, flags); 1 MiB of int32 over 4 ranks
CASES = [
    ("MPI_Bcast", 524288, "--src-mesh 2 --src-spec S0,R --dst-mesh 2 --dst-spec R,R"),
    ("MPI_Allgatherv", 1048576, "--src-mesh 4 --src-spec S0,R --dst-mesh 4 --dst-spec R,R --same-mesh"),
    ("MPI_Alltoallv", 262144, "--src-mesh 4 --src-spec S0,R --dst-mesh 4 --dst-spec R,S0 --same-mesh"),
    ("MPI_Isend", 262144, "--src-mesh 2 --src-spec S0,R --dst-mesh 2 --dst-spec R,S0"),
]
for peer, size, flags in CASES:
    args = [program, "--shape", "1024x256", *flags.split(), "--min-bytes", "1M", "--max-bytes", "1M", "--peer", "mpi",
            "--timeout-s", str(TIMEOUT_S), "--benchmark_min_time=0.01"]
    refused_somewhere = False
    for nth in range(1, 5):
        what = f"{peer}, allocation {nth} of {size} bytes on rank 2"
        env = {"MESHCAST_FAIL_SIZE": size, "MESHCAST_FAIL_NTH": nth}
        r, seconds = timed_run(checks, victim_command(mpiexec, 4, 2, args, module, env), what)
        if r is None:
            continue
        if not refused(r):  # there is no such allocation: the run is a plain one
            checks.check(r.returncode == 0, f"{what} (none made): exit {r.returncode}: {r.stderr[-400:]!r}")
            continue
        refused_somewhere = True
        ranks = {rank for rank in range(4) if f"meshcast benchmark (rank {rank}): error: " in r.stderr}
        if checks.check(r.returncode == 2 and ranks == {0, 1, 2, 3} and seconds < TIMEOUT_S / 2,
                        f"{what}: exit {r.returncode} after {seconds:.1f} s, ranks that said why {sorted(ranks)}: "
                        f"{r.stderr[-600:]!r}"):
            print(f"{what}: every rank stopped in {seconds:.2f} s", flush=True)
    checks.check(refused_somewhere, f"{peer}: no allocation of {size} bytes was refused: the case tests nothing")
checks.finish("bench allocation failure: ok")

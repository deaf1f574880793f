"""What the out-of-memory drivers share (tests/cli/check_*_oom.py, check_bench_alloc_failure.py):
a job of MPI ranks with one of them under tests/mpi/fail_nth_new.cpp, run under a deadline and
timed, and the failures the checks collect."""
import subprocess
import sys
import time


class Checks:
    def __init__(self):
        self.failures = []

    def check(self, ok, what):
        if not ok:
            self.failures.append(what)
            print("FAILED:", what, flush=True)
        return ok

    def finish(self, passed):
        """Exits: 1 after any failure, else 0 with `passed` printed."""
        if self.failures:
            print(f"{len(self.failures)} failures")
            sys.exit(1)
        print(passed)
        sys.exit(0)


def victim_command(mpiexec, ranks, victim, args, module, env):
    """mpiexec's MPMD form: every rank runs `args`; rank `victim` alone with `module` preloaded and
    the environment `env` (name -> value)."""
    settings = ["-env", "LD_PRELOAD", module]
    for name, value in env.items():
        settings += ["-env", name, str(value)]
    parts = []
    for rank in range(ranks):
        parts += ([":"] if rank else []) + ["-n", "1"] + (settings if rank == victim else []) + list(args)
    return [mpiexec, *parts]


def timed_run(checks, command, what, timeout_s=120):
    """(completed process, seconds), or (None, None) with a failure when it outlives `timeout_s`."""
    start = time.monotonic()
    try:
        r = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        checks.check(False, f"{what}: still running after {timeout_s} s")
        return None, None
    return r, time.monotonic() - start


def refused(r):
    """Whether the preloaded module refused an allocation in that run."""
    return "fail_nth_new: allocation" in r.stderr

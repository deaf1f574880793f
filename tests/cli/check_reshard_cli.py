#!/usr/bin/env python3
"""meshcast-reshard's contract: exit status, summary line, --dump files holding each element's
global index, and clear failures (wrong rank count, bad input) instead of hangs.

Usage: check_reshard_cli.py MPIEXEC PATH/TO/meshcast-reshard
"""
import itertools
import os
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from layout_oracle import parse_spec, tile  # noqa: E402
import tempfile

MPIEXEC, RESHARD = sys.argv[1], sys.argv[2]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


def run(n, args, timeout=240):
    return subprocess.run([MPIEXEC, "-n", str(n), RESHARD] + args, capture_output=True, text=True, timeout=timeout)






cases = [
    # (ranks, args)
    (20, ["--shape", "64x32x17", "--src-mesh", "2x4", "--src-spec", "S0,R,R", "--dst-mesh", "3x4", "--dst-spec", "R,S0,R"]),
    (8, ["--shape", "13x7", "--src-mesh", "2x4", "--src-spec", "S1,S0", "--dst-mesh", "4x2", "--dst-spec", "S01,R", "--same-mesh"]),
    (6, ["--shape", "9x5", "--src-mesh", "3", "--src-spec", "R,S0", "--dst-mesh", "3", "--dst-spec", "S0,R"]),
    (5, ["--shape", "11", "--src-mesh", "4", "--src-spec", "S0", "--dst-mesh", "3", "--dst-spec", "R",
         "--dst-devices", "2,3,4", "--dtype-bytes", "8"]),
]
for ranks, args in cases:
    for strategy, solver, more in [("send_recv", "greedy", []), ("send_recv_allgather", "open_shop", []),
                                   ("broadcast", "naive", []), ("broadcast", "greedy", ["--mpi-broadcast", "chain"]),
                                   ("send_recv", "alpa_greedy", [])]:
        with tempfile.TemporaryDirectory() as dump:
            full = args + ["--strategy", strategy, "--solver", solver, "--split-replicas", "--dump", dump] + more
            r = run(ranks, full)
            name = f"{ranks} ranks {' '.join(full)}"
            check(r.returncode == 0, f"{name}: exit {r.returncode}\n{r.stdout}\n{r.stderr}")
            lines = [l for l in r.stdout.splitlines() if l.startswith("meshcast-reshard:")]
            check(len(lines) == 1 and "0 wrong elements" in lines[0], f"{name}: summary {r.stdout!r}")
            if r.returncode != 0:
                continue  # no dump to check: the failure above says why
            # The dumped shards hold each element's global index.
            flags = dict(zip(full[0::2], full[1::2]))
            shape = [int(x) for x in flags["--shape"].split("x")]
            eb = int(flags.get("--dtype-bytes", "4"))
            mesh = [int(x) for x in flags["--dst-mesh"].split("x")]
            n_src = 1
            for x in flags["--src-mesh"].split("x"):
                n_src *= int(x)
            n_dst = 1
            for x in mesh:
                n_dst *= x
            if "--same-mesh" in full:
                ids = list(range(n_dst))
            elif "--dst-devices" in flags:
                ids = [int(x) for x in flags["--dst-devices"].split(",")]
            else:
                ids = list(range(n_src, n_src + n_dst))
            spec = parse_spec(flags["--dst-spec"])
            for j, dev in enumerate(ids):
                box = tile(mesh, spec, shape, j)
                path = os.path.join(dump, f"rank{dev}.bin")
                vol = 1
                for lo, hi in box:
                    vol *= max(0, hi - lo)
                if vol == 0:
                    continue
                data = open(path, "rb").read()
                check(len(data) == vol * eb, f"{name}: {path} has {len(data)} bytes")
                fmt = "<i" if eb == 4 else "<q"
                for k, e in enumerate(itertools.product(*[range(lo, hi) for lo, hi in box])):
                    lin = 0
                    for d, x in enumerate(e):
                        lin = lin * shape[d] + x
                    got = struct.unpack_from(fmt, data, k * eb)[0]
                    want = lin if lin < 2 ** (8 * eb - 1) else lin - 2 ** (8 * eb)
                    if got != want:
                        check(False, f"{name}: {path} element {e} holds {got}, expected {want}")
                        break

# Clear failures: exit status 2 and a message, never a hang.
base = ["--shape", "8x8", "--src-mesh", "2", "--src-spec", "S0,R", "--dst-mesh", "2", "--dst-spec", "R,S0"]
r = run(3, base, timeout=60)
check(r.returncode == 2 and "run with mpiexec -n 4" in r.stderr, f"wrong rank count: {r.returncode} {r.stderr}")
r = run(4, base[:-1] + ["S9,R"], timeout=60)
check(r.returncode == 2 and "S9" in r.stderr, f"bad spec: {r.returncode} {r.stderr}")
r = run(4, base + ["--solver", "open_shop", "--strategy", "broadcast"], timeout=60)
check(r.returncode == 2 and "does not apply" in r.stderr, f"inapplicable solver: {r.returncode} {r.stderr}")

if failures:
    print("\n".join(failures[:20]))
    print(f"{len(failures)} failures")
    sys.exit(1)
print("meshcast-reshard contract: all checks passed")

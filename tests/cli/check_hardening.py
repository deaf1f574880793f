#!/usr/bin/env python3
"""Regression tests for bad input on the command-line tools: every case that once crashed, hung,
wrapped a size or ended with a wrong exit status. Each case checks the exit status, the message
and a generous time bound (a regression, not a benchmark).

Usage: check_hardening.py PATH/TO/meshcast-plan [MPIEXEC PATH/TO/meshcast-reshard]
"""
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time

PLAN = sys.argv[1]
MPIEXEC = sys.argv[2] if len(sys.argv) > 3 else None
RESHARD = sys.argv[3] if len(sys.argv) > 3 else None
failures = []
# Sanitizer builds run several times slower: ctest passes a scale for the time bounds.
SCALE = float(os.environ.get("MESHCAST_TIME_SCALE", "1"))
# AddressSanitizer reserves terabytes of address space for its shadow memory at start, so an
# address-space limit (RLIMIT_AS) stops it before main: under a sanitizer the memory cases run
# without the limit (their message and status are still checked; the release build checks memory).
SANITIZED = os.environ.get("MESHCAST_SANITIZED", "0") not in ("", "0", "OFF", "FALSE")
BASE = ["--shape", "64x64", "--src-mesh", "2", "--src-spec", "S0,R", "--dst-mesh", "2", "--dst-spec", "R,S0"]


def check(cond, what):
    if not cond:
        failures.append(what)


def limit_memory(gib):
    def apply():
        cap = int(gib * (1 << 30))
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    return apply


def run(cmd, timeout=120, stdout=subprocess.PIPE, memory_gib=None):
    t0 = time.monotonic()
    try:
        r = subprocess.run(cmd, stdout=stdout, stderr=subprocess.PIPE, timeout=timeout,
                           preexec_fn=limit_memory(memory_gib) if memory_gib and not SANITIZED else None)
    except subprocess.TimeoutExpired:
        return None, "", "", time.monotonic() - t0
    out = r.stdout.decode(errors="replace") if isinstance(r.stdout, bytes) else ""
    return r.returncode, out, r.stderr.decode(errors="replace"), time.monotonic() - t0


def expect(name, cmd, status, text=None, seconds=60, **kw):
    """status None: any non-zero status."""
    seconds *= SCALE
    rc, out, err, took = run(cmd, timeout=seconds + 30, **kw)
    check(rc is not None, f"{name}: did not end within {seconds + 30} s")
    if rc is None:
        return out, err
    check(rc == status if status is not None else rc != 0, f"{name}: exit {rc}, expected {status}\n{err[-2000:]}")
    if text is not None:
        check(text in err, f"{name}: stderr does not say {text!r}: {err[-1000:]!r}")
    check(took <= seconds, f"{name}: took {took:.1f} s, more than {seconds} s")
    check("terminate called" not in err and "runtime error" not in err, f"{name}: crashed: {err[-1000:]!r}")
    return out, err


# --- meshcast-plan ---------------------------------------------------------------------------
plan = [PLAN]
expect("mesh product wraps", plan + ["--shape", "8x8", "--src-mesh", "384773x95883776011880", "--src-spec", "R,R",
                                     "--dst-mesh", "2", "--dst-spec", "R,R"], 2, "does not fit in 64 bits")
expect("shape product wraps", plan + ["--shape", "4294967296x4294967296", "--dtype-bytes", "1", "--src-mesh", "2",
                                      "--src-spec", "R,R", "--dst-mesh", "2", "--dst-spec", "R,R"], 2, "does not fit")
expect("shape just past 2^63", plan + ["--shape", "3037000500x3037000500", "--dtype-bytes", "1", "--src-mesh", "2",
                                       "--src-spec", "R,R", "--dst-mesh", "2", "--dst-spec", "R,R"], 2, "does not fit")
expect("bytes past 2^63", plan + ["--shape", "2147483648x2147483648", "--dtype-bytes", "4", "--src-mesh", "2",
                                  "--src-spec", "R,R", "--dst-mesh", "2", "--dst-spec", "R,R"], 2, "more bytes than fit")
expect("destination mesh wraps (was SIGFPE)", plan + ["--shape", "8x8", "--src-mesh", "2", "--src-spec", "R,R",
       "--dst-mesh", "4294967296x4294967296", "--dst-spec", "S01,R"], 2, "mesh '4294967296x4294967296'")
expect("source mesh wraps (was SIGSEGV)", plan + ["--shape", "8x8", "--src-mesh", "4294967296x4294967296",
       "--src-spec", "R,R", "--dst-mesh", "2", "--dst-spec", "R,R"], 2, "mesh '4294967296x4294967296'")
expect("mesh beyond max_devices", plan + ["--shape", "8x8", "--src-mesh", "2048x1024", "--src-spec", "R,R",
       "--dst-mesh", "2", "--dst-spec", "R,R"], 2, "max_devices")
for bad in ["inf", "1e300", "nan", "-1", "0"]:
    expect(f"--nic-gbps {bad} (was an endless loop)", plan + BASE + ["--nic-gbps", bad, "--solver", "greedy"], 2,
           "--nic-gbps", seconds=10)
for bad in ["inf", "1e13", "nan", "-5"]:
    expect(f"--time-limit-ms {bad} (was UB in a duration cast)", plan + BASE + ["--time-limit-ms", bad, "--solver", "greedy"],
           2, "--time-limit-ms", seconds=10)
expect("--nics-per-host 4294967297 (became 1)", plan + BASE + ["--nics-per-host", "4294967297", "--solver", "greedy"], 2,
       "--nics-per-host")
expect("--devices-per-host 0 (was taken as the default)", plan + BASE + ["--devices-per-host", "0"], 2, "--devices-per-host")
expect("a device id of 100,000,000 allocates nothing", plan + ["--shape", "8", "--src-mesh", "4", "--src-spec", "S0",
       "--dst-mesh", "4", "--dst-spec", "S0", "--dst-devices", "0,1,2,100000000"], 2, "100000000", seconds=10, memory_gib=1)
out, err = expect("control characters are escaped, the input named once",
                  plan + ["--shape", "8\x1bx8", "--src-mesh", "2", "--src-spec", "R,R", "--dst-mesh", "2", "--dst-spec", "R,R"],
                  2, "\\x1b")
check("\x1b" not in err, f"raw escape character in {err!r}")
out, err = expect("no repeated input", plan + ["--shape", "8x8", "--src-mesh", "2,4", "--src-spec", "R,R", "--dst-mesh", "2",
                                               "--dst-spec", "R,R"], 2, "'2,4'")
check(err.count("2,4") == 2, f"the message repeats the input: {err!r}")  # once in quotes, once as the bad part
# Time limits hold at every size (instance building aside): 65,536 units.
big = ["--shape", "4096x4096", "--src-mesh", "256", "--src-spec", "S0,R", "--dst-mesh", "256", "--dst-spec", "R,S0",
       "--same-mesh", "--devices-per-host", "4", "--time-limit-ms", "500"]
for solver in ["alpa_dfs", "alpa_greedy", "greedy", "branch_and_bound", "open_shop"]:
    expect(f"{solver} on 65,536 units keeps its limit (alpa_dfs overflowed the stack)", plan + big + ["--solver", solver], 0,
           seconds=45)
expect("ilp on 1,024 tasks keeps its limit (took 48 s)", plan + ["--shape", "4096x4096", "--src-mesh", "32", "--src-spec",
       "S0,R", "--dst-mesh", "32", "--dst-spec", "R,S0", "--devices-per-host", "4", "--solver", "ilp", "--time-limit-ms", "1000"],
       0, seconds=30, memory_gib=4)
with open("/dev/full", "w") as full:
    expect("stdout on a full disk", plan + BASE, 2, "cannot write to standard output", stdout=full)
    expect("--json on a full disk", plan + BASE + ["--json"], 2, "cannot write to standard output", stdout=full)
    expect("--help on a full disk (was exit 0)", plan + ["--help"], 2, "cannot write to standard output", stdout=full)
    expect("--manifest's --help on a full disk (was exit 0)", plan + ["--manifest", "absent.json", "--help"], 2,
           "cannot write to standard output", stdout=full)
expect("--trace on a full disk", plan + BASE + ["--solver", "greedy", "--trace", "/dev/full"], 2, "cannot write trace file")
with tempfile.TemporaryDirectory() as tmp:
    trace = os.path.join(tmp, "t.json")
    expect("--trace without --solver writes the trace", plan + BASE + ["--trace", trace], 0)
    check(os.path.exists(trace) and "traceEvents" in open(trace).read(), "--trace without --solver wrote no trace")
# A flag naming something given '' was taken as "not given" (the defaults ran).
for flag in ("--strategy", "--solver", "--trace"):
    expect(f"{flag} '' is an error", plan + BASE + [flag, ""], 2, f"{flag} '' names nothing", seconds=10)
# The default staging cap (256 MiB: tasks cut to 128 MiB) applies to the plan as to the run; the
# plan once cut only when --max-staging-bytes was given, predicting one transfer where two ran.
CAPPED = ["--shape", "8192x4097", "--dtype-bytes", "4", "--src-mesh", "1x1", "--src-spec", "R,R", "--dst-mesh", "1x1",
          "--dst-spec", "R,R", "--solver", "greedy", "--nic-efficiency", "1", "--eager-bytes", "65536"]
out, _ = expect("plan: the default staging cap", plan + CAPPED + ["--json"], 0, seconds=30)
planned = json.loads(out)["schedule"] if out.strip() else {}
check(len(planned.get("ops", [])) == 2, f"plan under the default cap: {len(planned.get('ops', []))} ops, expected 2")
# A staging cap cutting 1 TiB into 2^39 pieces built them all before counting (out of memory);
# pieces ending at 2^63 - 1 wrapped (UBSan; a loop pushing boxes until memory ran out).
expect("plan: pieces past the limit are counted before they are made", plan + ["--shape", "1099511627776", "--dtype-bytes",
       "1", "--src-mesh", "2", "--src-spec", "S0", "--dst-mesh", "2", "--dst-spec", "R", "--max-staging-bytes", "2"], 2,
       "pieces", seconds=10, memory_gib=1)
out, _ = expect("plan: pieces up to 2^63 - 1", plan + ["--shape", "9223372036854775807", "--dtype-bytes", "1", "--src-mesh", "1",
                "--src-spec", "R", "--dst-mesh", "1", "--dst-spec", "R", "--max-staging-bytes", str(1 << 50), "--json"], 0,
                seconds=30, memory_gib=2)
check(out.strip() != "" and len(json.loads(out).get("tasks", [])) == 16384, "plan: 2^63 - 1 bytes in 2^49-byte pieces")
# Two receivers of 2^63 - 1 bytes: the summary's total passed 64 bits and it stopped half-printed
# (exit 2) where --json succeeded; the total is a report figure, summed as a double.
out, _ = expect("plan: a summary delivering more than 2^63 bytes", plan + ["--shape", "9223372036854775807", "--dtype-bytes", "1",
                "--src-mesh", "2", "--src-spec", "S0", "--dst-mesh", "2", "--dst-spec", "R", "--max-staging-bytes", "0",
                "--solver", "greedy"], 0, seconds=30)
check("tasks delivering 16777216.0 TiB" in out, f"plan: summary of 2^64 bytes: {out!r}")
# open_shop split 2^53 + 3 rows in doubles: the rows summed past the region ("invalid schedule").
for rows in ["9007199254740995", "9223372036854775807"]:
    expect(f"plan: open_shop over {rows} rows, no staging cap", plan + ["--shape", rows, "--dtype-bytes", "1", "--src-mesh",
           "1", "--src-spec", "R", "--dst-mesh", "1", "--dst-spec", "R", "--max-staging-bytes", "0", "--solver", "open_shop",
           "--strategy", "send_recv"], 0, seconds=30)
# Control characters from a spec, a flag or a path are escaped in messages, as they are from --shape.
for name, args, said in [("a spec", BASE[:5] + ["S0,\x1b[2JR"] + BASE[6:], "\\x1b"),
                         ("an unknown flag", BASE + ["--bogus\x1b[31m"], "--bogus\\x1b"),
                         ("a manifest path", ["--manifest", "/nonexistent/\x1b[2J.json"], "\\x1b")]:
    out, err = expect(f"control characters in {name} are escaped", plan + args, 2, said, seconds=10)
    check("\x1b" not in err, f"raw escape character in {err!r}")
# A manifest was read whole before its size was checked: /dev/zero grew until memory ran out.
expect("plan: an endless manifest stops at the document limit", plan + ["--manifest", "/dev/zero"], 2,
       "larger than the limit", seconds=30, memory_gib=1.5)
# Repeated member names were searched linearly: an object of 100,000 members took minutes.
with tempfile.TemporaryDirectory() as tmp:
    many = os.path.join(tmp, "many_keys.json")
    with open(many, "w") as f:
        f.write("{" + ",".join(f'"k{i}":0' for i in range(100_000)) + "}")
    expect("plan: a manifest object of 100,000 members", plan + ["--manifest", many], 2, 'unknown key "k0"', seconds=10)
if not SANITIZED:  # needs the address-space limit to run out of memory (see SANITIZED)
    expect("out of memory is a message, not terminate", plan + ["--shape", "1048576x1048576", "--src-mesh", "1024x1024",
           "--src-spec", "S0,S1", "--dst-mesh", "1024x1024", "--dst-spec", "S1,S0", "--same-mesh", "--json"], 2,
           "out of memory", memory_gib=0.3)

# --- meshcast-reshard ------------------------------------------------------------------------
if RESHARD:
    mpi = [MPIEXEC, "-n"]
    expect("reshard: element count wraps (was a heap overflow)",
           mpi + ["2", RESHARD, "--shape", "4562284561x4043312912", "--dtype-bytes", "1", "--src-mesh", "1", "--src-spec",
                  "R,R", "--dst-mesh", "1", "--dst-spec", "R,R"], 2, "does not fit", seconds=30)
    expect("reshard: zero bytes planned (reported 0 wrong elements)",
           mpi + ["4", RESHARD, "--shape", "4294967296x4294967296", "--dtype-bytes", "1", "--src-mesh", "2", "--src-spec",
                  "R,R", "--dst-mesh", "2", "--dst-spec", "R,R"], 2, "does not fit", seconds=30)
    expect("reshard: --repeat 4294967296 (truncated to 0)", mpi + ["4", RESHARD] + BASE + ["--repeat", "4294967296"], 2,
           "--repeat", seconds=30)
    out, err = expect("reshard: --dump into a missing folder (hung)",
                      mpi + ["4", RESHARD] + BASE + ["--dump", "/missing/dir", "--timeout-s", "5"], 2, "/missing/dir",
                      seconds=5 + 5 + 10)
    for r in (2, 3):  # every destination rank reports its own failure, once
        check(err.count(f"(rank {r})") == 1, f"rank {r} did not report its own failure once: {err!r}")
    with tempfile.TemporaryDirectory() as tmp:
        expect("reshard: --dump writes a file for an empty shard",
               mpi + ["8", RESHARD, "--shape", "3", "--src-mesh", "4", "--src-spec", "S0", "--dst-mesh", "4", "--dst-spec",
                      "S0", "--dump", tmp], 0, seconds=60)
        names = sorted(os.listdir(tmp))
        check(names == [f"rank{r}.bin" for r in range(4, 8)], f"dump files {names}")
        check(os.path.exists(os.path.join(tmp, "rank7.bin")) and os.path.getsize(os.path.join(tmp, "rank7.bin")) == 0,
              "the empty shard's file is missing or not empty")
    for flag in ("--dump", "--exec-trace", "--trace"):
        expect(f"reshard: {flag} '' is an error", mpi + ["4", RESHARD] + BASE + [flag, ""], 2, f"{flag} '' names nothing",
               seconds=30)
    with tempfile.TemporaryDirectory() as tmp:  # --trace was accepted and ignored
        trace = os.path.join(tmp, "t.json")
        expect("reshard: --trace writes the model's schedule", mpi + ["4", RESHARD] + BASE + ["--trace", trace], 0,
               seconds=60)
        events = json.load(open(trace))["traceEvents"] if os.path.exists(trace) else []
        check(any(e.get("ph") == "X" for e in events), "reshard: --trace wrote no transfer")
    expect("reshard: --trace on a full disk", mpi + ["4", RESHARD] + BASE + ["--trace", "/dev/full"], 2,
           "cannot write trace file", seconds=60)
    out, _ = expect("reshard: the default staging cap", mpi + ["2", RESHARD] + CAPPED + ["--json"], 0, seconds=120)
    ran = json.loads(out) if out.strip() else {}
    check(ran.get("transfers") == 2 and ran.get("predicted_seconds") == planned.get("makespan_s"),
          f"reshard under the default cap: {ran.get('transfers')} transfers, predicted {ran.get('predicted_seconds')}; "
          f"the plan: {planned.get('makespan_s')}")
    with open("/dev/full", "w") as full:
        # mpiexec forwards the ranks' output: it is the one that meets the full disk.
        expect("reshard: summary on a full disk", mpi + ["4", RESHARD] + BASE, None, stdout=full, seconds=60)
    # A rank stopped mid-run: every other rank gives up within --timeout-s (plus the grace period
    # and start-up), names the silent device, and the job ends non-zero.
    cmd = mpi + ["4", RESHARD, "--shape", "1024x1001", "--src-mesh", "2", "--src-spec", "S0,R", "--dst-mesh", "2",
                 "--dst-spec", "R,S0", "--repeat", "1000000", "--timeout-s", "5"]
    t0 = time.monotonic()
    job = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    stopped = None

    def cpu_s(pid):  # CPU time a process has used (utime + stime), 0 if it is gone
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, IndexError, ValueError):
            return 0.0

    # Stop a rank only once every rank is resharding (each has used 0.5 s of CPU), not while they
    # still start up: MPI_Init's start-up exchange has no deadline of ours. Polled, however slow
    # the machine.
    while time.monotonic() - t0 < 120 * SCALE and job.poll() is None:
        time.sleep(0.1)
        ranks = subprocess.run(["pgrep", "-f", "meshcast-reshard --shape 1024x1001"], capture_output=True, text=True).stdout.split()
        ranks = [int(p) for p in ranks if int(p) != job.pid]
        if len(ranks) >= 4 and all(cpu_s(p) >= 0.5 for p in ranks):
            stopped = max(ranks)
            os.kill(stopped, signal.SIGSTOP)
            break
    check(stopped is not None, "could not find a rank to stop")
    t_stop = time.monotonic()
    try:
        _, err = job.communicate(timeout=(5 + 10) * SCALE + 30)
        err = err.decode(errors="replace")
        check(job.returncode != 0, "a stopped rank: the job ended with status 0")
        check(time.monotonic() - t_stop <= (5 + 10) * SCALE, f"a stopped rank: the others took {time.monotonic() - t_stop:.1f} s")
        check("did not" in err and "device" in err, f"a stopped rank: no message names it: {err[-1500:]!r}")
    except subprocess.TimeoutExpired:
        os.killpg(job.pid, signal.SIGKILL)
        failures.append("a stopped rank: the job hung")
    if stopped:
        try:
            os.kill(stopped, signal.SIGKILL)
        except ProcessLookupError:
            pass

if failures:
    print("\n".join(failures))
    print(f"{len(failures)} failures")
    sys.exit(1)
print("hardening regressions: all checks passed")

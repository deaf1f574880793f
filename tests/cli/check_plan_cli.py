#!/usr/bin/env python3
"""Checks meshcast-plan's command-line contract with an oracle written independently in Python.

Usage: check_plan_cli.py PATH/TO/meshcast-plan
"""
import itertools
import json
import os
import random
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from layout_oracle import parse_spec, tile  # noqa: E402

PLAN = sys.argv[1]
failures = []


def run(args):
    return subprocess.run([PLAN] + args, capture_output=True, text=True, timeout=60)


def check(cond, what):
    if not cond:
        failures.append(what)






def elements(box):
    return itertools.product(*[range(lo, hi) for lo, hi in box])


def expected_hosts(n_src, device_count, dph):
    first_dst_host = -(-n_src // dph)
    return [d // dph if d < n_src else first_dst_host + (d - n_src) // dph for d in range(device_count)]


def check_case(shape, src_mesh, src_spec, dst_mesh, dst_spec, dtype=4, same=False, dph=None):
    fmt = lambda xs: "x".join(map(str, xs))
    args = ["--shape", fmt(shape), "--dtype-bytes", str(dtype), "--src-mesh", fmt(src_mesh), "--src-spec", src_spec,
            "--dst-mesh", fmt(dst_mesh), "--dst-spec", dst_spec, "--json"]
    if same:
        args.append("--same-mesh")
    if dph:
        args += ["--devices-per-host", str(dph)]
    name = " ".join(args)
    r = run(args)
    check(r.returncode == 0, f"{name}: exit {r.returncode}: {r.stderr}")
    if r.returncode:
        return
    out = r.stdout.strip().splitlines()
    check(len(out) == 1, f"{name}: expected one line of JSON")
    j = json.loads(r.stdout)
    n = 1
    for s in src_mesh:
        n *= s
    m = 1
    for s in dst_mesh:
        m *= s
    src_ids = list(range(n))
    dst_ids = list(range(m)) if same else list(range(n, n + m))
    check(j["shape"] == list(shape), f"{name}: shape")
    check(j["element_bytes"] == dtype, f"{name}: element_bytes")
    check(j["src"] == {"mesh": list(src_mesh), "spec": src_spec, "devices": src_ids}, f"{name}: src {j['src']}")
    check(j["dst"] == {"mesh": list(dst_mesh), "spec": dst_spec, "devices": dst_ids}, f"{name}: dst {j['dst']}")
    device_count = max(src_ids + dst_ids) + 1
    check(j["host_of"] == expected_hosts(n, device_count, dph or src_mesh[-1]), f"{name}: host_of {j['host_of']}")
    sspec, dspec = parse_spec(src_spec), parse_spec(dst_spec)
    src_tiles = {src_ids[i]: tile(src_mesh, sspec, shape, i) for i in range(n)}
    dst_tiles = {dst_ids[i]: tile(dst_mesh, dspec, shape, i) for i in range(m)}
    got = {d: {} for d in dst_ids}
    for t in j["tasks"]:
        region = [tuple(r) for r in t["region"]]
        vol = 1
        for lo, hi in region:
            vol *= max(0, hi - lo)
        check(vol > 0, f"{name}: empty task")
        check(t["bytes"] == vol * dtype, f"{name}: bytes")
        inside = lambda box: all(b[0] <= lo and hi <= b[1] for (lo, hi), b in zip(region, box))
        check(sorted(t["senders"]) == [s for s in src_ids if inside(src_tiles[s])], f"{name}: senders {t}")
        first = [lo for lo, _ in region]
        needers = [d for d in dst_ids if all(b[0] <= x < b[1] for x, b in zip(first, dst_tiles[d]))]
        check(sorted(t["receivers"]) == needers, f"{name}: receivers {t}")
        for r in t["receivers"]:
            for e in elements(region):
                got[r][e] = got[r].get(e, 0) + 1
    for d in dst_ids:
        want = {e: 1 for e in elements(dst_tiles[d])}
        check(got[d] == want, f"{name}: device {d} does not receive its tile exactly once")


random.seed(3)
check_case((1024, 512)[:1] + (8,), (2, 4), "S0,R", (3, 4), "R,S01")
check_case((10, 7), (2, 2), "S0,R", (2, 2), "R,S01", same=True)
check_case((5, 3, 2), (2, 3), "S1,R,S0", (3,), "R,S0,R", dtype=2, dph=2)
check_case((13,), (4,), "S0", (3,), "S0", dtype=8)
check_case((0, 4), (2,), "S0,R", (2,), "R,S0")
for _ in range(40):
    rank = random.randint(1, 3)
    shape = tuple(random.randint(0, 6) for _ in range(rank))

    def rmesh():
        return tuple(random.randint(1, 3) for _ in range(random.randint(1, 2)))

    def rspec(mesh_rank):
        dims = [[] for _ in range(rank)]
        for a in random.sample(range(mesh_rank), mesh_rank):
            d = random.randint(-1, rank - 1)
            if d >= 0:
                dims[d].append(a)
        return ",".join("S" + "".join(map(str, x)) if x else "R" for x in dims)

    sm = rmesh()
    same = random.random() < 0.3
    dm = sm if same else rmesh()
    check_case(shape, sm, rspec(len(sm)), dm, rspec(len(dm)), dtype=random.choice([1, 2, 4, 8]), same=same,
               dph=random.choice([None, 1, 2, 3]))

# Misuse: exit status 2, a message naming the input, no stack trace.
base = ["--shape", "8x8", "--src-mesh", "2x4", "--src-spec", "S0,R", "--dst-mesh", "2x4", "--dst-spec", "R,S1"]
for bad, word in [(["--src-spec", "S0,Q"], "'Q'"), (["--src-mesh", "2x0"], "'2x0'"), (["--dst-spec", "S2,R"], "axis 2"),
                  (["--dst-spec", "S0,S0"], "mesh axis 0"), (["--src-spec", "S0"], "'S0'"),
                  (["--dst-mesh", "3x4", "--same-mesh"], "equal device counts"), (["--bogus"], "'--bogus'"),
                  (["--shape", "8xz"], "'8xz'"), (["--dtype-bytes", "0"], "--dtype-bytes '0'")]:
    args = list(base)
    for flag, value in zip(bad[0::2], bad[1::2] + [None]):
        if value is None:
            args.append(flag)
        elif flag in args:
            args[args.index(flag) + 1] = value
        else:
            args += [flag, value]
    r = run(args)
    check(r.returncode == 2, f"{bad}: exit {r.returncode}, expected 2")
    check(word in r.stderr, f"{bad}: stderr {r.stderr!r} does not name {word}")
    check("terminate" not in r.stderr and "Aborted" not in r.stderr, f"{bad}: crashed")

r = run(base)
check(r.returncode == 0 and "tasks" in r.stdout, f"summary: {r.returncode} {r.stdout}")


# Schedules: every solver and strategy, checked independently of the library.
def check_schedule_json(name, j, dph):
    sch = j["schedule"]
    for key in ["solver", "strategy", "makespan_s", "lower_bound_s", "solve_ms", "ops"]:
        check(key in sch, f"{name}: schedule lacks {key}")
    shape = j["shape"]
    host_of = j["host_of"]
    tasks = j["tasks"]
    src_mesh, dst_mesh = j["src"]["mesh"], j["dst"]["mesh"]
    sspec, dspec = parse_spec(j["src"]["spec"]), parse_spec(j["dst"]["spec"])
    src_tiles = {d: tile(src_mesh, sspec, shape, i) for i, d in enumerate(j["src"]["devices"])}
    dst_tiles = {d: tile(dst_mesh, dspec, shape, i) for i, d in enumerate(j["dst"]["devices"])}
    got = {d: {} for d in dst_tiles}
    arrival = {}
    end = 0.0
    for o in sch["ops"]:
        t = tasks[o["task"]]
        region = [tuple(r) for r in o["region"]]
        check(all(a <= lo and hi <= b for (lo, hi), (a, b) in zip(region, t["region"])), f"{name}: op region outside task")
        vol = 1
        for lo, hi in region:
            vol *= hi - lo
        check(o["bytes"] == vol * j["element_bytes"], f"{name}: op bytes")
        check(o["start_s"] <= o["end_s"], f"{name}: op times")
        end = max(end, o["end_s"])
        for r in o["receivers"]:
            check(r in t["receivers"], f"{name}: op receiver not in task")
            if host_of[r] != host_of[o["sender"]]:
                check(host_of[r] in o["ingress_hosts"], f"{name}: ingress host missing")
            for e in elements(region):
                got[r][e] = got[r].get(e, 0) + 1
                arrival[(r, e)] = min(arrival.get((r, e), 1e300), o["end_s"])
    for o in sch["ops"]:  # the sender holds the region: source tile, or it arrived earlier
        s = o["sender"]
        region = [tuple(r) for r in o["region"]]
        if s in src_tiles and all(a <= lo and hi <= b for (lo, hi), (a, b) in zip(region, src_tiles[s])):
            continue
        check(all(arrival.get((s, e), 1e300) <= o["start_s"] + 1e-12 for e in elements(region)),
              f"{name}: device {s} sends what it does not hold")
    for d, box in dst_tiles.items():
        check(got[d] == {e: 1 for e in elements(box)}, f"{name}: device {d} not served exactly once")
    ops = sch["ops"]
    for o in ops:
        check(o["start_s"] <= o["sender_free_s"] <= o["end_s"], f"{name}: sender_free_s outside the op")

    # Single NIC per host: one op per NIC direction at a time. The holds contract (issue 20): an op
    # that holds a NIC direction for less than the whole op (a pipelined chain) lists "holds",
    # which replace its interval for those directions.
    busy = {}
    for o in ops:
        if o["kind"] == "chain":
            check("holds" in o, f"{name}: a chain without holds")
            # A chain carries the size of the pieces it is cut into (transfer::piece_bytes).
            check(o.get("piece_bytes", 0) >= min(16384, o["bytes"]), f"{name}: a chain without its piece size")
        spans = {(h, "egress"): (o["start_s"], o["end_s"]) for h in o["egress_hosts"]}
        spans.update({(h, "ingress"): (o["start_s"], o["end_s"]) for h in o["ingress_hosts"]})
        for hold in o.get("holds", []):
            check(o["start_s"] <= hold["start_s"] <= hold["end_s"] <= o["end_s"] + 1e-12, f"{name}: a hold outside its op")
            spans[(hold["host"], hold["dir"])] = (hold["start_s"], hold["end_s"])
        for key, span in spans.items():
            busy.setdefault(key, []).append(span)
    for key, spans in busy.items():
        spans.sort()
        check(all(b[0] >= a[1] - 1e-12 for a, b in zip(spans, spans[1:])), f"{name}: two holds at once on {key}")
    check(abs(end - sch["makespan_s"]) <= 1e-9 * max(1, end), f"{name}: makespan is not the last end")
    check(sch["makespan_s"] >= sch["lower_bound_s"] * (1 - 1e-9), f"{name}: makespan below the bound")


sched_base = ["--shape", "6x5", "--src-mesh", "2x2", "--src-spec", "R,S1", "--dst-mesh", "3x2", "--dst-spec", "S0,R",
              "--devices-per-host", "2", "--json", "--time-limit-ms", "50"]
solvers = ["naive", "alpa_least_loaded", "alpa_greedy", "alpa_dfs", "greedy", "branch_and_bound", "ilp", "open_shop"]
for strategy in ["send_recv", "send_recv_allgather", "broadcast"]:
    for solver in solvers:
        for split in ([], ["--split-replicas"]):
            args = sched_base + ["--solver", solver, "--strategy", strategy] + split
            name = f"{solver}/{strategy}{'/split' if split else ''}"
            r = run(args)
            if solver == "open_shop" and strategy == "broadcast":
                check(r.returncode == 2 and "does not apply" in r.stderr, f"{name}: expected a refusal, got {r.returncode}")
                continue
            if solver == "ilp" and r.returncode == 2 and "without it" in r.stderr:
                continue  # built without CBC: says so
            check(r.returncode == 0, f"{name}: exit {r.returncode}: {r.stderr}")
            if r.returncode == 0:
                j = json.loads(r.stdout)
                check(j["schedule"]["solver"] == solver and j["schedule"]["strategy"] == strategy, f"{name}: names")
                check_schedule_json(name, j, 2)

# A chain's pieces follow the link: at 400 Gbit/s and 10 us a piece crosses it in a latency or
# more (500 kB), at 1 Gbit/s a chain of 4 devices cuts 4 MiB into 24 pieces (8 per hop).
for gbps, want in [("400", 500000), ("1", 174763)]:
    r = run(["--shape", "1024x1024", "--src-mesh", "1", "--src-spec", "R,R", "--dst-mesh", "3", "--dst-spec", "R,R",
             "--dtype-bytes", "4", "--devices-per-host", "1", "--nic-gbps", gbps, "--latency-us", "10",
             "--strategy", "broadcast", "--json"])
    check(r.returncode == 0, f"pieces at {gbps} Gbit/s: {r.stderr}")
    if r.returncode == 0:
        chains = [o for o in json.loads(r.stdout)["schedule"]["ops"] if o["kind"] == "chain"]
        check(len(chains) == 1 and chains[0].get("piece_bytes") == want, f"pieces at {gbps} Gbit/s: {chains}")

# Unknown names are refused, naming them.
for flag, bad in [("--solver", "fastest"), ("--strategy", "carrier_pigeon")]:
    r = run(sched_base + [flag, bad])
    check(r.returncode == 2 and f"'{bad}'" in r.stderr, f"{flag} {bad}: {r.returncode} {r.stderr}")

# The trace is Chrome trace-event JSON with a track per host NIC direction.
import os
import tempfile
with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "trace.json")
    r = run(sched_base + ["--solver", "greedy", "--trace", path])
    check(r.returncode == 0, f"trace: {r.stderr}")
    trace = json.load(open(path))
    events = trace["traceEvents"]
    names = {e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    check("NIC 0 egress" in names and "NIC 0 ingress" in names, "trace: NIC tracks missing")
    check(any(e["ph"] == "X" and e["dur"] > 0 for e in events), "trace: no op events")

# Schedule flags without a schedule change nothing, as documented, and a note on stderr names them
# (found by review: --nic-gbps 400 gave no prediction and no hint why).
base = ["--shape", "64x32", "--src-mesh", "2x2", "--src-spec", "S0,R", "--dst-mesh", "2x2", "--dst-spec", "R,S1", "--json"]
plain, flagged = run(base), run(base + ["--nic-gbps", "400", "--seed", "5"])
check(plain.returncode == 0 and flagged.returncode == 0 and plain.stdout == flagged.stdout and plain.stderr == ""
      and "note: --nic-gbps, --seed act only on a schedule" in flagged.stderr,
      f"schedule flags without a schedule: stderr {flagged.stderr!r}")
r = run(base + ["--nic-gbps", "400", "--strategy", "send_recv"])
check(r.returncode == 0 and "note:" not in r.stderr and "schedule" in json.loads(r.stdout), f"with a schedule: {r.stderr!r}")

if failures:
    print("\n".join(failures[:20]))
    print(f"{len(failures)} failures")
    sys.exit(1)
print("meshcast-plan CLI contract: all checks passed")

#!/usr/bin/env python3
"""Checks meshcast-pipeline's command-line contract. The --json lists of every policy are
re-simulated here, independently of the C++ code, under the pinned semantics of the issue:

shared streams: a stage does one instruction at a time in list order; a transfer starts when both
its stages have reached it (each at the head of its list and idle) and occupies both for its time.
separate streams: a compute stream and a communication stream per stage, each taking the stage's
instructions of its kind in list order; a transfer starts when both communication streams have
reached it, a send also waits for the compute that produced its data, a compute waits for the
receives of its inputs. The makespan is when every stage has finished; lists that can reach a
state where nothing can start deadlock.

Usage: check_pipeline_cli.py PATH/TO/meshcast-pipeline
"""
import atexit
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile

CLI = sys.argv[1]
failures = []
TMP = tempfile.mkdtemp(prefix="meshcast-pipeline-cli-")
atexit.register(shutil.rmtree, TMP, ignore_errors=True)  # leave nothing in /tmp
POLICIES = ["list_scheduling", "prior_first", "later_first", "rounds", "optimal"]


def check(cond, what):
    if not cond:
        failures.append(what)
    return cond


def write(doc, name="p.json"):
    path = os.path.join(TMP, name)
    with open(path, "w") as f:
        f.write(doc if isinstance(doc, str) else json.dumps(doc))
    return path


def run(args, **kw):
    return subprocess.run([CLI] + args, capture_output=True, text=True, timeout=120, **kw)


from pipeline_model import resimulate  # noqa: E402 (the model, beside this file)


def close(a, b):
    return abs(a - b) <= 1e-9 * max(1.0, abs(b))


def check_output(p, out, policy, name):
    """Checks one --json output against the independent re-simulation; returns its makespan."""
    try:
        j = json.loads(out)
    except ValueError as e:
        check(False, f"{name}: output is not JSON: {e}")
        return None
    if not check(list(j) == ["policy", "makespan", "bubble_fraction", "stages"], f"{name}: top-level fields {list(j)}"):
        return None
    check(j["policy"] == policy, f"{name}: policy {j['policy']}")
    try:
        times, makespan = resimulate(p, j["stages"])
    except (AssertionError, KeyError, IndexError, TypeError) as e:
        check(False, f"{name}: {e}")
        return None
    for s, lst in enumerate(j["stages"]):
        for i, x in enumerate(lst):
            if not (close(x["start"], times[s][i][0]) and close(x["end"], times[s][i][1])):
                check(False, f"{name}: stage {s} entry {i} at {x['start']}..{x['end']}, re-simulated {times[s][i]}")
                return None
    check(close(j["makespan"], makespan), f"{name}: makespan {j['makespan']}, re-simulated {makespan}")
    training = p.get("schedule", "forward_only") != "forward_only"
    compute = sum(st["forward"] + (st["backward"] if training else 0) for st in p["stages"]) * p["microbatches"]
    bubble = 1 - compute / (len(p["stages"]) * makespan) if makespan > 0 else 0
    check(abs(j["bubble_fraction"] - bubble) <= 1e-9, f"{name}: bubble_fraction {j['bubble_fraction']}, expected {bubble}")
    return j["makespan"]


def random_pipeline(rng):
    n = rng.randint(1, 8)
    m = rng.randint(1, 5)
    schedule = rng.choice(["forward_only", "gpipe", "1f1b", "eager_1f1b"])
    p = {"stages": [], "microbatches": m, "schedule": schedule,
         "streams": rng.choice(["shared", "separate"]), "edges": []}
    for _ in range(n):
        st = {"forward": rng.choice([0, 1, 2, 2.5, 3])}
        if schedule != "forward_only" or rng.random() < 0.5:
            st["backward"] = rng.choice([0, 1, 2, 4, 4.25])
        p["stages"].append(st)
    pairs = [(a, b) for a in range(n) for b in range(a + 1, n) if rng.random() < (0.8 if b == a + 1 else 0.25)]
    rng.shuffle(pairs)
    for a, b in pairs:
        e = {"from": a, "to": b, "time": rng.choice([0, 0.5, 1, 2])}
        if rng.random() < 0.3:
            e["backward_time"] = rng.choice([0, 1, 3])
        p["edges"].append(e)
    return p


# ---- random pipelines, every policy ------------------------------------------------------------------
rng = random.Random(2024)
for case in range(30):
    p = random_pipeline(rng)
    path = write(p, f"random{case}.json")
    spans = {}
    for policy in POLICIES:
        name = f"random case {case} ({json.dumps(p)[:200]}), policy {policy}"
        # A generous limit lets list_scheduling finish by its iteration counts (the same lists
        # alone and as optimal's seed, on slow builds too); optimal's search is bounded apart.
        r = run([path, "--json", "--policy", policy, "--time-limit-ms", "60000", "--search-limit-ms", "300"])
        if not check(r.returncode == 0, f"{name}: exit {r.returncode}: {r.stderr}"):
            continue
        check(r.stdout.count("\n") == 1, f"{name}: expected one line")
        spans[policy] = check_output(p, r.stdout, policy, name)
    if None not in spans.values() and len(spans) == len(POLICIES):
        check(all(spans["optimal"] <= v + 1e-9 for v in spans.values()), f"random case {case}: optimal worse: {spans}")
        fixed = min(spans["prior_first"], spans["later_first"], spans["rounds"])
        check(spans["list_scheduling"] <= fixed + 1e-9, f"random case {case}: list_scheduling worse than a fixed rule: {spans}")

# The default policy is list_scheduling; the output is the same without --policy.
path = write(random_pipeline(random.Random(5)), "default.json")
a, b = run([path, "--json"]), run([path, "--json", "--policy", "list_scheduling"])
check(a.returncode == 0 and a.stdout == b.stdout, "default policy differs from list_scheduling")

# ---- the seed's chain: rounds' communication phase is 2 units, prior_first's n - 1 ---------------
for n in (4, 8, 16):
    p = {"stages": [{"forward": 2}] * n, "microbatches": 2 * n, "schedule": "forward_only", "streams": "shared",
         "edges": [{"from": i, "to": i + 1, "time": 1} for i in range(n - 1)]}
    path = write(p, f"chain{n}.json")
    for policy, want in (("rounds", 2), ("prior_first", n - 1)):
        r = run([path, "--json", "--policy", policy])
        if not check(r.returncode == 0, f"chain {n} {policy}: exit {r.returncode}"):
            continue
        check_output(p, r.stdout, policy, f"chain {n} {policy}")
        span = {}
        for s, lst in enumerate(json.loads(r.stdout)["stages"]):
            for x in lst:
                if x["op"] == "send":
                    lo, hi = span.get(x["mb"] + s, (float("inf"), 0))
                    span[x["mb"] + s] = (min(lo, x["start"]), max(hi, x["end"]))
        phases = {hi - lo for step, (lo, hi) in span.items() if n - 2 <= step < 2 * n}
        check(phases == {want}, f"chain {n} {policy}: communication phases {phases}, expected {want}")

# ---- the trace ---------------------------------------------------------------------------------------
for streams, tracks in (("shared", {0}), ("separate", {0, 1})):
    p = {"stages": [{"forward": 2, "backward": 3}] * 3, "microbatches": 3, "schedule": "1f1b", "streams": streams,
         "edges": [{"from": 0, "to": 1, "time": 1}, {"from": 1, "to": 2, "time": 1}, {"from": 0, "to": 2, "time": 1}]}
    path = write(p, f"trace_{streams}.json")
    out = os.path.join(TMP, f"trace_{streams}.out.json")
    r = run([path, "--trace", out, "--json"])
    if check(r.returncode == 0, f"trace {streams}: exit {r.returncode}: {r.stderr}"):
        t = json.load(open(out))
        events = [e for e in t["traceEvents"] if e["ph"] == "X"]
        entries = sum(len(lst) for lst in json.loads(r.stdout)["stages"])
        check(len(events) == entries, f"trace {streams}: {len(events)} events for {entries} list entries")
        for s in range(3):
            check({e["tid"] for e in events if e["pid"] == s} == tracks, f"trace {streams}: stage {s} tracks")
            names = {e["tid"] for e in t["traceEvents"] if e["ph"] == "M" and e["name"] == "thread_name" and e["pid"] == s}
            check(names == tracks, f"trace {streams}: stage {s} track names")

# ---- several tensors between two stages: one batch, named by its first edge in the file ------------
# (issue 10: `edge` indexes the file's `edges`; issue 20: such tensors go as one batch). Edges 0 and
# 1 join stages 0 -> 1, edges 2, 3 and 4 stages 1 -> 2: every transfer is named 0 or 2 (not the
# batches' own numbers 0 and 1), its stages are that file edge's, and each batch moves once per
# microbatch and pass (in the trace too).
def tensor_edge(a, b, shape, spec_in, spec_out):
    return {"from": a, "to": b, "shape": shape, "element_bytes": 2, "src_mesh": [2], "src_spec": spec_in,
            "dst_mesh": [2], "dst_spec": spec_out}


p = {"stages": [{"forward": 2, "backward": 3}] * 3, "microbatches": 3, "schedule": "1f1b", "time_unit_s": 0.01,
     "network": {"nic_gbps": 1, "devices_per_host": 2, "strategy": "send_recv"},
     "edges": [tensor_edge(0, 1, [64, 32], "S0,R", "R,S0"), tensor_edge(0, 1, [16, 8], "R,R", "S0,R"),
               tensor_edge(1, 2, [64, 32], "R,S0", "S0,R"), tensor_edge(1, 2, [8], "S0", "R"),
               tensor_edge(1, 2, [32, 4], "S0,R", "R,R")]}
path = write(p, "batches.json")
out = os.path.join(TMP, "batches.trace.json")
for policy in POLICIES:
    r = run([path, "--json", "--policy", policy, "--trace", out])
    if not check(r.returncode == 0, f"batches {policy}: exit {r.returncode}: {r.stderr}"):
        continue
    seen = {}
    for s, lst in enumerate(json.loads(r.stdout)["stages"]):
        for x in lst:
            if x["op"] not in ("send", "recv"):
                continue
            e = p["edges"][x["edge"]] if 0 <= x["edge"] < len(p["edges"]) else None
            if not check(x["edge"] in (0, 2) and e is not None, f"batches {policy}: a transfer named edge {x['edge']}"):
                continue
            src, dst = (e["from"], e["to"]) if x["pass"] == "forward" else (e["to"], e["from"])
            me, peer = (src, dst) if x["op"] == "send" else (dst, src)
            check(me == s and x["peer"] == peer, f"batches {policy}: stage {s} {x} is not edges[{x['edge']}]'s")
            key = (x["op"], x["edge"], x["pass"], x["mb"])
            check(key not in seen, f"batches {policy}: {key} twice")
            seen[key] = s
    check(len(seen) == 2 * 2 * 3 * 2, f"batches {policy}: {len(seen)} send/recv entries, expected 24")
    events = [e for e in json.load(open(out))["traceEvents"] if e["ph"] == "X" and e["cat"] == "transfer"]
    check(sorted({e["args"]["edge"] for e in events}) == [0, 2], f"batches {policy}: the trace names edges "
          f"{sorted({e['args']['edge'] for e in events})}")

# ---- bad input: a message naming it, exit 2; output errors: non-zero -------------------------------
ok = {"stages": [{"forward": 2, "backward": 4}] * 3, "microbatches": 2, "schedule": "1f1b",
      "edges": [{"from": 0, "to": 1, "time": 1}, {"from": 1, "to": 2, "time": 1}]}
bad = [
    ({"microbatches": 2}, "stages"),
    ({"stages": [{"forward": 1}]}, "microbatches"),
    (dict(ok, microbatches=0), "microbatches"),
    (dict(ok, microbatches=1000001), "microbatches"),
    (dict(ok, schedule="zero_bubble"), "schedule"),
    (dict(ok, streams="many"), "streams"),
    (dict(ok, stages=[{"forward": 2, "backward": 4}, {"forward": -1, "backward": 4}, {"forward": 2, "backward": 4}]), "stages[1].forward"),
    (dict(ok, stages=[{"forward": 2}] * 3), "backward"),
    (dict(ok, edges=[{"from": 0, "to": 1, "time": 1}, {"from": 1, "to": 5, "time": 1}]), "edges[1].to"),
    (dict(ok, edges=[{"from": 0, "to": 1, "time": 1}, {"from": 2, "to": 1, "time": 1}]), "edges[1]"),
    (dict(ok, edges=[{"from": 0, "to": 1, "time": 1}, {"from": 0, "to": 1, "time": 2}]), "edges[1] repeats edges[0]"),
    (dict(ok, edges=[{"from": 0, "to": 1}]), "edges[0]"),
    (dict(ok, edges=[{"from": 0, "to": 1, "time": -1}]), "edges[0].time"),
    (dict(ok, edges=[{"to": 1, "time": 1}]), "from"),
    (dict(ok, edges=[{"from": 0, "to": 1, "time": 1, "backward_time": -2}]), "edges[0].backward_time"),
    (dict(ok, edges=[{"from": 0, "to": 1, "shape": [8], "src_mesh": "2", "src_spec": "S0", "dst_mesh": "2",
                      "dst_spec": "R"}]), "network"),
    ('{"stages": [', "JSON"),
]
for k, (doc, needle) in enumerate(bad):
    path = write(doc, f"bad{k}.json")
    r = run([path, "--json"])
    check(r.returncode == 2 and needle in r.stderr and r.stdout == "",
          f"bad input {k} ({str(doc)[:80]}): exit {r.returncode}, stderr {r.stderr!r}, expected to name {needle!r}")
# Times that are each finite but add up past the largest double: every policy once read out of
# bounds (list_scheduling, optimal) or printed a makespan of inf (the others).
for k, doc in enumerate([{"stages": [{"forward": 1e308}], "microbatches": 2},
                         {"stages": [{"forward": 1e308}] * 2, "microbatches": 1},
                         {"stages": [{"forward": 1e308}] * 2, "microbatches": 1,
                          "edges": [{"from": 0, "to": 1, "time": 1e308}]}]):
    path = write(doc, f"overflow{k}.json")
    for policy in POLICIES:
        r = run([path, "--policy", policy, "--json"])
        check(r.returncode == 2 and "add up to" in r.stderr and r.stdout == "",
              f"times adding up past a double ({doc}, {policy}): exit {r.returncode}, stderr {r.stderr[-300:]!r}")
r = run([write({"stages": [{"forward": 1e300}], "microbatches": 2}, "large.json"), "--json"])
check(r.returncode == 0 and json.loads(r.stdout)["makespan"] == 2e300, f"large finite times: exit {r.returncode} {r.stderr!r}")
path = write(ok, "ok.json")
for args, needle in ((["--policy", "fastest"], "fastest"), (["--bogus"], "--bogus"), (["--policy"], "--policy"),
                     ([os.path.join(TMP, "missing.json")], "missing.json"), (["--time-limit-ms", "x"], "--time-limit-ms"),
                     (["--search-limit-ms", "-1"], "--search-limit-ms"), (["--seed", "-0"], "--seed"),
                     (["--seed", "18446744073709551616"], "--seed"), (["--seed", "1e3"], "--seed"), (["--seed", ""], "--seed")):
    r = run([path] + args if args[0] != os.path.join(TMP, "missing.json") else args)
    check(r.returncode == 2 and needle in r.stderr, f"{args}: exit {r.returncode}, stderr {r.stderr!r}")
# Every tool takes a seed up to 2^64 - 1 (meshcast-plan's rule; this one took at most 18 digits).
r = run([path, "--json", "--policy", "list_scheduling", "--seed", "18446744073709551615"])
check(r.returncode == 0 and json.loads(r.stdout)["makespan"] > 0, f"seed 2^64-1: exit {r.returncode}, stderr {r.stderr!r}")
r = run([])
check(r.returncode == 2 and "FILE" in r.stderr, f"no file: exit {r.returncode}")
with open("/dev/full", "w") as full:
    for args in (["--json"], []):
        r = subprocess.run([CLI, path] + args, stdout=full, stderr=subprocess.PIPE, text=True, timeout=60)
        check(r.returncode != 0 and "standard output" in r.stderr, f"/dev/full {args}: exit {r.returncode}")
r = run([path, "--trace", "/dev/full"])
check(r.returncode != 0 and "trace" in r.stderr, f"trace to /dev/full: exit {r.returncode}")
r = run([path, "--trace", os.path.join(TMP, "no", "such", "dir.json")])
check(r.returncode != 0 and "trace" in r.stderr, f"trace to a missing directory: exit {r.returncode}")
# A trace whose times in microseconds overflow a double is refused, not written with null times
# (found by review: exit 0 and "ts": null).
huge = os.path.join(TMP, "huge_trace.json")
r = run([write({"stages": [{"forward": 1e10}], "microbatches": 2, "time_unit_s": 1e300}, "huge_unit.json"), "--trace", huge])
check(r.returncode == 2 and "the trace's times overflow" in r.stderr and not os.path.exists(huge),
      f"trace of overflowing times: exit {r.returncode}, stderr {r.stderr!r}")
r = run(["--help"])
check(r.returncode == 0 and "--policy" in r.stdout and "optimal" in r.stdout, "--help")
# Members the format ignores are named on stderr, the run unchanged (found by review: a misspelt
# "edges" ran a pipeline without edges, exit 0, nothing said).
typo = write({"stages": [{"forward": 2, "fwd": 3}, {"forward": 2}], "microbatches": 4, "edgez": [],
              "edges": [{"from": 0, "to": 1, "time": 1, "tiem": 3}]}, "typo.json")
r = run([typo, "--json"])
warned = [line for line in r.stderr.splitlines() if "warning:" in line]
check(r.returncode == 0 and len(warned) == 3 and all("typo.json" in w and "ignored" in w for w in warned)
      and any('"edgez"' in w for w in warned) and any('"stages[0].fwd"' in w for w in warned)
      and any('"edges[0].tiem"' in w for w in warned) and json.loads(r.stdout)["makespan"] > 0,
      f"ignored members: exit {r.returncode}, stderr {r.stderr!r}")
r = run([write({"stages": [{"forward": 2}, {"forward": 2}], "microbatches": 4, "edges": [{"from": 0, "to": 1, "time": 1}]},
               "clean.json"), "--json"])
check(r.returncode == 0 and r.stderr == "", f"a file with no stray member: no warning, stderr {r.stderr!r}")
clean = os.path.join(TMP, "clean.json")
r = run([clean, "--policy", "prior_first", "--search-limit-ms", "5"])
check(r.returncode == 0 and "note: --search-limit-ms acts only on a policy that searches" in r.stderr
      and "prior_first" in r.stderr, f"--search-limit-ms under prior_first: stderr {r.stderr!r}")
r = run([clean, "--policy", "optimal", "--search-limit-ms", "5"])
check(r.returncode == 0 and r.stderr == "", f"--search-limit-ms under optimal: stderr {r.stderr!r}")

# ---- a tensor edge: its time is the predicted reshard time (positive, both passes) -----------------
p = {"stages": [{"forward": 0.002, "backward": 0.004}] * 2, "microbatches": 2, "schedule": "gpipe",
     "network": {"nic_gbps": 100, "latency_us": 5},
     "edges": [{"from": 0, "to": 1, "shape": [1024, 1024], "src_mesh": [2, 4], "src_spec": "S0,R",
                "dst_mesh": "2x4", "dst_spec": "R,S0"}]}
r = run([write(p, "tensor.json"), "--json"])
if check(r.returncode == 0, f"tensor edge: exit {r.returncode}: {r.stderr}"):
    j = json.loads(r.stdout)
    sends = [x for x in j["stages"][0] if x["op"] == "send"]
    check(sends and all(x["end"] > x["start"] for x in sends), "tensor edge: transfers take time")

if failures:
    print(f"{len(failures)} failure(s):")
    for f in failures[:40]:
        print("  " + f)
    sys.exit(1)
print("meshcast-pipeline CLI contract: all checks passed")

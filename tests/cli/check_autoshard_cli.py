#!/usr/bin/env python3
"""Checks meshcast-autoshard's command-line contract: the --json object's fields, --evaluate
objectives against the pinned cost formulas written out independently here (MLP graphs on 1-D and
2-D meshes), agreement between every solver's answer and --evaluate of its specs, the errors
(exit 2, naming the tensor) and output failures.

Usage: check_autoshard_cli.py PATH/TO/meshcast-autoshard PATH/TO/examples/graphs
"""
import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

CLI = sys.argv[1]
GRAPHS = sys.argv[2]
failures = []
TMP = tempfile.mkdtemp(prefix="autoshard_cli_")
atexit.register(shutil.rmtree, TMP, ignore_errors=True)  # leave nothing in /tmp


def check(cond, what):
    if not cond:
        failures.append(what)
    return cond


def run(args, stdout=subprocess.PIPE):
    return subprocess.run([CLI] + args, stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=300)


def write(name, obj):
    path = os.path.join(TMP, name)
    with open(path, "w") as f:
        json.dump(obj, f)
    return path


def close(a, b, rel=1e-7):
    return abs(a - b) <= rel * max(abs(a), abs(b), 1e-30)


# ---- the pinned formulas ---------------------------------------------------------------------
def all_reduce(n, b, bw, lat):
    return 2 * (n - 1) / n * b / bw + 2 * (n - 1) * lat


def gather_like(n, b, bw, lat):  # all-gather, reduce-scatter, all-to-all
    return (n - 1) / n * b / bw + (n - 1) * lat


def mlp_graph(B, D, F, training, out="R,R"):
    return {"element_bytes": 4, "training": training,
            "tensors": {"x": {"shape": [B, D], "spec": "R,R"},
                        "w1": {"shape": [D, F], "parameter": True},
                        "w2": {"shape": [F, D], "parameter": True}},
            "ops": [{"name": "fc1", "type": "matmul", "inputs": ["x", "w1"], "output": "h"},
                    {"name": "act", "type": "gelu", "inputs": ["h"], "output": "a"},
                    {"name": "fc2", "type": "matmul", "inputs": ["a", "w2"], "output": "y"}],
            "outputs": {"y": out}}


def mlp_compute(B, D, F, training, devices, flops):
    """Forward flops (matmul 2MNK, gelu 1 per element) and, when training, the backward pass:
    forward flops x (inputs needing a gradient): fc1 only w1 (x is a graph input), gelu its input,
    fc2 both."""
    fc1, act, fc2 = 2.0 * B * D * F, 1.0 * B * F, 2.0 * B * F * D
    if training:
        fc1, act, fc2 = fc1 * 2, act * 2, fc2 * 3
    return (fc1 + act + fc2) / devices / flops


def megatron_1d(B, D, F, training, n, bw, lat, flops, eb=4):
    """w1 split by columns, w2 by rows: one all-reduce of the output (B x D)."""
    return mlp_compute(B, D, F, training, n, flops) + all_reduce(n, B * D * eb, bw, lat)


def data_parallel_1d(B, D, F, training, n, bw, lat, flops, gather_output, eb=4):
    """Batch split, weights replicated: weight gradients all-reduced; the output gathered when
    it must be delivered replicated (its gradient's way back is a slice, free)."""
    t = mlp_compute(B, D, F, training, n, flops)
    if training:
        t += 2 * all_reduce(n, D * F * eb, bw, lat)
    if gather_output:
        t += gather_like(n, B * D * eb, bw, lat)
    return t


def hybrid_2d(B, D, F, n0, n1, bw, lat, flops, eb=4):
    """Training; batch on axis 0, model on axis 1: fc2's partial sums all-reduced over axis 1
    (B/n0 x D), both weight gradients over axis 0 (each D x F / n1)."""
    t = mlp_compute(B, D, F, True, n0 * n1, flops)
    t += all_reduce(n1, B // n0 * D * eb, bw[1], lat[1])
    t += 2 * all_reduce(n0, D * F // n1 * eb, bw[0], lat[0])
    return t


def dp_both_axes_gathered(B, D, F, n0, n1, bw, lat, flops, eb=4):
    """Inference, batch over both axes (S01): the replicated output is an all-gather over axes
    0 and 1, each step with the full buffer B x D."""
    t = mlp_compute(B, D, F, False, n0 * n1, flops)
    b = B * D * eb
    return t + gather_like(n0, b, bw[0], lat[0]) + gather_like(n1, b, bw[1], lat[1])


def mesh_flags(mesh, gbps, lat_us, tflops):
    return ["--mesh", "x".join(map(str, mesh)), "--axis-gbps", ",".join(map(str, gbps)),
            "--axis-latency-us", ",".join(map(str, lat_us)), "--device-tflops", str(tflops)]


def run_json(args, what):
    r = run(args + ["--json"])
    if not check(r.returncode == 0, f"{what}: exit {r.returncode}: {r.stderr.strip()}"):
        return None
    lines = r.stdout.strip().splitlines()
    check(len(lines) == 1, f"{what}: expected one line of JSON, got {len(lines)}")
    j = json.loads(r.stdout)
    check(set(j) == {"objective_seconds", "specs", "collectives", "reshards", "proven_optimal", "solve_seconds"},
          f"{what}: fields {sorted(j)}")
    check(isinstance(j["objective_seconds"], (int, float)) and j["objective_seconds"] >= 0, f"{what}: objective")
    check(isinstance(j["proven_optimal"], bool), f"{what}: proven_optimal is not a bool")
    check(isinstance(j["solve_seconds"], (int, float)) and j["solve_seconds"] >= 0, f"{what}: solve_seconds")
    for c in j["collectives"]:
        check(set(c) == {"op", "kind", "axes", "bytes", "seconds"}, f"{what}: collective fields {sorted(c)}")
        check(c["kind"] in ("all_reduce", "all_gather", "reduce_scatter", "all_to_all"), f"{what}: kind {c['kind']}")
        check(isinstance(c["bytes"], int) and c["bytes"] > 0, f"{what}: collective bytes")
        check(all(isinstance(a, int) for a in c["axes"]) and c["axes"], f"{what}: collective axes")
    for r_ in j["reshards"]:
        check(set(r_) == {"tensor", "from", "to", "seconds"}, f"{what}: reshard fields {sorted(r_)}")
        check(r_["tensor"] in j["specs"], f"{what}: reshard of unknown tensor {r_['tensor']}")
    parts = sum(c["seconds"] for c in j["collectives"]) + sum(r_["seconds"] for r_ in j["reshards"])
    check(parts <= j["objective_seconds"] * (1 + 1e-9), f"{what}: collectives and reshards exceed the objective")
    return j


def evaluate(graph_path, flags, specs, what):
    path = write("specs.json", {"specs": specs})
    return run_json([graph_path] + flags + ["--evaluate", path], what)


# ---- 1. --help and the example graphs ----------------------------------------------------------
r = run(["--help"])
check(r.returncode == 0 and "--axis-gbps" in r.stdout and "--evaluate" in r.stdout, "--help")
HAVE_ILP = "ilp, dp, greedy" in r.stdout  # built with CBC
SOLVERS = ("ilp", "dp", "greedy") if HAVE_ILP else ("dp", "greedy")
for name in ("mlp.json", "transformer_block.json"):
    j = run_json([os.path.join(GRAPHS, name), "--mesh", "8", "--solver", "ilp" if HAVE_ILP else "greedy"], name)
    if j is not None and name == "mlp.json" and HAVE_ILP:
        check(j["specs"]["w1"] == "R,S0" and j["specs"]["w2"] == "S0,R", f"mlp.json: not Megatron: {j['specs']}")
        check(len(j["collectives"]) == 1 and j["collectives"][0]["bytes"] == 64 * 4096 * 4,
              f"mlp.json: collectives {j['collectives']}")

# ---- 2. --evaluate against the formulas --------------------------------------------------------
cases = []
gbps, lat_us, tflops = 200, 5, 50
bw, lat, flops = gbps * 1e9 / 8, lat_us * 1e-6, tflops * 1e12
flags = mesh_flags([8], [gbps], [lat_us], tflops)
megatron = {"x": "R,R", "w1": "R,S0", "w2": "S0,R", "h": "R,S0", "a": "R,S0", "y": "R,R"}
dp = {"x": "R,R", "w1": "R,R", "w2": "R,R", "h": "S0,R", "a": "S0,R", "y": "S0,R"}
for training in (False, True):
    # Small batch: Megatron's specs; large batch: data parallelism's (with a small batch, a
    # cheaper strategy exists for dp's specs: fc1 contracted-dim split, reduce-scattered).
    B, D, F, n = 256, 1024, 4096, 8
    g = write(f"mlp_{training}.json", mlp_graph(B, D, F, training))
    cases.append((g, flags, megatron, megatron_1d(B, D, F, training, n, bw, lat, flops), f"megatron training={training}"))
    B = 4096
    g = write(f"mlp_big_{training}.json", mlp_graph(B, D, F, training))
    cases.append((g, flags, dp, data_parallel_1d(B, D, F, training, n, bw, lat, flops, True), f"dp training={training}"))
    g2 = write(f"mlp_free_{training}.json", mlp_graph(B, D, F, training, None))
    cases.append((g2, flags, dp, data_parallel_1d(B, D, F, training, n, bw, lat, flops, False),
                  f"dp, free output, training={training}"))
B, D, F = 32768, 1024, 1024
g = write("mlp_2d.json", mlp_graph(B, D, F, True, None))
gbps, lat_us, tflops = [25, 800], [20, 2], 10
bw, lat = [x * 1e9 / 8 for x in gbps], [x * 1e-6 for x in lat_us]
hybrid = {"x": "R,R", "w1": "R,S1", "w2": "S1,R", "h": "S0,S1", "a": "S0,S1", "y": "S0,R"}
cases.append((g, mesh_flags([2, 4], gbps, lat_us, tflops), hybrid, hybrid_2d(B, D, F, 2, 4, bw, lat, tflops * 1e12),
              "2-D hybrid"))
g = write("mlp_2d_inf.json", mlp_graph(4096, 512, 512, False))
both = {"x": "R,R", "w1": "R,R", "w2": "R,R", "h": "S01,R", "a": "S01,R", "y": "S01,R"}
cases.append((g, mesh_flags([2, 4], gbps, lat_us, tflops), both,
              dp_both_axes_gathered(4096, 512, 512, 2, 4, bw, lat, tflops * 1e12), "2-D all-gather over two axes"))
for graph_path, flags, specs, expected, what in cases:
    j = evaluate(graph_path, flags, specs, "evaluate " + what)
    if j is not None:
        check(close(j["objective_seconds"], expected),
              f"evaluate {what}: objective {j['objective_seconds']!r}, formula {expected!r}")
        check(j["specs"] == specs, f"evaluate {what}: specs echoed {j['specs']}")
        check(j["proven_optimal"] is False, f"evaluate {what}: proven_optimal")

# ---- 3. every solver's answer is what --evaluate says of its specs; the ILP beats the others ----
for graph_path, flags, specs, expected, what in cases:
    objectives = {}
    for solver in SOLVERS:
        j = run_json([graph_path] + flags + ["--solver", solver], f"solve {what} with {solver}")
        if j is None:
            continue
        objectives[solver] = j
        e = evaluate(graph_path, flags, j["specs"], f"evaluate {solver}'s answer to {what}")
        if e is not None:
            check(close(e["objective_seconds"], j["objective_seconds"], 1e-9),
                  f"{what}: {solver} says {j['objective_seconds']}, evaluate {e['objective_seconds']}")
    if "ilp" in objectives:
        best = objectives["ilp"]["objective_seconds"]
        check(objectives["ilp"]["proven_optimal"], f"{what}: ilp not proven optimal on an MLP")
        check(best <= expected * (1 + 1e-9), f"{what}: ilp {best} worse than the assignment checked ({expected})")
        for s, j in objectives.items():
            check(best <= j["objective_seconds"] * (1 + 1e-9), f"{what}: ilp {best} worse than {s}")
        if "dp" in objectives:
            check(close(objectives["dp"]["objective_seconds"], best, 1e-9), f"{what}: dp and ilp differ on a chain")

# ---- 4. invalid assignments and bad input: exit 2, a message naming the fault --------------------
g = write("mlp_bad.json", mlp_graph(64, 128, 256, False))
ok = {"x": "R,R", "w1": "R,S0", "w2": "S0,R", "h": "R,S0", "a": "R,S0", "y": "R,R"}
bad_specs = [
    ({k: v for k, v in ok.items() if k != "h"}, "'h'"),          # missing tensor
    (dict(ok, w2="S0"), "'w2'"),                                  # rank mismatch
    (dict(ok, w1="R,S1"), "'w1'"),                                # axis beyond the mesh
    (dict(ok, x="S0,R"), "'x'"),                                  # contradicts the fixed spec
    (dict(ok, y="R,Q"), "'y'"),                                   # not a spec
    (dict(ok, zz="R"), "'zz'"),                                   # unknown tensor
]
for specs, name in bad_specs:
    path = write("bad_specs.json", {"specs": specs})
    r = run([g, "--mesh", "4", "--evaluate", path, "--json"])
    check(r.returncode == 2 and name in r.stderr and r.stdout == "",
          f"evaluate {specs}: exit {r.returncode}, stderr {r.stderr.strip()!r}")
softmax = write("softmax.json", {"tensors": {"x": {"shape": [8, 16]}},
                                 "ops": [{"name": "sm", "type": "softmax", "inputs": ["x"], "output": "p", "axis": 1}]})
r = run([softmax, "--mesh", "4", "--evaluate", write("sm_specs.json", {"specs": {"x": "R,R", "p": "R,S0"}})])
check(r.returncode == 2 and "'p'" in r.stderr and "softmax" in r.stderr, f"softmax split on its axis: {r.stderr!r}")
softmax_dim = write("softmax_dim.json", {"tensors": {"x": {"shape": [8, 16]}},
                                         "ops": [{"name": "sm", "type": "softmax", "inputs": ["x"], "output": "p",
                                                  "dim": 0}]})
for spec, code in (("R,S0", 0), ("S0,R", 2)):  # "dim" names the axis as "axis" does
    r = run([softmax_dim, "--mesh", "4", "--evaluate", write("smd.json", {"specs": {"x": "R,R", "p": spec}})])
    check(r.returncode == code, f"softmax with \"dim\": 0, output {spec}: exit {r.returncode} {r.stderr!r}")

bad_inputs = [
    ([g], "--mesh"),
    ([g, "--mesh", "2x"], "mesh"),
    ([g, "--mesh", "4", "--axis-gbps", "0"], "--axis-gbps"),
    ([g, "--mesh", "4", "--axis-gbps", "nan"], "--axis-gbps"),
    ([g, "--mesh", "2x4", "--axis-gbps", "1,2,3"], "--axis-gbps"),
    ([g, "--mesh", "4", "--axis-latency-us", "-1"], "--axis-latency-us"),
    ([g, "--mesh", "4", "--device-tflops", "inf"], "--device-tflops"),
    ([g, "--mesh", "4", "--memory-gib", "0"], "--memory-gib"),
    ([g, "--mesh", "4", "--solver", "magic"], "magic"),
    ([g, "--mesh", "4", "--frobnicate"], "--frobnicate"),
    ([os.path.join(TMP, "missing.json"), "--mesh", "4"], "missing.json"),
    ([write("broken.json", "not json") , "--mesh", "4"], "JSON"),
    ([g, "--mesh", "4", "--memory-gib", "0.000001"], "memory"),
    ([os.path.join(GRAPHS, "transformer_block.json"), "--mesh", "4", "--solver", "dp"], "dp"),
    ([g, "--mesh", "2x2x2x2x2"], "axes"),
    ([g, "--mesh", "4", "--axis-gbps", "1e-12"], "--axis-gbps"),  # named the intra-host bandwidth, not the flag
    ([g, "--mesh", "4", "--axis-gbps", "1e9"], "--axis-gbps"),
    ([g, "--mesh", "4", "--axis-latency-us", "1e300"], "--axis-latency-us"),
    # Its cost plans could hold 2^24 (task, sender, receiver) triples: the OOM killer ended it at 24 GB.
    ([os.path.join(GRAPHS, "mlp.json"), "--mesh", "64x64", "--solver", "greedy"], "triples"),
]
with open(os.path.join(TMP, "broken.json"), "w") as f:
    f.write("{not json")
for args, word in bad_inputs:
    r = run(args + ["--json"])
    check(r.returncode == 2 and word in r.stderr and r.stderr.startswith("meshcast-autoshard: error:") and r.stdout == "",
          f"{args}: exit {r.returncode}, stderr {r.stderr.strip()!r}")

# ---- 4b. extreme but valid reals: every solver answers alike, nothing aborts ------------------------
# A slow device makes costs of 1e9 s and more: CBC once aborted on an assertion (1e-300) or claimed
# infeasible (1e-12) on the objective scaled to microseconds.
mlp = os.path.join(GRAPHS, "mlp.json")
for tflops in ("1e-300", "1e-20", "1e-12"):
    objectives = {}
    for solver in SOLVERS:
        j = run_json([mlp, "--mesh", "2x4", "--device-tflops", tflops, "--solver", solver], f"--device-tflops {tflops} {solver}")
        if j:
            objectives[solver] = j["objective_seconds"]
    check(len(objectives) == len(SOLVERS) and all(close(v, objectives["dp"], 1e-9) for v in objectives.values()),
          f"--device-tflops {tflops}: objectives {objectives}")
# More than 64 devices on the last axis: a host of at most 64 NICs (was "host 0 has 65 NICs").
# The small MLP on 2x65: mlp.json there takes 14 s to cost, past the time limit under ASan.
for graph, mesh in ((mlp, "65"), (g, "2x65")):
    run_json([graph, "--mesh", mesh, "--solver", "greedy"], f"--mesh {mesh}")

# ---- 4c. a proof of optimality holds: the ILP's objective is no more than a known assignment's ----------
# Costs of 1e-16 s lay within CBC's absolute gap: its first answer passed as optimal (8.64e-16 s against
# 4.8e-16 s). A memory row in raw bytes (1e9 and more) gave fractional columns under a proof, greedy's
# answer was kept with the proof: 0.926 s "proven" where every tensor R,S0,R fits and costs 0.805 s.
if HAVE_ILP:
    tiny = write("tiny.json", {"element_bytes": 4, "training": False,
                               "tensors": {"t0": {"shape": [6, 1]}, "t1": {"shape": [1, 8]},
                                           "w3": {"shape": [8, 8], "parameter": True}},
                               "ops": [{"name": "op2", "type": "matmul", "inputs": ["t0", "t1"], "output": "o0"},
                                       {"name": "op4", "type": "matmul", "inputs": ["o0", "w3"], "output": "o1"}],
                               "outputs": {"o1": "R,S0", "o0": None}})
    tiny_best = write("tiny_best.json", {"specs": {"t0": "R,R", "t1": "R,R", "w3": "R,R", "o0": "R,R", "o1": "R,S0"}})
    memory = write("memory.json", {"element_bytes": 4, "training": False,
                                   "tensors": {"t0": {"shape": [3072, 64, 8192]}},
                                   "ops": [{"name": "op1", "type": "gelu", "inputs": ["t0"], "output": "o0"},
                                           {"name": "op2", "type": "mul", "inputs": ["t0", "t0"], "output": "o1"}],
                                   "outputs": {"o1": None, "t0": "R,S0,R"}})
    memory_best = write("memory_best.json", {"specs": {"t0": "R,S0,R", "o0": "R,S0,R", "o1": "R,S0,R"}})
    for graph, best, flags in ((tiny, tiny_best, ["--mesh", "2x2", "--axis-gbps", "8e6", "--axis-latency-us", "0",
                                                  "--device-tflops", "1e6"]),
                               (memory, memory_best, ["--mesh", "4", "--axis-gbps", "80", "--axis-latency-us", "2",
                                                      "--device-tflops", "0.001", "--memory-gib", "7.5"])):
        solved = run_json([graph, "--solver", "ilp"] + flags, f"{os.path.basename(graph)} solved")
        known = run_json([graph, "--evaluate", best] + flags, f"{os.path.basename(graph)} evaluated")
        if solved and known:
            check(solved["objective_seconds"] <= known["objective_seconds"] * (1 + 1e-9),
                  f"{os.path.basename(graph)}: ilp {solved['objective_seconds']} (proven {solved['proven_optimal']}) "
                  f"above a known assignment's {known['objective_seconds']}")

# ---- 4d. the time limit holds while one reshard is costed ------------------------------------------
# The MLP on 32x32 costs reshards of up to 2^18 (task, sender, receiver) triples, seconds each: the
# limit was checked only between them, and --time-limit 0.2 ended after 23-45 s. The planner and the
# instance now stop at the deadline too; what is left is one list schedule (about 1-2 s here).
began = time.monotonic()
r = run([mlp, "--mesh", "32x32", "--time-limit", "0.2"])
took = time.monotonic() - began
check(r.returncode == 2 and "time limit of 0.2 s reached while costing reshards between specs" in r.stderr,
      f"mlp on 32x32 within 0.2 s: exit {r.returncode}, {r.stderr.strip()[:200]}")
check(took < 10, f"mlp on 32x32 with --time-limit 0.2 took {took:.1f} s")

# ---- 4e. stray members are named, broken files too ------------------------------------------------
# The format ignores members it does not read; a misspelt "spec" dropped the fixed spec unseen, and a
# JSON error did not say whether the graph or the --evaluate file was broken (found by review).
doc = mlp_graph(64, 128, 256, False)
doc["tensors"]["x"]["sepc"] = "S0,R"
doc["ops"][0]["bogus"] = 1
stray = write("mlp_stray.json", doc)
r = run([stray, "--mesh", "4", "--solver", "greedy", "--json"])
warned = [line for line in r.stderr.splitlines() if "warning:" in line]
check(r.returncode == 0 and len(warned) == 2 and any('"tensors.x.sepc"' in w for w in warned)
      and any('"ops[0].bogus"' in w for w in warned) and all("mlp_stray.json" in w for w in warned),
      f"stray members: exit {r.returncode}, stderr {r.stderr!r}")
clean = write("mlp_clean.json", mlp_graph(64, 128, 256, False))
r = run([clean, "--mesh", "4", "--solver", "greedy", "--json"])
check(r.returncode == 0 and "warning" not in r.stderr, f"no stray member: stderr {r.stderr!r}")
broken = os.path.join(TMP, "broken_specs.json")
with open(broken, "w") as f:
    f.write('{"specs": {"x": "R,R"')
r = run([clean, "--mesh", "4", "--evaluate", broken])
check(r.returncode == 2 and "broken_specs.json: JSON at line" in r.stderr, f"broken --evaluate file: stderr {r.stderr!r}")
with open(broken, "w") as f:
    f.write('{"tensors": ')
r = run([broken, "--mesh", "4"])
check(r.returncode == 2 and "broken_specs.json: JSON at line" in r.stderr, f"broken graph file: stderr {r.stderr!r}")

# ---- 5. output errors are not silent --------------------------------------------------------------
if os.path.exists("/dev/full"):
    with open("/dev/full", "w") as full:
        r = run([g, "--mesh", "4", "--json"], stdout=full)
    check(r.returncode != 0, f"> /dev/full: exit {r.returncode}")
    with open("/dev/full", "w") as full:
        r = run(["--help"], stdout=full)
    check(r.returncode == 1 and "standard output" in r.stderr, f"--help > /dev/full: exit {r.returncode}, stderr {r.stderr!r}")

if failures:
    print(f"{len(failures)} failures:")
    for f in failures[:50]:
        print("  " + f)
    sys.exit(1)
print(f"meshcast-autoshard contract: {len(cases)} formula cases and every check passed")

#!/usr/bin/env python3
"""The manifest contract of meshcast-plan and meshcast-reshard (--manifest), checked independently
of the library: random manifests (seeded), the busiest-NIC bound recomputed element by element,
`auto` never predicted above a single strategy, bad fields named, and at 2-6 ranks every dumped
destination element holding its global index plus its tensor's number.

    check_manifest_cli.py MPIEXEC MESHCAST_PLAN MESHCAST_RESHARD [--seed N] [--runs N]
"""
import argparse
import atexit
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from layout_oracle import tile  # noqa: E402
from manifest_cases import bound, elements, random_manifest, resolved  # noqa: E402

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAILED:", what, flush=True)


def check_dump(what, m, dump):
    """Every destination shard dumped under `dump` holds its elements' global index plus the tensor's
    number; returns how many shards were read."""
    wrong = files = 0
    for k, (shape, eb, smesh, sspec, sids, dmesh, dspec, dids) in enumerate(resolved(m)):
        for pos, dev in enumerate(dids):
            name = os.path.join(dump, f"t{k}.rank{dev}.bin")
            if not os.path.exists(name):
                check(False, f"{what}: {name} missing")
                continue
            files += 1
            data = open(name, "rb").read()
            box = tile(dmesh, dspec, shape, pos)
            expect = bytearray()
            for e in elements(box):
                linear = 0
                for d, x in enumerate(e):
                    linear = linear * shape[d] + x
                expect += ((linear + k) % (1 << (8 * eb))).to_bytes(eb, "little")
            if data != bytes(expect):
                wrong += 1
    check(wrong == 0, f"{what}: {wrong} of {files} dumped shards differ from the fill")
    return files


def run(cmd, timeout=120):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mpiexec")
    ap.add_argument("plan")
    ap.add_argument("reshard")
    ap.add_argument("--seed", type=int, default=20261125)
    ap.add_argument("--runs", type=int, default=12)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    tmp = tempfile.mkdtemp(prefix="manifest-")
    atexit.register(shutil.rmtree, tmp, ignore_errors=True)  # leave nothing in /tmp
    path = os.path.join(tmp, "m.json")

    # 1. meshcast-plan: fields, the bound, auto against each single strategy.
    for i in range(a.runs):
        devices = rng.randint(2, 8)
        m = random_manifest(rng, devices)
        with open(path, "w") as f:
            json.dump(m, f)
        gbps = rng.choice([0.2, 10, 400])
        got = {}
        for strategy in ["auto", "send_recv", "send_recv_allgather", "broadcast"]:
            r = run([a.plan, "--manifest", path, "--json", "--nic-gbps", str(gbps), "--strategy", strategy])
            check(r.returncode == 0, f"plan {i} {strategy}: exit {r.returncode}: {r.stderr[-400:]} manifest {json.dumps(m)}")
            if r.returncode:
                continue
            j = json.loads(r.stdout)
            got[strategy] = j
            for key in ["tensors", "tasks", "bytes", "predicted_seconds", "physical_bound_seconds", "plan_seconds",
                        "solve_seconds", "strategy", "tasks_by_strategy"]:
                check(key in j, f"plan {i}: no {key}")
            check(j["tensors"] == len(m["tensors"]), f"plan {i}: tensors {j['tensors']}")
            nbytes = sum(eval("*".join(map(str, t["shape"]))) * t["dtype_bytes"] for t in m["tensors"])
            check(j["bytes"] == nbytes, f"plan {i}: bytes {j['bytes']} != {nbytes}")
            check(j["strategy"] == strategy, f"plan {i}: strategy {j['strategy']}")
            check(sum(j["tasks_by_strategy"].values()) == j["tasks"], f"plan {i}: tasks_by_strategy {j['tasks_by_strategy']}")
            expect = bound(m, m["devices_per_host"], gbps)
            check(abs(j["physical_bound_seconds"] - expect) <= 1e-9 * max(1, expect) + 1e-15,
                  f"plan {i}: physical bound {j['physical_bound_seconds']} != {expect} for {json.dumps(m)}")
            check(j["predicted_seconds"] >= j["physical_bound_seconds"] * (1 - 1e-9),
                  f"plan {i} {strategy}: predicted {j['predicted_seconds']} below the bound {j['physical_bound_seconds']}")
        if len(got) == 4:
            best = min(got[s]["predicted_seconds"] for s in ["send_recv", "send_recv_allgather", "broadcast"])
            check(got["auto"]["predicted_seconds"] <= best * (1 + 1e-12),
                  f"plan {i}: auto {got['auto']['predicted_seconds']} above the best single strategy {best}")

    # 2. Bad fields: exit 2, the message names the tensor and the field.
    base = {"devices_per_host": 2, "src": {"mesh": "2"}, "dst": {"mesh": "2"},
            "tensors": [{"name": "w", "shape": [4, 4], "dtype_bytes": 4, "src_spec": "S0,R", "dst_spec": "R,S0"}]}
    bad = [("dtype_bytes", 3, "dtype_bytes"), ("src_spec", "S1,R", "src_spec"), ("dst_spec", "S0,S0", "dst_spec"),
           ("shape", [4, -4], "shape"), ("colour", "red", "unknown key \"colour\"")]
    for field, value, expect in bad:
        m = json.loads(json.dumps(base))
        m["tensors"][0][field] = value
        with open(path, "w") as f:
            json.dump(m, f)
        for prog in ([a.plan, "--manifest", path, "--json"], [a.mpiexec, "-n", "4", a.reshard, "--manifest", path, "--json"]):
            r = run(prog)
            check(r.returncode == 2 and "tensor \"w\"" in r.stderr and expect in r.stderr,
                  f"bad {field}: exit {r.returncode}, stderr {r.stderr[-300:]!r}")
    m = json.loads(json.dumps(base))
    m["tensors"].append(dict(m["tensors"][0]))
    with open(path, "w") as f:
        json.dump(m, f)
    r = run([a.plan, "--manifest", path])
    check(r.returncode == 2 and "used twice" in r.stderr, f"duplicate name: exit {r.returncode}, {r.stderr[-300:]!r}")

    # 3. meshcast-reshard at 2-6 ranks: every dumped element checked here.
    for i in range(a.runs):
        ranks = 2 + i % 5
        m = random_manifest(rng, ranks)
        with open(path, "w") as f:
            json.dump(m, f)
        dump = os.path.join(tmp, f"dump{i}")
        os.mkdir(dump)
        mode = rng.choice(["ordered", "concurrent"])
        strategy = rng.choice(["auto", "send_recv", "send_recv_allgather", "broadcast"])
        r = run([a.mpiexec, "-n", str(ranks), a.reshard, "--manifest", path, "--json", "--dump", dump, "--mode", mode,
                 "--strategy", strategy, "--timeout-s", "60"], timeout=300)
        what = f"reshard {i} ({ranks} ranks, {mode}, {strategy})"
        check(r.returncode == 0, f"{what}: exit {r.returncode}: {r.stderr[-500:]} manifest {json.dumps(m)}")
        if r.returncode:
            continue
        j = json.loads(r.stdout.strip().splitlines()[-1])
        check(j["wrong_elements"] == 0, f"{what}: {j['wrong_elements']} wrong elements")
        for key in ["seconds", "predicted_seconds", "physical_bound_seconds", "bytes_delivered", "max_staging_bytes",
                    "peak_staging_bytes", "peak_rss_bytes", "shard_bytes", "tasks_by_strategy"]:
            check(key in j, f"{what}: no {key}")
        files = check_dump(what, m, dump)
        print(f"{what}: {len(m['tensors'])} tensors, {j['bytes_delivered']} bytes delivered, {files} shards checked, "
              f"tasks {j['tasks_by_strategy']}", flush=True)

    # 4. Staging: row blocks to row blocks go from shard to shard (no message buffer); a
    # transpose's regions are strided and are packed.
    for specs, staged in [(("S0,R", "S0,R"), False), (("S0,R", "R,S0"), True)]:
        m = {"devices_per_host": 1, "src": {"mesh": "2"}, "dst": {"mesh": "2"},
             "tensors": [{"name": "w", "shape": [64, 64], "dtype_bytes": 4, "src_spec": specs[0], "dst_spec": specs[1]}]}
        with open(path, "w") as f:
            json.dump(m, f)
        r = run([a.mpiexec, "-n", "4", a.reshard, "--manifest", path, "--json", "--strategy", "send_recv"])
        check(r.returncode == 0, f"staging {specs}: exit {r.returncode}: {r.stderr[-300:]}")
        if r.returncode == 0:
            j = json.loads(r.stdout.strip().splitlines()[-1])
            check((j["peak_staging_bytes"] > 0) == staged and j["wrong_elements"] == 0,
                  f"staging {specs}: peak_staging_bytes {j['peak_staging_bytes']}, wrong {j['wrong_elements']}")

    # 5. The staging cap: random manifests and caps at 2-6 ranks, both modes. Every element is
    # right, the cap in force is reported, and no rank held more message buffers than it.
    for i in range(a.runs):
        ranks = 2 + i % 5
        m = random_manifest(rng, ranks)
        eb = max(t["dtype_bytes"] for t in m["tensors"])
        cap = rng.choice([2 * eb, 2 * eb + 1, 48, 100, 256, 1000, 4096])
        with open(path, "w") as f:
            json.dump(m, f)
        dump = os.path.join(tmp, f"capped{i}")
        os.mkdir(dump)
        mode = rng.choice(["ordered", "concurrent"])
        strategy = rng.choice(["auto", "send_recv", "send_recv_allgather", "broadcast"])
        what = f"cap {cap} {i} ({ranks} ranks, {mode}, {strategy})"
        r = run([a.mpiexec, "-n", str(ranks), a.reshard, "--manifest", path, "--json", "--dump", dump, "--mode", mode,
                 "--strategy", strategy, "--max-staging-bytes", str(cap), "--timeout-s", "60"], timeout=300)
        check(r.returncode == 0, f"{what}: exit {r.returncode}: {r.stderr[-500:]} manifest {json.dumps(m)}")
        if r.returncode:
            continue
        j = json.loads(r.stdout.strip().splitlines()[-1])
        check(j["wrong_elements"] == 0, f"{what}: {j['wrong_elements']} wrong elements")
        check(j["max_staging_bytes"] == cap, f"{what}: max_staging_bytes {j['max_staging_bytes']}")
        check(j["peak_staging_bytes"] <= cap, f"{what}: peak_staging_bytes {j['peak_staging_bytes']} above the cap")
        files = check_dump(what, m, dump)
        p = run([a.plan, "--manifest", path, "--json", "--mode", mode, "--strategy", strategy, "--max-staging-bytes", str(cap)])
        check(p.returncode == 0, f"{what}: meshcast-plan exit {p.returncode}: {p.stderr[-300:]}")
        if p.returncode == 0:
            q = json.loads(p.stdout)
            # (The predictions themselves may differ: greedy's search stops at a time limit.)
            check(q["max_staging_bytes"] == cap and q["predicted_seconds"] >= q["physical_bound_seconds"] * (1 - 1e-9),
                  f"{what}: meshcast-plan: {q}")
            check(sum(q["tasks_by_strategy"].values()) == q["tasks"], f"{what}: tasks_by_strategy {q['tasks_by_strategy']}")
        print(f"{what}: peak staging {j['peak_staging_bytes']} bytes, {j['transfers']} transfers, {files} shards checked",
              flush=True)
    # A cap that cannot hold two elements of a tensor that needs cutting: exit 2, a sentence.
    m = {"devices_per_host": 1, "src": {"mesh": "2"}, "dst": {"mesh": "2"},
         "tensors": [{"name": "w", "shape": [64, 64], "dtype_bytes": 4, "src_spec": "S0,R", "dst_spec": "R,S0"}]}
    with open(path, "w") as f:
        json.dump(m, f)
    for prog in ([a.plan, "--manifest", path, "--json", "--max-staging-bytes", "7"],
                 [a.mpiexec, "-n", "4", a.reshard, "--manifest", path, "--json", "--max-staging-bytes", "7"]):
        r = run(prog)
        check(r.returncode == 2 and "staging cap of 7 bytes" in r.stderr, f"cap 7: exit {r.returncode}, {r.stderr[-300:]!r}")

    # 6. Chains of pieces below 1 MiB: 96 KiB replicated from one device to every other, one per
    # host, at 3-6 ranks and in both modes; a chain cuts it into pieces of an (8 x hops)th, at least
    # 16 KiB (op.hpp, chain_piece_bytes), so every chain here moves six 16 KiB pieces. Every element
    # checked.
    for ranks in [3, 4, 5, 6]:
        for mode in ["ordered", "concurrent"]:
            m = {"devices_per_host": 1, "src": {"mesh": "1"}, "dst": {"mesh": str(ranks - 1)},
                 "tensors": [{"name": "w", "shape": [96, 256], "dtype_bytes": 4, "src_spec": "R,R", "dst_spec": "R,R"}]}
            with open(path, "w") as f:
                json.dump(m, f)
            dump = os.path.join(tmp, f"chain{ranks}{mode}")
            os.mkdir(dump)
            what = f"chain of {ranks - 1} receivers ({mode})"
            r = run([a.mpiexec, "-n", str(ranks), a.reshard, "--manifest", path, "--json", "--dump", dump, "--mode", mode,
                     "--strategy", "broadcast", "--timeout-s", "60"], timeout=300)
            check(r.returncode == 0, f"{what}: exit {r.returncode}: {r.stderr[-500:]}")
            if r.returncode == 0:
                j = json.loads(r.stdout.strip().splitlines()[-1])
                check(j["wrong_elements"] == 0 and j["tasks_by_strategy"].get("broadcast") == 1,
                      f"{what}: wrong {j['wrong_elements']}, tasks {j['tasks_by_strategy']}")
                check_dump(what, m, dump)

    # 7. Bundles in place: FSDP x TP -> TP replicas (rows of the trainer's shards, whole tiles of the
    # engines'), every piece contiguous at both ends, so the bundles go from and into the shards
    # with no message buffer (peak_staging_bytes 0), at 8 ranks in both modes; every element checked.
    m = {"devices_per_host": 2, "src": {"mesh": "2x2"}, "dst": {"mesh": "2x2", "devices": [4, 5, 6, 7]},
         "tensors": [{"name": f"layers.{i}.{w}", "shape": [64, 32], "dtype_bytes": 2, "src_spec": src, "dst_spec": dst}
                     for i in range(6) for w, src, dst in (("wq", "S01,R", "S1,R"), ("wo", "S0,S1", "R,S1"))]}
    with open(path, "w") as f:
        json.dump(m, f)
    for mode in ["ordered", "concurrent"]:
        dump = os.path.join(tmp, f"inplace{mode}")
        os.mkdir(dump)
        what = f"bundles in place ({mode})"
        r = run([a.mpiexec, "-n", "8", a.reshard, "--manifest", path, "--json", "--dump", dump, "--mode", mode,
                 "--strategy", "send_recv", "--timeout-s", "60"], timeout=300)
        check(r.returncode == 0, f"{what}: exit {r.returncode}: {r.stderr[-500:]}")
        if r.returncode == 0:
            j = json.loads(r.stdout.strip().splitlines()[-1])
            check(j["wrong_elements"] == 0 and j["peak_staging_bytes"] == 0 and j["transfers"] < j["tasks"],
                  f"{what}: wrong {j['wrong_elements']}, staging {j['peak_staging_bytes']}, {j['transfers']} transfers "
                  f"for {j['tasks']} tasks")
            check_dump(what, m, dump)

    # 4. An empty model: the same fields as any other, at their empty values; --trace is written
    # by both tools (it was accepted and ignored).
    one = {"src": {"mesh": "2"}, "dst": {"mesh": "2"},
           "tensors": [{"name": "w", "shape": [8, 6], "dtype_bytes": 4, "src_spec": "S0,R", "dst_spec": "R,S0"}]}
    empty = dict(one, tensors=[])
    fields = {}
    for name, m in (("one", one), ("empty", empty)):
        path = os.path.join(tmp, f"{name}.json")
        with open(path, "w") as f:
            json.dump(m, f)
        trace = os.path.join(tmp, f"{name}.plan.trace.json")
        r = run([a.plan, "--manifest", path, "--json", "--trace", trace])
        check(r.returncode == 0 and os.path.exists(trace) and "traceEvents" in open(trace).read(),
              f"plan --manifest {name} --trace: exit {r.returncode} {r.stderr[-300:]}")
        if r.returncode == 0:
            fields[f"plan {name}"] = json.loads(r.stdout)
        r = run([a.plan, "--manifest", path])
        check(r.returncode == 0 and "solver greedy" in r.stdout, f"plan --manifest {name}: the summary names the solver: "
              f"{r.stdout!r}")
        trace = os.path.join(tmp, f"{name}.reshard.trace.json")
        r = run([a.mpiexec, "-n", "4", a.reshard, "--manifest", path, "--json", "--trace", trace, "--timeout-s", "60"])
        check(r.returncode == 0 and os.path.exists(trace) and "traceEvents" in open(trace).read(),
              f"reshard --manifest {name} --trace: exit {r.returncode} {r.stderr[-300:]}")
        if r.returncode == 0:
            fields[f"reshard {name}"] = json.loads(r.stdout.strip().splitlines()[-1])
        r = run([a.mpiexec, "-n", "4", a.reshard, "--manifest", path, "--timeout-s", "60"])
        check(r.returncode == 0 and r.stdout.startswith("meshcast-reshard: 4 ranks"),
              f"reshard --manifest {name}: rank 0 prints one line: {r.stdout!r}")
    for tool in ("plan", "reshard"):
        if f"{tool} one" in fields and f"{tool} empty" in fields:
            check(set(fields[f"{tool} one"]) == set(fields[f"{tool} empty"]),
                  f"{tool} --manifest: an empty model's fields {sorted(fields[f'{tool} empty'])} differ from "
                  f"{sorted(fields[f'{tool} one'])}")
            e = fields[f"{tool} empty"]
            check(e["tensors"] == 0 and e.get("predicted_seconds") == 0, f"{tool} --manifest: empty model {e}")
    # The transport facts the model used, as the single-tensor JSON gives them.
    if "reshard one" in fields:
        o = fields["reshard one"]
        check(isinstance(o.get("eager_bytes"), int) and o["eager_bytes"] >= 0 and isinstance(o.get("nic_efficiency_from"), str),
              f"reshard --manifest --json: eager_bytes / nic_efficiency_from missing: {sorted(o)}")
        if "UCX_RNDV_THRESH" not in os.environ:  # the MPI backend's own eager limit
            check(o.get("eager_bytes") == 1048576, f"reshard --manifest --json: eager_bytes {o.get('eager_bytes')}, not 1048576")
        if "UCX_TLS" not in os.environ:
            check(o.get("nic_efficiency_from") == "the default", f"reshard --manifest --json: {o.get('nic_efficiency_from')!r}")

    if failures:
        print(f"{len(failures)} failures")
        return 1
    print("manifest CLIs: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())

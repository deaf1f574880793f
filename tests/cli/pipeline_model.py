"""The pipeline model of meshcast-pipeline's contract, written from the issue's text and apart from
the C++ code: the order of a stage's computes, the instructions' durations, and the re-simulation
of a --json output (check_pipeline_cli.py states the semantics)."""


def compute_order(p, i):
    """[(kind, mb)] in the schedule's order on stage i."""
    n, m, k = len(p["stages"]), p["microbatches"], p.get("schedule", "forward_only")
    if k == "forward_only":
        return [("F", j) for j in range(m)]
    if k == "gpipe":
        return [("F", j) for j in range(m)] + [("B", j) for j in range(m)]
    warm = min(m, n - i) if k == "1f1b" else min(m, 2 * (n - i) - 1)
    out = [("F", j) for j in range(warm)]
    f = warm
    for b in range(m):
        out.append(("B", b))
        if f < m:
            out.append(("F", f))
            f += 1
    return out


def durations(p):
    training = p.get("schedule", "forward_only") != "forward_only"

    def compute(stage, kind):
        return p["stages"][stage]["forward" if kind == "F" else "backward"]

    def transfer(edge, pas):
        e = p["edges"][edge]
        return e["time"] if pas == "forward" else e.get("backward_time", e["time"])

    return training, compute, transfer


def resimulate(p, stages):
    """Checks the lists and returns (times[stage][i] = (start, end), makespan), or raises."""
    n, m = len(p["stages"]), p["microbatches"]
    edges = p.get("edges", [])
    training, cdur, tdur = durations(p)
    separate = p.get("streams", "shared") == "separate"
    assert len(stages) == n, "one list per stage"
    seen = {}
    for s, lst in enumerate(stages):
        computes = [(x["op"], x["mb"]) for x in lst if x["op"] in ("F", "B")]
        assert computes == compute_order(p, s), f"stage {s}: computes not in the schedule's order"
        pos = {(x["op"], x["mb"]): i for i, x in enumerate(lst) if x["op"] in ("F", "B")}
        for i, x in enumerate(lst):
            if x["op"] in ("F", "B"):
                assert set(x) == {"op", "mb", "start", "end"}, f"stage {s} entry {i}: fields {sorted(x)}"
                continue
            assert x["op"] in ("send", "recv"), f"stage {s} entry {i}: op {x['op']}"
            assert set(x) == {"op", "edge", "mb", "pass", "peer", "start", "end"}, f"stage {s} entry {i}: fields {sorted(x)}"
            e = edges[x["edge"]]
            assert x["pass"] in ("forward", "backward") and (training or x["pass"] == "forward")
            src, dst = (e["from"], e["to"]) if x["pass"] == "forward" else (e["to"], e["from"])
            me, peer = (src, dst) if x["op"] == "send" else (dst, src)
            assert me == s and x["peer"] == peer, f"stage {s} entry {i}: wrong stage or peer"
            assert 0 <= x["mb"] < m
            key = (x["op"], x["edge"], x["pass"], x["mb"])
            assert key not in seen, f"stage {s} entry {i}: {key} twice"
            seen[key] = (s, i)
            kind = "F" if x["pass"] == "forward" else "B"
            if x["op"] == "send":
                assert pos[(kind, x["mb"])] < i, f"stage {s} entry {i}: send before its compute"
            else:
                assert i < pos[(kind, x["mb"])], f"stage {s} entry {i}: recv after its compute"
    passes = ["forward", "backward"] if training else ["forward"]
    assert len(seen) == 2 * len(edges) * m * len(passes), "some transfer is missing"

    # Event-driven re-simulation: repeatedly start whatever can start at the current time.
    streams = {}  # (stage, stream) -> list of entry indices
    for s, lst in enumerate(stages):
        for i, x in enumerate(lst):
            q = 1 if separate and x["op"] in ("send", "recv") else 0
            streams.setdefault((s, q), []).append(i)
    head = {q: 0 for q in streams}
    free = {q: 0.0 for q in streams}
    done = {}  # ("F"/"B", stage, mb) or ("T", edge, pass, mb) -> end
    times = [[None] * len(lst) for lst in stages]
    left = sum(len(lst) for lst in stages)
    now = 0.0

    def at_head(q):
        return stages[q[0]][streams[q][head[q]]] if head[q] < len(streams[q]) else None

    while left:
        progressed = True
        while progressed:
            progressed = False
            for q in streams:
                x = at_head(q)
                if x is None or free[q] > now:
                    continue
                s = q[0]
                if x["op"] in ("F", "B"):
                    fwd = x["op"] == "F"
                    inputs = [("T", k, "forward" if fwd else "backward", x["mb"]) for k, e in enumerate(edges)
                              if (e["to"] if fwd else e["from"]) == s]
                    if any(done.get(key, float("inf")) > now for key in inputs):
                        continue
                    end = now + cdur(s, x["op"])
                    times[s][streams[q][head[q]]] = (now, end)
                    done[(x["op"], s, x["mb"])] = end
                    free[q] = end
                    head[q] += 1
                    left -= 1
                    progressed = True
                    continue
                pq = (x["peer"], q[1])
                y = at_head(pq)
                if y is None or free[pq] > now or y["op"] in ("F", "B"):
                    continue
                if (y["edge"], y["pass"], y["mb"]) != (x["edge"], x["pass"], x["mb"]) or y["op"] == x["op"]:
                    continue
                sender = s if x["op"] == "send" else x["peer"]
                if done.get(("F" if x["pass"] == "forward" else "B", sender, x["mb"]), float("inf")) > now:
                    continue
                end = now + tdur(x["edge"], x["pass"])
                times[s][streams[q][head[q]]] = (now, end)
                times[x["peer"]][streams[pq][head[pq]]] = (now, end)
                done[("T", x["edge"], x["pass"], x["mb"])] = end
                free[q] = free[pq] = end
                head[q] += 1
                head[pq] += 1
                left -= 2
                progressed = True
        if not left:
            break
        later = [t for t in free.values() if t > now]
        if not later:
            raise AssertionError(f"the lists deadlock at time {now}")
        now = min(later)
    makespan = max((t[1] for row in times for t in row), default=0.0)
    return times, makespan

#!/usr/bin/env python3
"""meshcast-bench --peer mpi on the emulated cluster: 4 hosts, one rank each, every NIC direction
--mbit Mbit/s; a same-mesh transpose (MPI_Alltoallv beside it), a gather to replicated
(MPI_Allgatherv) and a replicate from one host onto the three others (MPI_Bcast), 1 KiB to
64 MiB by 4. The model is calibrated on the cluster first (meshcast-calibrate). Writes each
case's Google Benchmark JSON to --out-dir, a markdown table with the goal's verdict per size to
stdout, and the plot (bench/plot_sweep.py; PLOT_PYTHON names a Python with matplotlib).

    sudo python3 bench/bench_sweep.py [--build build/test] [--mbit 200] [--repetitions 3]
"""
import argparse
import json
import os
import subprocess
import sys

from cluster_flags import CLUSTER, ROOT, add_cluster_flags  # noqa: E402,F401
sys.path.insert(0, os.path.join(ROOT, "bench"))
from cluster_suite import calibrate, sh  # noqa: E402

CASES = [  # label, peer, flags (one rank per host, 4 hosts)
    ("transpose", "MPI_Alltoallv", "--shape 1024x256 --src-mesh 4 --src-spec S0,R --dst-mesh 4 --dst-spec R,S0 --same-mesh"),
    ("gather", "MPI_Allgatherv", "--shape 1024x256 --src-mesh 4 --src-spec S0,R --dst-mesh 4 --dst-spec R,R --same-mesh"),
    ("replicate", "MPI_Bcast", "--shape 1024x256 --src-mesh 1 --src-spec R,R --dst-mesh 3 --dst-spec R,R"),
]


def best_rows(doc):
    """The fastest repetition of each benchmark: name without /manual_time -> row."""
    rows = {}
    for b in doc["benchmarks"]:
        if b.get("run_type") == "aggregate":
            continue
        name = b["run_name"] if "run_name" in b else b["name"]
        name = name.replace("/manual_time", "")
        if name not in rows or b["real_time"] < rows[name]["real_time"]:
            rows[name] = b
    return rows


UNIT = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}


def table(docs):
    """Markdown: per case and size, meshcast's and the peer's seconds, their ratio, meshcast's
    ratio to the bound and to its prediction, and the goal's verdict."""
    out = ["| case | bytes | meshcast ran | meshcast s | peer | peer s | peer / meshcast | meshcast / bound | measured / predicted | goal |",
           "|---|---:|---|---:|---|---:|---:|---:|---:|---|"]
    for label, peer, _ in CASES:
        rows = best_rows(docs[label])
        sizes = sorted({int(n.split("/")[2]) for n in rows})
        for size in sizes:
            ours, theirs = rows.get(f"{label}/meshcast/{size}"), rows.get(f"{label}/{peer}/{size}")
            if not ours or not theirs:
                continue
            s_ours = ours["real_time"] * UNIT[ours["time_unit"]]
            s_peer = theirs["real_time"] * UNIT[theirs["time_unit"]]
            vs_bound = s_ours / ours["bound_s"] if ours["bound_s"] > 0 else 0
            vs_pred = s_ours / ours["predicted_s"] if ours["predicted_s"] > 0 else 0
            goal = []
            if size >= 16 * 1024:  # "at" within 2%: the spread of repeated runs here
                goal.append("at or above peer" if s_ours <= 1.02 * s_peer else "BEHIND peer")
            else:
                goal.append("within 1.1 of peer" if s_ours <= 1.1 * s_peer else "BEHIND peer by more than 1.1")
            if size >= 1 << 20:
                goal.append("within 1.15 of bound" if vs_bound <= 1.15 else "OVER 1.15 of bound")
            wrong = ours["wrong"] + theirs["wrong"]
            out.append(f"| {label} | {size} | {ours.get('label', '')} | {s_ours:.5f} | {peer} | {s_peer:.5f} | {s_peer / s_ours:.2f} | {vs_bound:.2f} | "
                       f"{vs_pred:.2f} | {'; '.join(goal)}{'; WRONG ELEMENTS' if wrong else ''} |")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser()
    add_cluster_flags(ap)
    ap.add_argument("--repetitions", type=int, default=3)
    ap.add_argument("--min-bytes", default="1K")
    ap.add_argument("--max-bytes", default="64M")
    ap.add_argument("--mode", default="best", help="best (per size, the mode the model predicts faster), ordered or concurrent")
    ap.add_argument("--out-dir", default=os.path.join(ROOT, "bench", "sweep"))
    ap.add_argument("--report", action="store_true", help="run nothing: print the table of the JSON in --out-dir")
    ap.add_argument("--cases", default="", help="comma-separated labels to run (default all; the others' JSON is reused)")
    args = ap.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    docs = {}
    if not args.report:
        sh("bash", CLUSTER, "up", "4", str(args.mbit))
        try:
            inter, _ = calibrate(args.build, 4)
            efficiency = min(1.0, inter["payload_gbps"] / (args.mbit / 1000))
            latency = max(inter["latency_us"], inter["one_way_small_us"], 1.0)
            model = ["--nic-gbps", str(args.mbit / 1000), "--nic-efficiency", f"{efficiency:.4f}", "--latency-us", f"{latency:.1f}"]
            print(f"# calibrated: payload fraction {efficiency:.4f}, latency {latency:.0f} us", flush=True)
            for label, _, flags in CASES:
                if args.cases and label not in args.cases.split(","):
                    continue
                out = os.path.join(args.out_dir, f"{label}.json")
                cmd = ["bash", CLUSTER, "mpiexec", "-ppn", "1", "-n", "4", os.path.join(args.build, "bench", "meshcast-bench"),
                       *flags.split(), "--min-bytes", args.min_bytes, "--max-bytes", args.max_bytes, "--factor", "4",
                       "--peer", "mpi", "--label", label, "--mode", args.mode, *model, "--timeout-s", "300",
                       f"--benchmark_repetitions={args.repetitions}", "--benchmark_min_time=0.2",
                       "--benchmark_format=json", f"--benchmark_out={out}"]
                print("#", " ".join(cmd[2:]), flush=True)
                sh(*cmd, timeout=3600)
        finally:
            sh("bash", CLUSTER, "down", check=False)
    for label, _, _ in CASES:
        docs[label] = json.load(open(os.path.join(args.out_dir, f"{label}.json")))
    print(table(docs))
    try:
        subprocess.run([os.environ.get("PLOT_PYTHON", sys.executable), os.path.join(ROOT, "bench", "plot_sweep.py"),
                        *[os.path.join(args.out_dir, f"{c[0]}.json") for c in CASES], "-o", os.path.join(ROOT, "docs", "bench_sweep.png")],
                       check=True)
    except subprocess.CalledProcessError:
        print("# no plot (bench/plot_sweep.py needs matplotlib)", file=sys.stderr)


if __name__ == "__main__":
    main()

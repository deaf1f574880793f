#!/usr/bin/env python3
"""Plots meshcast-bench's Google Benchmark JSON: algbw against tensor size, log-log, one panel
per case (the label of the benchmark names LABEL/WAY/BYTES), meshcast and its MPI peer as lines,
the physical bound's algbw dashed (bytes / bound). The fastest repetition of each size is drawn.

    python3 bench/plot_sweep.py bench/sweep/*.json -o docs/bench_sweep.png

Needs matplotlib (python3 -m venv /tmp/plot && /tmp/plot/bin/pip install matplotlib).
"""
import argparse
import json

UNIT = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}


def series(paths):
    """label -> way -> sorted [(bytes, algbw, bound_algbw)], fastest repetition per size."""
    best = {}
    for path in paths:
        for b in json.load(open(path))["benchmarks"]:
            if b.get("run_type") == "aggregate":
                continue
            label, way, size = b["name"].split("/")[:3]
            key = (label, way, int(size))
            seconds = b["real_time"] * UNIT[b["time_unit"]]
            if key not in best or seconds < best[key][0]:
                best[key] = (seconds, b.get("bound_s", 0))
    out = {}
    for (label, way, size), (seconds, bound) in best.items():
        out.setdefault(label, {}).setdefault(way, []).append((size, size / seconds, size / bound if bound > 0 else None))
    for ways in out.values():
        for points in ways.values():
            points.sort()
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("json", nargs="+")
    ap.add_argument("-o", "--output", default="bench_sweep.png")
    args = ap.parse_args()
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    data = series(args.json)
    fig, axes = plt.subplots(1, len(data), figsize=(5 * len(data), 4), squeeze=False)
    for ax, (label, ways) in zip(axes[0], sorted(data.items())):
        for way, points in sorted(ways.items(), key=lambda w: w[0] != "meshcast"):
            ax.plot([p[0] for p in points], [p[1] / 1e6 for p in points], marker="o", label=way)
        bound = [(p[0], p[2]) for p in ways.get("meshcast", []) if p[2]]
        if bound:
            ax.plot([p[0] for p in bound], [p[1] / 1e6 for p in bound], linestyle="--", color="gray", label="physical bound")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_title(label)
        ax.set_xlabel("tensor bytes")
        ax.set_ylabel("algbw (MB/s)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(args.output, dpi=110)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()

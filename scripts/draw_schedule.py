#!/usr/bin/env python3
"""Draws a reshard's schedule as an SVG timeline, one row per host NIC direction.

Reads the JSON that `meshcast-plan --json` prints when it makes a schedule (a --solver, --strategy,
--mode or --trace flag): the ops are under "schedule" (or at the top level, "ops"), each with
"sender", "receivers", "bytes", "start_s", "end_s", "egress_hosts", "ingress_hosts" and, for a
chain, "holds" (one {"host", "dir", "start_s", "end_s"} per NIC direction it uses, which replaces
the op's whole interval for that direction). Each op is drawn as a bar on every NIC direction it
uses, coloured by its sender device. Ops that cross no NIC (local copies) are left out. Where ops
overlap on one direction (concurrent mode), the row splits into lanes.

  meshcast-plan --shape 1024x512 --src-mesh 2x4 --src-spec S0,R --dst-mesh 3x4 --dst-spec R,S01 \\
      --strategy auto --json > plan.json
  python3 scripts/draw_schedule.py plan.json -o docs/reshard.svg

Python 3 standard library only.
"""
import argparse
import colorsys
import json
import math
import sys
from xml.sax.saxutils import escape

LEFT = 120          # room for row labels
RIGHT = 70          # room for the makespan's label
TOP = 58            # title and subtitle
LANE_H = 18
ROW_GAP = 6
AXIS_H = 34
LEGEND_ROW_H = 18
WIDTH = 900


def load(path):
    text = sys.stdin.read() if path == "-" else open(path, encoding="utf-8").read()
    try:
        doc = json.loads(text)
    except ValueError as e:
        raise SystemExit("draw_schedule: %s is not JSON (%s)" % (path, e))
    sched = doc.get("schedule", doc) if isinstance(doc, dict) else {}
    if "ops" not in sched:
        raise SystemExit("draw_schedule: no ops in the input: run meshcast-plan with --strategy or --solver and --json")
    return doc, sched


def default_title(doc, sched):
    parts = []
    if "shape" in doc and "src" in doc and "dst" in doc:
        shape = "x".join(str(x) for x in doc["shape"])
        host_of = doc.get("host_of", [])

        def side(name):
            text = "mesh %s %s" % ("x".join(str(x) for x in doc[name]["mesh"]), doc[name]["spec"])
            hosts = sorted(set(host_of[d] for d in doc[name].get("devices", []) if d < len(host_of)))
            if hosts:
                text += " (host%s %s)" % ("s" if len(hosts) > 1 else "", span(hosts))
            return text
        parts.append("%s tensor, %s-byte elements: %s -> %s" % (
            shape, doc.get("element_bytes", "?"), side("src"), side("dst")))
    return "; ".join(parts) or "meshcast schedule"


def span(values):
    """'2-4' for a run of consecutive integers, else '0,2,5'."""
    if values == list(range(values[0], values[-1] + 1)) and len(values) > 1:
        return "%d-%d" % (values[0], values[-1])
    return ",".join(str(v) for v in values)


def subtitle(doc, sched):
    bits = []
    for key, name in (("solver", "solver"), ("strategy", "strategy"), ("mode", "mode")):
        if key in sched:
            bits.append("%s %s" % (name, sched[key]))
    if "makespan_s" in sched:
        bits.append("makespan %s" % fmt_time(sched["makespan_s"]))
    if sched.get("physical_bound_s"):
        bits.append("physical bound %s" % fmt_time(sched["physical_bound_s"]))
    bits.append("%d ops" % len(sched["ops"]))
    return ", ".join(bits)


def fmt_time(t):
    if t == 0:
        return "0"
    a = abs(t)
    if a >= 1:
        return "%.4g s" % t
    if a >= 1e-3:
        return "%.4g ms" % (t * 1e3)
    return "%.4g us" % (t * 1e6)


def nice_step(span, target=8):
    raw = span / target
    mag = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 2.5, 5, 10):
        if raw <= m * mag:
            return m * mag
    return 10 * mag


def tick_label(t, step):
    if step >= 1:
        unit, scale = "s", 1
    elif step >= 1e-3:
        unit, scale = "ms", 1e3
    else:
        unit, scale = "us", 1e6
    v = t * scale
    s = ("%.3f" % v).rstrip("0").rstrip(".")
    return s, unit


def colour(i, n):
    h = (i * 0.618033988749895) % 1.0 if n > 12 else i / max(n, 1)
    r, g, b = colorsys.hls_to_rgb(h, 0.55, 0.65)
    return "#%02x%02x%02x" % (int(r * 255), int(g * 255), int(b * 255))


def bars_of(sched):
    """(host, dir) -> list of (start, end, op index)."""
    rows = {}
    for k, op in enumerate(sched["ops"]):
        held = {}
        for h in op.get("holds", []):
            held.setdefault((h["host"], h["dir"]), []).append((h["start_s"], h["end_s"]))
        for direction, hosts in (("egress", op.get("egress_hosts", [])), ("ingress", op.get("ingress_hosts", []))):
            for host in hosts:
                spans = held.get((host, direction), [(op["start_s"], op["end_s"])])
                for a, b in spans:
                    rows.setdefault((host, direction), []).append((a, b, k))
        for (host, direction), spans in held.items():  # a hold on a direction the lists left out
            if host not in op.get(direction + "_hosts", []):
                for a, b in spans:
                    rows.setdefault((host, direction), []).append((a, b, k))
    return rows


def lanes(bars):
    """Packs bars into lanes so that none overlaps another in its lane; returns (lane per bar, count)."""
    order = sorted(range(len(bars)), key=lambda i: (bars[i][0], bars[i][1]))
    ends, lane = [], [0] * len(bars)
    eps = 1e-15
    for i in order:
        a, b, _ = bars[i]
        for j, e in enumerate(ends):
            if e <= a + eps:
                lane[i], ends[j] = j, b
                break
        else:
            lane[i] = len(ends)
            ends.append(b)
    return lane, max(1, len(ends))


def draw(doc, sched, title):
    ops = sched["ops"]
    rows = bars_of(sched)
    hosts = set(h for h, _ in rows)
    if "host_of" in doc:
        hosts |= set(doc["host_of"])
    keys = [(h, d) for h in sorted(hosts) for d in ("egress", "ingress")]
    senders = sorted(set(ops[k]["sender"] for bars in rows.values() for _, _, k in bars))
    colours = {s: colour(i, len(senders)) for i, s in enumerate(senders)}
    end = max([b for bars in rows.values() for _, b, _ in bars] + [sched.get("makespan_s", 0), 1e-12])
    step = nice_step(end)
    t_max = math.ceil(end / step - 1e-9) * step
    plot_w = WIDTH - LEFT - RIGHT
    x = lambda t: LEFT + plot_w * t / t_max

    layout, y = [], TOP
    for key in keys:
        bars = rows.get(key, [])
        lane, n = lanes(bars) if bars else ([], 1)
        layout.append((key, bars, lane, n, y))
        y += n * LANE_H + ROW_GAP
    plot_bottom = y
    per_line = max(1, (WIDTH - LEFT) // 70)
    legend_rows = math.ceil(len(senders) / per_line)
    height = plot_bottom + AXIS_H + legend_rows * LEGEND_ROW_H + 10

    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" '
           'font-family="DejaVu Sans, Arial, sans-serif" font-size="11">' % (WIDTH, height, WIDTH, height),
           '<rect width="100%" height="100%" fill="white"/>',
           '<text x="%d" y="20" font-size="14" font-weight="bold">%s</text>' % (LEFT // 4, escape(title)),
           '<text x="%d" y="38" fill="#444">%s</text>' % (LEFT // 4, escape(subtitle(doc, sched)))]
    # grid and axis
    t = 0.0
    while t <= t_max + step / 2:
        xt = x(t)
        out.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/>' % (xt, TOP - 4, xt, plot_bottom))
        v, unit = tick_label(t, step)
        out.append('<text x="%.1f" y="%d" text-anchor="middle">%s</text>' % (xt, plot_bottom + 14, v))
        t += step
    out.append('<text x="%d" y="%d" text-anchor="middle" fill="#444">time (%s)</text>' % (
        LEFT + plot_w // 2, plot_bottom + 28, tick_label(step, step)[1]))
    # rows
    for (host, direction), bars, lane, n, y0 in layout:
        h = n * LANE_H
        out.append('<rect x="%d" y="%d" width="%d" height="%d" fill="%s"/>' % (
            LEFT, y0, plot_w, h, "#f6f6f6" if direction == "egress" else "#fbfbfb"))
        out.append('<text x="%d" y="%.1f" text-anchor="end">host %d %s</text>' % (
            LEFT - 6, y0 + h / 2 + 4, host, direction))
        for i, (a, b, k) in enumerate(bars):
            op = ops[k]
            x0, x1 = x(a), x(b)
            tip = "%s: task %s, device %d -> %s, %d bytes, %s to %s" % (
                op.get("kind", "op"), op.get("task", "?"), op["sender"],
                ",".join(str(r) for r in op["receivers"]), op["bytes"], fmt_time(a), fmt_time(b))
            out.append('<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s" stroke="white" stroke-width="0.5">'
                       '<title>%s</title></rect>' % (
                           x0, y0 + lane[i] * LANE_H + 1, max(x1 - x0, 0.8), LANE_H - 2, colours[op["sender"]],
                           escape(tip)))
            if x1 - x0 > (34 if len(op["receivers"]) == 1 else 60):
                label = "%d\u2192%s" % (op["sender"], op["receivers"][0] if len(op["receivers"]) == 1 else
                                        "%d devices" % len(op["receivers"]))
                out.append('<text x="%.1f" y="%d" text-anchor="middle" font-size="9" fill="white">%s</text>' % (
                    (x0 + x1) / 2, y0 + lane[i] * LANE_H + LANE_H - 6, escape(label)))
    for name, key, dash in (("makespan", "makespan_s", "6,3"), ("bound", "physical_bound_s", "2,3")):
        if sched.get(key):
            xt = x(sched[key])
            out.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#333" stroke-dasharray="%s"/>' % (
                xt, TOP - 8, xt, plot_bottom, dash))
            anchor = "end" if name == "bound" else "start"
            dx = -3 if name == "bound" else 3
            out.append('<text x="%.1f" y="%d" text-anchor="%s" font-size="10" fill="#333">%s</text>' % (
                xt + dx, TOP - 8, anchor, name))
    # legend: one swatch per sender device
    ly = plot_bottom + AXIS_H + 4
    out.append('<text x="%d" y="%d" text-anchor="end">sender</text>' % (LEFT - 6, ly + 10))
    for i, s in enumerate(senders):
        lx = LEFT + (i % per_line) * 70
        yy = ly + (i // per_line) * LEGEND_ROW_H
        out.append('<rect x="%d" y="%d" width="12" height="12" fill="%s"/>' % (lx, yy, colours[s]))
        out.append('<text x="%d" y="%d">device %d</text>' % (lx + 16, yy + 10, s))
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("input", help="meshcast-plan --json output with a schedule ('-' for stdin)")
    ap.add_argument("-o", "--output", default="-", help="SVG file to write (default stdout)")
    ap.add_argument("--title", help="title line (default: the tensor and its two layouts)")
    args = ap.parse_args()
    doc, sched = load(args.input)
    svg = draw(doc, sched, args.title or default_title(doc, sched))
    if args.output == "-":
        sys.stdout.write(svg)
    else:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(svg)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""manifests.py: writes meshcast manifests shaped like real models' weights (include/meshcast/manifest.hpp).

    manifests.py MODEL [--scale K] [--layers N] [--train-mesh 4x8] [--infer-mesh 2x8]
                 [--devices-per-host 8] [--stages S] [--dtype-bytes 2] [-o FILE]

MODEL: llama3-8b, llama3-70b, moe (a mixture of experts: experts stacked in one tensor per layer,
expert-parallel in training) or pp (llama3-8b trained over S pipeline stages, each stage's layers
on its own mesh). Every hidden size is divided by --scale (1: the real model) and --layers keeps
the first N layers (default: all), so that a manifest fits the emulated cluster's NICs.

Layouts. Training (mesh DxT: FSDP over axis 0, tensor parallel over axis 1, Megatron style):
column-parallel weights ([out, in]: wq, wk, wv, w1, w3, embeddings, output) S01,R; row-parallel
ones (wo, w2) S0,S1; norms S0. Inference (mesh RxT: R replicas of an engine, tensor parallel T
inside it): column-parallel S1,R, row-parallel R,S1, norms R. MoE experts [E, out, in]: training
S0,S1,R (experts over axis 0, the weight over axis 1); inference S1,R,R (experts spread over the
engine), a router [E, hidden] S0,R -> R,R. With --expert-tensors, each expert's w1, w3 and w2 are
tensors of their own (as checkpoints store them: thousands of tensors), each on the training mesh
row that holds its expert (a 1xT mesh, the weight over its T devices) and replicated over the
inference devices of its tensor-parallel rank (an Rx1 mesh). Devices: the trainer's 0..D*T-1, the inference mesh
right after; with pp, stage s holds layers [s*L/S, (s+1)*L/S) on devices s*D*T/S.. of a mesh of
(D/S)xT... (the trainer's mesh split along axis 0).
"""
import argparse
import json
import sys

MODELS = {
    # hidden, intermediate, kv dim, vocab, layers
    "llama3-8b": (4096, 14336, 1024, 128256, 32),
    "llama3-70b": (8192, 28672, 1024, 128256, 80),
}


def extents(text):
    return [int(x) for x in text.split("x")]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model", choices=["llama3-8b", "llama3-70b", "moe", "pp"])
    ap.add_argument("--scale", type=int, default=1)
    ap.add_argument("--layers", type=int, default=0)
    ap.add_argument("--train-mesh", default="4x8")
    ap.add_argument("--infer-mesh", default="2x8")
    ap.add_argument("--devices-per-host", type=int, default=8)
    ap.add_argument("--stages", type=int, default=2)
    ap.add_argument("--experts", type=int, default=16)
    ap.add_argument("--expert-tensors", action="store_true",
                    help="moe: one tensor per expert and weight instead of one per layer")
    ap.add_argument("--dtype-bytes", type=int, default=2)
    ap.add_argument("-o", "--output", default="-")
    a = ap.parse_args()
    base = "llama3-8b" if a.model in ("moe", "pp") else a.model
    hidden, inter, kv, vocab, layers = MODELS[base]
    hidden, inter, kv, vocab = (max(1, x // a.scale) for x in (hidden, inter, kv, vocab))
    if a.model == "moe":
        inter = max(1, inter // 4)  # experts are narrower than a dense MLP
    layers = min(layers, a.layers) if a.layers else layers
    train, infer = extents(a.train_mesh), extents(a.infer_mesh)
    n_train = train[0] * train[1]
    tensors = []

    def add(name, shape, src, dst, src_override=None):
        t = {"name": name, "shape": shape, "dtype_bytes": a.dtype_bytes, "src_spec": src, "dst_spec": dst}
        if src_override:
            t["src"] = src_override
        tensors.append(t)

    def stage_of(layer):
        if a.model != "pp":
            return None
        s = layer * a.stages // max(1, layers)
        rows = train[0] // a.stages
        per = rows * train[1]
        return {"mesh": f"{rows}x{train[1]}", "devices": list(range(s * per, (s + 1) * per))}

    first = stage_of(0)
    last = stage_of(layers - 1) if layers else None
    add("tok_embeddings.weight", [vocab, hidden], "S01,R", "S1,R", first)
    for i in range(layers):
        st = stage_of(i)
        p = f"layers.{i}."
        add(p + "attention.wq.weight", [hidden, hidden], "S01,R", "S1,R", st)
        add(p + "attention.wk.weight", [kv, hidden], "S01,R", "S1,R", st)
        add(p + "attention.wv.weight", [kv, hidden], "S01,R", "S1,R", st)
        add(p + "attention.wo.weight", [hidden, hidden], "S0,S1", "R,S1", st)
        if a.model == "moe":
            add(p + "feed_forward.router.weight", [a.experts, hidden], "S0,R", "R,R", st)
        if a.model == "moe" and a.expert_tensors:
            for e in range(a.experts):
                row = e * train[0] // a.experts
                rank = e * infer[1] // a.experts
                src = {"mesh": f"1x{train[1]}", "devices": list(range(row * train[1], (row + 1) * train[1]))}
                dst = {"mesh": f"{infer[0]}x1", "devices": [n_train + r * infer[1] + rank for r in range(infer[0])]}
                q = p + f"feed_forward.experts.{e}."
                for w, shape, spec in (("w1", [inter, hidden], "S1,R"), ("w3", [inter, hidden], "S1,R"),
                                       ("w2", [hidden, inter], "R,S1")):
                    add(q + w + ".weight", shape, spec, "R,R", src)
                    tensors[-1]["dst"] = dst
        elif a.model == "moe":
            add(p + "feed_forward.experts.w1", [a.experts, inter, hidden], "S0,S1,R", "S1,R,R", st)
            add(p + "feed_forward.experts.w3", [a.experts, inter, hidden], "S0,S1,R", "S1,R,R", st)
            add(p + "feed_forward.experts.w2", [a.experts, hidden, inter], "S0,R,S1", "S1,R,R", st)
        else:
            add(p + "feed_forward.w1.weight", [inter, hidden], "S01,R", "S1,R", st)
            add(p + "feed_forward.w3.weight", [inter, hidden], "S01,R", "S1,R", st)
            add(p + "feed_forward.w2.weight", [hidden, inter], "S0,S1", "R,S1", st)
        add(p + "attention_norm.weight", [hidden], "S0", "R", st)
        add(p + "ffn_norm.weight", [hidden], "S0", "R", st)
    add("norm.weight", [hidden], "S0", "R", last)
    add("output.weight", [vocab, hidden], "S01,R", "S1,R", last)
    if a.model == "pp":  # per-stage meshes: the stage's mesh shape differs from the default
        for t in tensors:
            if "src" not in t:
                t["src"] = first
    manifest = {"devices_per_host": a.devices_per_host,
                "src": {"mesh": a.train_mesh},
                "dst": {"mesh": a.infer_mesh, "devices": list(range(n_train, n_train + infer[0] * infer[1]))},
                "tensors": tensors}
    text = json.dumps(manifest, indent=None, separators=(",", ":")) + "\n"
    (sys.stdout if a.output == "-" else open(a.output, "w")).write(text)


if __name__ == "__main__":
    main()

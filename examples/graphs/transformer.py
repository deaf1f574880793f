#!/usr/bin/env python3
"""Writes a transformer graph for meshcast-autoshard as JSON: LAYERS layers of attention (as
matmuls, reshapes to heads, transposes, softmax) and MLP, each behind a layernorm and a residual
add; x [batch, seq, model] fixed replicated, y unconstrained.

Usage: transformer.py [--layers 24] [--batch 8] [--seq 512] [--model 1024] [--heads 16]
                      [--ffn 4096] [--training] [--element-bytes 4] > graph.json
(examples/graphs/transformer_block.json is --layers 1 --batch 8 --seq 512 --training.)
"""
import argparse
import json
import sys


def layer(g, p, inp, out, a):
    dh = a.model // a.heads
    ops = g["ops"]
    for w in ("wq", "wk", "wv", "wo"):
        g["tensors"][p + w] = {"shape": [a.model, a.model], "parameter": True}
    g["tensors"][p + "w1"] = {"shape": [a.model, a.ffn], "parameter": True}
    g["tensors"][p + "w2"] = {"shape": [a.ffn, a.model], "parameter": True}
    ops.append({"name": p + "ln1", "type": "layernorm", "inputs": [inp], "output": p + "n1", "axis": -1})
    for x in ("q", "k", "v"):
        ops.append({"name": p + x + "_proj", "type": "matmul", "inputs": [p + "n1", p + "w" + x], "output": p + x})
        ops.append({"name": p + x + "_heads", "type": "reshape", "inputs": [p + x], "output": p + x + "h",
                    "shape": [a.batch, a.seq, a.heads, dh]})
        ops.append({"name": p + x + "_t", "type": "transpose", "inputs": [p + x + "h"], "output": p + x + "t",
                    "perm": [0, 2, 3, 1] if x == "k" else [0, 2, 1, 3]})
    ops.append({"name": p + "scores", "type": "matmul", "inputs": [p + "qt", p + "kt"], "output": p + "s"})
    ops.append({"name": p + "scale", "type": "scale", "inputs": [p + "s"], "output": p + "ss"})
    ops.append({"name": p + "softmax", "type": "softmax", "inputs": [p + "ss"], "output": p + "pr", "axis": -1})
    ops.append({"name": p + "context", "type": "matmul", "inputs": [p + "pr", p + "vt"], "output": p + "c"})
    ops.append({"name": p + "c_t", "type": "transpose", "inputs": [p + "c"], "output": p + "ct", "perm": [0, 2, 1, 3]})
    ops.append({"name": p + "c_merge", "type": "reshape", "inputs": [p + "ct"], "output": p + "cm",
                "shape": [a.batch, a.seq, a.model]})
    ops.append({"name": p + "o_proj", "type": "matmul", "inputs": [p + "cm", p + "wo"], "output": p + "o"})
    ops.append({"name": p + "res1", "type": "add", "inputs": [inp, p + "o"], "output": p + "r1"})
    ops.append({"name": p + "ln2", "type": "layernorm", "inputs": [p + "r1"], "output": p + "n2", "axis": -1})
    ops.append({"name": p + "fc1", "type": "matmul", "inputs": [p + "n2", p + "w1"], "output": p + "h"})
    ops.append({"name": p + "act", "type": "gelu", "inputs": [p + "h"], "output": p + "a"})
    ops.append({"name": p + "fc2", "type": "matmul", "inputs": [p + "a", p + "w2"], "output": p + "m"})
    ops.append({"name": p + "res2", "type": "add", "inputs": [p + "r1", p + "m"], "output": out})


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", type=int, default=24)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=512)
    ap.add_argument("--model", type=int, default=1024)
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--ffn", type=int, default=4096)
    ap.add_argument("--training", action="store_true")
    ap.add_argument("--element-bytes", type=int, default=4)
    a = ap.parse_args()
    if a.layers < 1 or a.model % a.heads:
        sys.exit("need --layers >= 1 and --model divisible by --heads")
    g = {"element_bytes": a.element_bytes, "training": a.training,
         "tensors": {"x": {"shape": [a.batch, a.seq, a.model], "spec": "R,R,R"}}, "ops": [], "outputs": {}}
    inp = "x"
    for i in range(a.layers):
        out = "y" if i + 1 == a.layers else f"x{i + 1}"
        layer(g, f"l{i}.", inp, out, a)
        inp = out
    g["outputs"] = {"y": None}
    json.dump(g, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()

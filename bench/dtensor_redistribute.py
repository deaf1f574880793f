#!/usr/bin/env python3
"""PyTorch DTensor `redistribute` on CPU over gloo, timed like meshcast-reshard, one process per rank.

Started by an MPI launcher (rank and size from PMI_RANK / PMI_SIZE, as hydra sets them) or with
RANK / WORLD_SIZE; MASTER_ADDR / MASTER_PORT name rank 0's host (bench/dtensor_vs_meshcast.sh sets
them). Every rank builds its source shard of a float32 tensor whose element i (row-major) holds i,
redistributes it, and checks its destination shard.

  dtensor_redistribute.py --mesh 4x2 --src S0,S1 --dst S1,S0 --shape 4096x4096 --repeat 5

--src / --dst are meshcast specs (one entry per tensor dim: R, or S<mesh axis>); they become
DTensor placements (one per mesh dim: Shard(tensor dim) or Replicate()). Each repeat: barrier,
redistribute + to_local() waited and made contiguous, barrier; the best time is printed by rank 0:

  dtensor: mesh 4x2 S0,S1 -> S1,S0 shape 4096x4096 float32: best 0.123456 s over 5 (all 0.2 ...), correct
"""
import argparse
import os
import sys
import time

import torch
import torch.distributed as dist


def placements(spec, mesh_dims):
    from torch.distributed.tensor import Replicate, Shard
    out = [Replicate()] * mesh_dims
    for tensor_dim, entry in enumerate(spec.split(",")):
        if entry == "R":
            continue
        if not entry.startswith("S") or len(entry) != 2:
            raise SystemExit(f"spec entry '{entry}': one mesh axis per tensor dim (S0, S1, ...) or R")
        axis = int(entry[1])
        out[axis] = Shard(tensor_dim)
    return out


def expected_shard(shape, spec, mesh, coord):
    """The destination shard as torch.chunk cuts it (meshcast's chunk rule), values = global index."""
    idx = [slice(None)] * len(shape)
    for tensor_dim, entry in enumerate(spec.split(",")):
        if entry == "R":
            continue
        axis = int(entry[1])
        n, k = shape[tensor_dim], mesh[axis]
        q = -(-n // k)
        lo = min(coord[axis] * q, n)
        hi = min(lo + q, n)
        idx[tensor_dim] = slice(lo, hi)
    return idx


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mesh", required=True)
    ap.add_argument("--src", required=True)
    ap.add_argument("--dst", required=True)
    ap.add_argument("--shape", default="4096x4096")
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    rank = int(os.environ.get("PMI_RANK", os.environ.get("RANK", "0")))
    size = int(os.environ.get("PMI_SIZE", os.environ.get("WORLD_SIZE", "1")))
    os.environ.setdefault("MASTER_PORT", "29511")
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=size, init_method="env://")
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import DTensor

    mesh_shape = tuple(int(x) for x in a.mesh.split("x"))
    shape = tuple(int(x) for x in a.shape.split("x"))
    mesh = init_device_mesh("cpu", mesh_shape)
    coord = mesh.get_coordinate()
    strides = [1] * len(shape)
    for d in range(len(shape) - 2, -1, -1):
        strides[d] = strides[d + 1] * shape[d + 1]

    def shard_values(spec):
        sl = expected_shard(shape, spec, mesh_shape, coord)
        ranges = []
        for d, s in enumerate(sl):
            lo, hi, _ = s.indices(shape[d])
            ranges.append(torch.arange(lo, hi, dtype=torch.float64) * strides[d])
        v = ranges[0]
        for r in ranges[1:]:
            v = v.unsqueeze(-1) + r
        return v.to(torch.float32)  # exact: indices < 2^24 for 4096x4096

    src_local = shard_values(a.src)
    src = DTensor.from_local(src_local, mesh, placements(a.src, len(mesh_shape)), run_check=False,
                             shape=torch.Size(shape), stride=tuple(strides))
    dst_placements = placements(a.dst, len(mesh_shape))
    times = []
    local = None
    for _ in range(a.repeat):
        dist.barrier()
        t0 = time.perf_counter()
        out = src.redistribute(mesh, dst_placements)
        local = out.to_local()
        if hasattr(local, "wait"):
            local = local.wait()
        local = local.contiguous()
        dist.barrier()
        times.append(time.perf_counter() - t0)
    comms = ""
    try:  # which collectives DTensor chose (one more, untimed run)
        from torch.distributed.tensor.debug import CommDebugMode
        with CommDebugMode() as debug:
            out = src.redistribute(mesh, dst_placements)
            extra = out.to_local()
            if hasattr(extra, "wait"):
                extra.wait()
        comms = ", ".join(f"{getattr(op, '__name__', str(op)).split('.')[-1]} x{n}" for op, n in debug.get_comm_counts().items())
    except Exception as e:  # noqa: BLE001 - only a report
        comms = f"unknown ({type(e).__name__})"
    want = shard_values(a.dst)
    ok = torch.tensor([1 if (local.shape == want.shape and torch.equal(local, want)) else 0])
    dist.all_reduce(ok, op=dist.ReduceOp.MIN)
    if rank == 0:
        print(f"dtensor: mesh {a.mesh} {a.src} -> {a.dst} shape {a.shape} float32: best {min(times):.6f} s over "
              f"{a.repeat} (all {' '.join(f'{t:.3f}' for t in times)}); collectives: {comms}; "
              f"{'correct' if ok.item() else 'WRONG'}",
              flush=True)
    dist.destroy_process_group()
    return 0 if ok.item() else 1


if __name__ == "__main__":
    sys.exit(main())

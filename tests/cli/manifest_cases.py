"""Random manifests for check_manifest_cli.py, and what the check derives from one independently
of the library: each tensor's layouts resolved, its elements, and the busiest-NIC bound."""
import itertools

from layout_oracle import parse_spec, tile


def extents(text):
    return [int(x) for x in text.split("x")]


def random_mesh(rng, devices):
    n = rng.randint(1, devices)
    shapes = [[n]] + [[a, n // a] for a in range(2, n) if n % a == 0]
    return "x".join(map(str, rng.choice(shapes)))


def random_spec(rng, mesh_rank, rank):
    axes = list(range(mesh_rank))
    rng.shuffle(axes)
    dims = [[] for _ in range(rank)]
    for a in axes:
        if rng.random() < 0.7:
            dims[rng.randrange(rank)].append(a)
    return ",".join("R" if not d else "S" + "".join(map(str, d)) for d in dims)


def random_manifest(rng, devices):
    """A manifest over exactly `devices` devices (the largest id is devices - 1)."""
    m = {"devices_per_host": rng.randint(1, 3)}
    same = rng.random() < 0.25
    src = random_mesh(rng, devices)
    ns = eval("*".join(src.split("x")))
    m["src"] = {"mesh": src}
    if rng.random() < 0.5:
        m["src"]["devices"] = rng.sample(range(devices), ns)
    if same:
        m["same_mesh"] = True
        m["src"]["devices"] = rng.sample(range(devices), ns)
        if devices - 1 not in m["src"]["devices"]:
            m["src"]["devices"][rng.randrange(ns)] = devices - 1
        m["dst"] = {"mesh": rng.choice([src, str(ns)])}
    else:
        dst = random_mesh(rng, devices)
        nd = eval("*".join(dst.split("x")))
        ids = rng.sample(range(devices), nd)
        if devices - 1 not in ids and (m["src"].get("devices") is None or devices - 1 not in m["src"]["devices"]):
            ids[rng.randrange(nd)] = devices - 1
        m["dst"] = {"mesh": dst, "devices": ids}
    tensors = []
    for k in range(rng.randint(1, 5)):
        rank = rng.randint(1, 3)
        shape = [rng.choice([0, 1, 2, 3, 5, 7, 8, 12]) if rng.random() < 0.15 else rng.randint(1, 12) for _ in range(rank)]
        t = {"name": f"t{k}.w", "shape": shape, "dtype_bytes": rng.choice([1, 2, 4, 8])}
        smesh, dmesh = m["src"]["mesh"], m["dst"]["mesh"]
        if not same and rng.random() < 0.3:
            smesh = random_mesh(rng, devices)
            t["src"] = {"mesh": smesh, "devices": rng.sample(range(devices), eval("*".join(smesh.split("x"))))}
        if not same and rng.random() < 0.3:
            dmesh = random_mesh(rng, devices)
            t["dst"] = {"mesh": dmesh, "devices": rng.sample(range(devices), eval("*".join(dmesh.split("x"))))}
        t["src_spec"] = random_spec(rng, len(extents(smesh)), rank)
        t["dst_spec"] = random_spec(rng, len(extents(dmesh)), rank)
        tensors.append(t)
    m["tensors"] = tensors
    return m


def resolved(m):
    """Per tensor: (shape, eb, src mesh, src spec, src ids, dst mesh, dst spec, dst ids), as the contract says."""
    def ids(obj, first):
        n = eval("*".join(obj["mesh"].split("x")))
        return obj.get("devices") or list(range(first, first + n))
    top_src = ids(m["src"], 0)
    top_dst = top_src if m.get("same_mesh") else ids(m["dst"], max(top_src) + 1)
    out = []
    for t in m["tensors"]:
        s = t.get("src", m["src"])
        sids = ids(s, 0) if "src" in t else top_src
        d = t.get("dst", m["dst"])
        if m.get("same_mesh"):
            dids = sids
        else:
            dids = ids(d, max(sids) + 1) if "dst" in t else top_dst
        out.append((t["shape"], t["dtype_bytes"], extents(s["mesh"]), parse_spec(t["src_spec"]), sids, extents(d["mesh"]),
                    parse_spec(t["dst_spec"]), dids))
    return out


def elements(box):
    return itertools.product(*[range(lo, hi) for lo, hi in box])


def bound(m, per_host, nic_gbps):
    """The busiest NIC direction, element by element (the contract's words)."""
    into, out = {}, {}
    for shape, eb, smesh, sspec, sids, dmesh, dspec, dids in resolved(m):
        holders, needers = {}, {}
        for pos, dev in enumerate(sids):
            for e in elements(tile(smesh, sspec, shape, pos)):
                holders.setdefault(e, set()).add(dev // per_host)
        for pos, dev in enumerate(dids):
            for e in elements(tile(dmesh, dspec, shape, pos)):
                needers.setdefault(e, set()).add(dev // per_host)
        for e, hosts in needers.items():
            have = holders.get(e, set())
            for h in hosts - have:
                into[h] = into.get(h, 0) + eb
            if len(have) == 1 and hosts - have:
                (h,) = have
                out[h] = out.get(h, 0) + eb
    busiest = max(list(into.values()) + list(out.values()) + [0])
    return busiest * 8 / (nic_gbps * 1e9)

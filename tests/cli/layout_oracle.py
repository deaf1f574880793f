"""Where elements live, stated independently of the library: the chunk rule and spec strings."""


def parse_spec(text):
    return [[] if t == "R" else [int(c) for c in t[1:]] for t in text.split(",")]


def tile(mesh, spec, shape, dev):
    coord = []
    for size in reversed(mesh):
        coord.append(dev % size)
        dev //= size
    coord.reverse()
    box = []
    for d, n in enumerate(shape):
        k, j = 1, 0
        for a in spec[d]:
            k *= mesh[a]
            j = j * mesh[a] + coord[a]
        q = -(-n // k)
        box.append((min(j * q, n), min((j + 1) * q, n)))
    return box

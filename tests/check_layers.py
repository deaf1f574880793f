#!/usr/bin/env python3
"""The layered tree of include/meshcast (docs/layering.md), checked.

1. Every header in a layer folder includes only headers of its own layer or of layers below it,
   by relative path; never a top-level header (an entry point or a forwarding header).
   Layers, bottom up: core, layout, plan, model, schedule, exec, api; pipeline and autoshard
   both sit on api and do not include each other.
2. include/meshcast itself (and its old subfolders) holds only the public entry points and
   forwarding headers, each of which includes one header.
3. No header is longer than 400 lines (single_include/, generated, is not checked).
   One helper each: only core/detail/checked.hpp calls a compiler's overflow builtin (the one
   checked arithmetic), and only model/op.hpp knows how resources are numbered (no `2 * ...ports`
   elsewhere: ask resource_space's is_egress, is_ingress, port_of, port_directions).
4. With --compile CXX [FLAGS...]: every layered header and entry point compiles on its own
   (forwarding headers are one include of a layered header; g++ -fsyntax-only on a file
   that includes only it), two at a time; <meshcast/mpi.hpp> and the umbrella pull in none of
   the standard headers they do not need (LEAN_ENTRY_POINTS, read from the compiler's -H listing);
   and in compiled mode <meshcast/mpi.hpp> and <meshcast/nccl.hpp> pull in no header whose code
   their library holds (COMPILED_ENTRY_POINTS, NOT_IN_COMPILED).

Usage: check_layers.py INCLUDE_DIR [--compile CXX FLAG...]
Exit 0 when every check holds; else 1, one line per fault.
"""
import concurrent.futures
import os
import pathlib
import re
import subprocess
import sys
import tempfile

LAYERS = ["core", "layout", "plan", "model", "schedule", "exec", "api", "pipeline", "autoshard"]
RANK = {name: k for k, name in enumerate(LAYERS)}
RANK["autoshard"] = RANK["pipeline"]  # side by side on top
ENTRY_POINTS = {"meshcast.hpp", "mpi.hpp", "nccl.hpp", "pipeline.hpp", "autoshard.hpp", "solver/ilp.hpp",
                "benchmark.hpp"}
LOCAL = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
MAX_LINES = 400
# Helpers that exist once (docs/layering.md#habits): pattern -> (the one header allowed, the advice).
ONCE = [(re.compile(r"__builtin_(mul|add|sub)_overflow"), "an overflow builtin", "core/detail/checked.hpp",
         "use checked_mul/checked_add or product_fits/sum_fits/difference_fits (core/detail/checked.hpp)"),
        (re.compile(r"2\s*\*\s*(\w+\.)*ports\b"), "resource numbering (2 * ports)", "model/op.hpp",
         "ask resource_space (is_egress, is_ingress, port_of, port_directions) instead of its numbering")]
# Standard headers an entry point must not pull in (docs/performance.md#include-cost): the one
# call's program, and every includer of the umbrella, pays for every header it parses.
LEAN_ENTRY_POINTS = {"mpi.hpp": ("random", "thread", "ranges"), "meshcast.hpp": ("random", "thread", "ranges")}
# In compiled mode an entry point of a front end declares what its library defines: it may pull
# in no planner, solver, model engine or executor (docs/layering.md), or the compiled mode saves
# its includers nothing. Entry point -> (the switch, the headers it must not pull in).
COMPILED_ENTRY_POINTS = {"mpi.hpp": "MESHCAST_COMPILED", "nccl.hpp": "MESHCAST_COMPILED_NCCL"}
NOT_IN_COMPILED = re.compile(r"meshcast/(schedule/|exec/(?!backend/nccl_group_transfers\.hpp)|plan/plan\.hpp|"
                             r"model/(network|schedule|ordered_engine|simulate)\.hpp|api/front_end\.hpp|.*_impl\.hpp)")
# g++: "fatal error: mpi.h: No such file or directory"; clang: "fatal error: 'mpi.h' file not found"
MISSING = re.compile(r"fatal error: (?:'([^']+)' file not found|([^:]+): No such file or directory)")


def layer_of(rel):
    first = rel.split("/", 1)[0]
    return first if "/" in rel and first in RANK else None


def check_tree(root):
    faults = []
    headers = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.hpp"))
    for rel in headers:
        path = root / rel
        lines = path.read_text().splitlines()
        if len(lines) > MAX_LINES:
            faults.append(f"{rel}: {len(lines)} lines; a header holds one concept in at most {MAX_LINES}: split it")
        for pattern, name, owner, advice in ONCE:
            for number, line in enumerate(lines, 1):
                if rel != owner and pattern.search(line.split("//", 1)[0]):
                    faults.append(f"{rel}:{number}: {name} outside {owner}: {advice}")
        mine = layer_of(rel)
        includes = []
        for number, line in enumerate(lines, 1):
            m = LOCAL.match(line)
            if not m:
                continue
            target = os.path.normpath(os.path.join(os.path.dirname(rel), m.group(1)))
            includes.append(target)
            if not (root / target).is_file():
                faults.append(f"{rel}:{number}: includes \"{m.group(1)}\", which does not exist")
                continue
            if mine is None:
                continue
            theirs = layer_of(target)
            if theirs is None:
                faults.append(f"{rel}:{number}: a header in {mine}/ includes {target}, a top-level entry point or "
                              f"forwarding header; include the layered header itself")
            elif RANK[theirs] > RANK[mine] or (RANK[theirs] == RANK[mine] and theirs != mine):
                faults.append(f"{rel}:{number}: a header in {mine}/ includes {target} from {theirs}/, "
                              f"which is not below it (layers bottom up: {', '.join(LAYERS)})")
        if mine is None and rel not in ENTRY_POINTS:
            # A forwarding header: one include of a layered header, nothing else but comments.
            code = [l for l in lines if l.strip() and not l.strip().startswith("//") and l.strip() != "#pragma once"]
            if len(code) != 1 or not LOCAL.match(code[0]) or layer_of(includes[0] if includes else "") is None:
                faults.append(f"{rel}: a top-level header that is neither a public entry point nor a forwarding "
                              f"header (one #include of a layered header): move it into its layer")
    return headers, faults


def compile_alone(root, headers, command):
    def syntax_only(rel, flags):
        """Compiles a file that includes only <meshcast/rel>: (exit status, first error, the headers
        it included, from the -H listing)."""
        with tempfile.NamedTemporaryFile("w", suffix=".cpp", delete=False) as f:
            f.write(f"#include <meshcast/{rel}>\n")
            name = f.name
        try:
            r = subprocess.run(command + flags + ["-H", "-fsyntax-only", "-I", str(root.parent), name],
                               capture_output=True, text=True)
        finally:
            os.unlink(name)
        first = next((l for l in r.stderr.splitlines() if "error" in l), r.stderr.strip()[:300])
        included = {os.path.normpath(l.split(" ", 1)[1].strip()) for l in r.stderr.splitlines()
                    if l.startswith(".") and " " in l}
        return r.returncode, first, included

    def one(rel):
        status, first, included = syntax_only(rel, [])
        if status != 0:
            missing = MISSING.search(first)
            absent = (missing.group(1) or missing.group(2)) if missing else None
            if absent and not absent.startswith("meshcast/"):
                skipped.append(f"{rel} (needs <{absent}>)")
                return None
            return f"{rel}: does not compile on its own: {first}"
        if rel in LEAN_ENTRY_POINTS:
            pulled = {pathlib.PurePath(p).name for p in included}
            extra = [h for h in LEAN_ENTRY_POINTS[rel] if h in pulled]
            if extra:
                return f"{rel}: pulls in <{'>, <'.join(extra)}>, which nothing it holds needs"
        if rel in COMPILED_ENTRY_POINTS:
            return compiled_mode_lean(rel)
        return None

    def compiled_mode_lean(rel):
        switch = COMPILED_ENTRY_POINTS[rel]
        status, first, included = syntax_only(rel, [f"-D{switch}"])
        if status != 0:
            return f"{rel}: does not compile on its own under {switch}: {first}"
        pulled = sorted(p for p in included if NOT_IN_COMPILED.search(p))
        if pulled:
            shown = ", ".join(p.split("meshcast/", 1)[-1] for p in pulled[:4])
            return (f"{rel}: under {switch} pulls in {shown}"
                    f"{' and more' if len(pulled) > 4 else ''}, which its library defines: declare, do not include")
        return None

    skipped = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        faults = [f for f in pool.map(one, headers) if f]
    for s in skipped:
        print(f"skipped, a third-party header is missing here: {s}")
    return faults


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    root = pathlib.Path(argv[1]).resolve()
    if root.name != "meshcast":
        root = root / "meshcast"
    headers, faults = check_tree(root)
    if "--compile" in argv:
        command = argv[argv.index("--compile") + 1:]
        # A forwarding header is one include of a layered header, which is compiled itself.
        faults += compile_alone(root, [h for h in headers if layer_of(h) or h in ENTRY_POINTS], command)
    for f in faults:
        print(f)
    layered = sum(1 for h in headers if layer_of(h))
    print(f"check_layers: {len(headers)} headers ({layered} in layers, {len(headers) - layered} entry points and "
          f"forwarding headers)" + (", each compiled alone" if "--compile" in argv else "") +
          (f": {len(faults)} faults" if faults else ": every check holds"))
    return 1 if faults else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
